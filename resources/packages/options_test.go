package packages

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
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
