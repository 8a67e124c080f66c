package plan

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// awaitingPlan is the plan of an apt_update that runs, then a package no
// repository offers yet, whose version is known at apply: as the planner
// writes it, with the built-in types.
func awaitingPlan(t *testing.T) *Plan {
	t.Helper()
	reg := builtin.Registry()
	read := func(typ string, st *resources.State) (*Current, string) {
		tt, _ := reg.Lookup(typ)
		c := StoreCurrent(tt.Schema(), st, "ab", false)
		return c, c.Fingerprint()
	}
	upd, updFP := read("apt_update", &resources.State{Exists: true, Extra: map[string]string{"updated": "never"}})
	pkg, pkgFP := read("package", &resources.State{Values: map[string]cty.Value{}, Extra: map[string]string{"candidate:toque-late": "(none)", "searched": "(none)"}})
	return &Plan{FormatVersion: FormatVersion, ToqueVersion: "test", Salt: "ab", Host: Host{Hostname: "h", MachineID: "m"}, Attributes: []Attribute{},
		Resources: []*Resource{
			{Address: "apt_update[lists]", Type: "apt_update", Name: "lists", Action: "update", Kind: resources.Run,
				Desired: map[string]Value{"name": {Value: cty.StringVal("lists")}}, Current: upd, Fingerprint: updFP},
			{Address: "package[toque-late]", Type: "package", Name: "toque-late", Action: "install", Kind: resources.Create,
				Desired: map[string]Value{"package_name": {Value: cty.StringVal("toque-late")}}, Current: pkg, Fingerprint: pkgFP,
				Changes: []Change{{Property: "version"}}, Groups: []string{"version"},
				Awaits: []Await{{Property: "version", Namespace: resources.NamespaceAptSource, Value: "apt", What: "a repository that offers package toque-late"}}},
		}}
}

// TestReadChecksWhatAValueKnownAtApplyWaitsFor: a plan may defer a value
// its type knows only at apply only to an earlier resource of its own
// with work that meets the need (the planner's rule, resources.NeedMeeter);
// an edited plan that defers anything else is refused.
func TestReadChecksWhatAValueKnownAtApplyWaitsFor(t *testing.T) {
	cases := []struct {
		name string
		edit func(p *Plan)
		want string // "" for a plan Read accepts
	}{
		{"as planned", func(*Plan) {}, ""},
		{"nothing meets it", func(p *Plan) { p.Resources = p.Resources[1:] },
			"package[toque-late]: its version is known only at apply, once a repository that offers package toque-late, but no earlier resource of the plan with work provides that"},
		{"what meets it has no work", func(p *Plan) {
			p.Resources[0].Action, p.Resources[0].Kind = "periodic", resources.NoOp
		}, "no earlier resource of the plan with work provides that"},
		{"what meets it comes later", func(p *Plan) { p.Resources[0], p.Resources[1] = p.Resources[1], p.Resources[0] },
			"no earlier resource of the plan with work provides that"},
		{"a need of another kind", func(p *Plan) { p.Resources[1].Awaits[0].Namespace = resources.NamespaceUser },
			"no earlier resource of the plan with work provides that"},
		{"a value the recipe gives", func(p *Plan) {
			p.Resources[1].Desired["version"] = Value{Value: cty.StringVal("6.6.6")}
		}, `"version" has a value and a value known at apply`},
		{"a planned value", func(p *Plan) {
			p.Resources[1].Changes[0].Planned = &Value{Value: cty.StringVal("6.6.6")}
		}, `"version" has a planned value and is known at apply`},
		{"a property the plan does not change", func(p *Plan) { p.Resources[1].Changes = nil },
			`"version" is known at apply, but the plan does not change it`},
		{"a property the type does not have", func(p *Plan) { p.Resources[1].Awaits[0].Property = "content" },
			`a value known at apply for "content", which type "package" does not have`},
		{"a resource with no work", func(p *Plan) { p.Resources[1].Kind, p.Resources[1].Changes = resources.NoOp, nil },
			"a value known at apply of a resource that takes no action"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := awaitingPlan(t)
			c.edit(p)
			path := filepath.Join(t.TempDir(), "plan.out")
			if err := Write(path, p); err != nil {
				t.Fatal(err)
			}
			got, err := Read(path, builtin.Registry())
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(got.Resources[1].Awaits) != 1 {
					t.Fatalf("awaits lost: %+v", got.Resources[1])
				}
				return
			}
			if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInconsistent with %q", err, c.want)
			}
		})
	}
}

// TestMeetersOfNamesLateAndIdleOnes: what meets a need too late, or would
// meet it with work, is what the planner names when nothing earlier does.
func TestMeetersOfNamesLateAndIdleOnes(t *testing.T) {
	reg := builtin.Registry()
	p := awaitingPlan(t)
	pkg := p.Resources[1]
	if ms := p.MeetersOf(reg, pkg, pkg.Awaits[0]); len(ms) != 1 || ms[0].String() != "apt_update[lists] (action update)" {
		t.Errorf("meeters %v", ms)
	}
	p.Resources[0], p.Resources[1] = p.Resources[1], p.Resources[0]
	if ms := p.LaterMeetersOf(reg, pkg, pkg.Awaits[0]); len(ms) != 1 || ms[0].Address != "apt_update[lists]" || len(p.MeetersOf(reg, pkg, pkg.Awaits[0])) != 0 {
		t.Errorf("later %v", ms)
	}
	p = awaitingPlan(t)
	pkg = p.Resources[1]
	p.Resources[0].Action, p.Resources[0].Kind, p.Resources[0].StepReason = "periodic", resources.NoOp, "lists updated less than frequency ago"
	if ms := p.IdleMeetersOf(reg, pkg, pkg.Awaits[0]); len(ms) != 1 || ms[0].Reason != "lists updated less than frequency ago" {
		t.Errorf("idle %v", ms)
	}
}
