package packages

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// TestPackageOptionsRefuseConfigurationItems: options that set apt's
// configuration items (-o, --option, -c, --config-file, in every form apt
// reads) are refused at validate, naming the option, unless the item is
// on the allow-list; so are the options that make apt do nothing.
func TestPackageOptionsRefuseConfigurationItems(t *testing.T) {
	p := newPackageType(nil).schema.Property("options")
	for _, c := range []struct {
		options cty.Value
		want    string // "" when accepted
	}{
		{str("-o APT::Get::Simulate=false"), `"-o APT::Get::Simulate=false" sets apt's configuration item APT::Get::Simulate`},
		{str("-oAPT::Get::Simulate=false"), `"-oAPT::Get::Simulate=false" sets apt's configuration item APT::Get::Simulate`},
		{str("-o=APT::Get::Simulate=true"), `configuration item APT::Get::Simulate`},
		{str("--option APT::Get::Simulate=true"), `"--option APT::Get::Simulate=true" sets`},
		{str("--option=APT::Get::Simulate=true"), `"--option=APT::Get::Simulate=true" sets`},
		{str("-yo APT::Get::Simulate=false"), `"-yo APT::Get::Simulate=false" sets`},
		{str("-qoAPT::Get::Simulate=false"), `"-qoAPT::Get::Simulate=false" sets`},
		{str("--OPTION=apt::get::simulate=false"), `configuration item apt::get::simulate`},
		{str("-o Debug::NoLocking=1"), `configuration item Debug::NoLocking`},
		{str("-o Dpkg::Options::=--force-confnew"), "set overwrite_config_files"},
		{str("-o DPkg::Lock::Timeout=1"), "set lock_timeout"},
		{str("-o APT::Install-Recommends"), "gives no value"},
		{str("-o APT::Install-Recommends=perhaps"), `"perhaps" is not a yes or no`},
		{str("-o Acquire::Retries=-1"), `"-1" is not a whole number`},
		{str("-o"), `"-o" gives no configuration item`},
		{str("-c /tmp/evil.conf"), `"-c /tmp/evil.conf" reads an apt configuration file`},
		{str("-c/tmp/evil.conf"), "reads an apt configuration file"},
		{str("-yc /tmp/evil.conf"), "reads an apt configuration file"},
		{str("--config-file /tmp/evil.conf"), "reads an apt configuration file"},
		{str("--config-file=/tmp/evil.conf"), "reads an apt configuration file"},
		{str("-s"), "would make apply do nothing"},
		{str("-ys"), "would make apply do nothing"},
		{str("-s=1"), "would make apply do nothing"},
		{str("--simulate=true"), "would make apply do nothing"},
		{str("--dry-run"), "would make apply do nothing"},
		{str("--no-act"), "would make apply do nothing"},
		{str("-d"), "would make apply do nothing"},
		{str("--download-only"), "would make apply do nothing"},
		{str("--print-uris"), "would make apply do nothing"},
		{str("-h"), "would make apply do nothing"},
		{str("--version"), "would make apply do nothing"},
		{str("--"), `"--" ends apt's options`},
		{str("--no-install-recommends nginx"), `"nginx" is not an option`},
		{cty.TupleVal([]cty.Value{str("-o"), str("APT::Get::Simulate=false")}), `"-o APT::Get::Simulate=false" sets`},

		{str("-o APT::Install-Recommends=0 --no-install-suggests"), ""},
		{str("-oAPT::Install-Recommends=false"), ""},
		{str("--option=apt::install-suggests=no"), ""},
		{str("-o Acquire::Retries=3"), ""},
		{str("-t bookworm-backports"), ""},
		{str("--target-release=bookworm-backports -q"), ""},
		{str("--no-download --no-upgrade"), ""},
	} {
		_, err := p.Normalize(c.options)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%#v: %v", c.options, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%#v: %v, want %q", c.options, err, c.want)
		}
	}
}

// rawOptions is a package resource whose options were not checked (a
// plan edited by hand, a check that missed a form): what toque's own
// command line and its read-back must hold against.
func (e *pkgEnv) rawOptions(name string, options ...string) *resources.Resource {
	return resources.NewResource(e.typ.schema, name, "install", map[string]cty.Value{
		"package_name": cty.StringVal(name),
		"options":      props.StringListVal(options),
	})
}

// TestPackageSimulationIsASimulation: the plan's apt-get -s cannot be
// turned into an install by an option: toque's own options come after
// the recipe's, and the last -s wins.
func TestPackageSimulationIsASimulation(t *testing.T) {
	e := newPkgEnv(t)
	for _, opts := range [][]string{{"-o", "APT::Get::Simulate=false"}, {"--no-simulate"}} {
		_, step := e.mustPlan(e.rawOptions("toque-fixture", opts...), resources.Create)
		if got := e.status("toque-fixture"); got != "" {
			t.Fatalf("options %v: the plan installed the package: %q (step %s)", opts, got, step.Reason)
		}
	}
}

// TestPackageReadBackAfterApt: apt that returns success without doing
// what the plan says (here told to simulate) fails the resource, saying
// what apt left.
func TestPackageReadBackAfterApt(t *testing.T) {
	e := newPkgEnv(t)
	r := e.rawOptions("toque-fixture", "-o", "APT::Get::Simulate=true")
	st, step := e.mustPlan(r, resources.Create)
	err := resources.ConvergeStep(context.Background(), e.typ, &resources.Env{Logger: hclog.NewNullLogger()}, r, st, step)
	if err == nil || !strings.Contains(err.Error(), "apt-get returned success, but it left toque-fixture not installed (the plan: installed 2.0)") {
		t.Fatalf("apply: %v", err)
	}
	if got := e.status("toque-fixture"); got != "" {
		t.Fatalf("status %q", got)
	}
	// And a removal apt did not carry out.
	e.root.Install(t, "toque-fixture=1.0")
	rm := resources.NewResource(e.typ.schema, "toque-fixture", "remove", map[string]cty.Value{
		"package_name": cty.StringVal("toque-fixture"), "options": props.StringListVal([]string{"-o", "APT::Get::Simulate=true"}),
	})
	st, step = e.mustPlan(rm, resources.Delete)
	err = resources.ConvergeStep(context.Background(), e.typ, &resources.Env{Logger: hclog.NewNullLogger()}, rm, st, step)
	if err == nil || !strings.Contains(err.Error(), "it left toque-fixture installed 1.0 (the plan: removed)") {
		t.Fatalf("remove: %v", err)
	}
}
