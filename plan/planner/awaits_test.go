package planner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// latePkg is a package no configured repository offers: its step installs
// a version known only once an earlier apt_update reads the lists of a
// repository the plan adds, as package's does (resources.Need.AtApply).
type latePkg struct{ s *resources.Schema }

func newLatePkg() *latePkg {
	return &latePkg{s: &resources.Schema{
		Name: "late_pkg",
		Properties: []*resources.Property{
			{Name: "package_name", Type: cty.String, NameProperty: true},
			{Name: "version", Type: cty.String},
		},
		Actions: []string{"install", "upgrade"}, DefaultAction: "install",
	}}
}

func (t *latePkg) Schema() *resources.Schema { return t.s }
func (t *latePkg) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return &resources.State{Values: map[string]cty.Value{}, Extra: map[string]string{"candidate:" + "x": "(none)"}}, nil
}
func (t *latePkg) Plan(_ string, d *resources.Resource, _ *resources.State) (*resources.Step, error) {
	name := d.String("package_name")
	return &resources.Step{Kind: resources.Create, Reason: name + " is not available now",
		Changes: []resources.Change{{Property: "version", Before: cty.NilVal, After: cty.UnknownVal(cty.String)}},
		Needs: []resources.Need{{Namespace: resources.NamespaceAptSource, Value: "apt", AtApply: true, Property: "version",
			What: "a repository that offers package " + name, Missing: name + " is not available from any configured repository (searched: none)"}},
	}, nil
}
func (t *latePkg) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *latePkg) converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return nil
}

// planLate plans recipe with the built-in types and late_pkg.
func planLate(t *testing.T, recipe string) (*plan.Plan, hcl.Diagnostics) {
	t.Helper()
	dir, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(strings.ReplaceAll(recipe, "ROOT", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 4)
	p.Registry = builtin.Registry().With(newLatePkg())
	cfg, diags := config.LoadDir(dir, p.Registry)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return p.Plan(context.Background(), cfg)
}

// TestPlanDefersAValueToAnEarlierStep: a package no repository offers is
// planned with its version known at apply when an earlier apt_update runs
// (its own action update, or notified immediately by what adds the
// repository); with none, or one declared after it, it is the need's
// Missing error, naming the later one.
func TestPlanDefersAValueToAnEarlierStep(t *testing.T) {
	const repo = `
file "ROOT/fixtures.list" {
  content = "deb file:/srv/repo ./\n"
  notifies "update" {
    resource = "apt_update[lists]"
    timing   = "immediately"
  }
}
`
	for _, tc := range []struct {
		name, recipe string
		deferred     bool
		meets        string   // what the resource waits for
		errs         []string // in the only diagnostic's detail
	}{
		{name: "notified immediately", recipe: repo + `
apt_update "lists" {
  action = "nothing"
}
late_pkg "toque-late" {}
`, deferred: true, meets: "apt_update[lists] (action update, notified by file["},
		{name: "update declared before", recipe: `
apt_update "lists" {
  action = "update"
}
late_pkg "toque-late" {}
`, deferred: true, meets: "apt_update[lists] (action update)"},
		{name: "nothing updates the lists", recipe: `
late_pkg "toque-late" {}
`, errs: []string{"toque-late is not available from any configured repository (searched: none)"}},
		{name: "the update is declared after", recipe: `
late_pkg "toque-late" {}
apt_update "lists" {
  action = "update"
}
`, errs: []string{"toque-late is not available", "apt_update[lists] (action update) would meet it, but converges after late_pkg[toque-late]"}},
		{name: "notified only delayed", recipe: strings.Replace(repo, "immediately", "delayed", 1) + `
apt_update "lists" {
  action = "nothing"
}
late_pkg "toque-late" {}
`, errs: []string{"apt_update[lists] (action update, notified by file[", "would meet it, but runs after late_pkg[toque-late]", "notify it immediately"}},
		{name: "several actions", recipe: `
apt_update "lists" {
  action = "update"
}
late_pkg "toque-late" {
  action = ["install", "upgrade"]
}
`, errs: []string{"toque-late is not available", "late_pkg[toque-late] takes several actions, and its version would be known only at apply"}},
		{name: "a notified run", recipe: `
apt_update "lists" {
  action = "update"
}
file "ROOT/trigger" {
  content = "x"
  notifies "install" {
    resource = "late_pkg[toque-late]"
    timing   = "immediately"
  }
}
late_pkg "toque-late" {
  action = "nothing"
}
`, errs: []string{"toque-late is not available", "The notified action install of late_pkg[toque-late] cannot wait for that at apply"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, diags := planLate(t, tc.recipe)
			var pkg *plan.Resource
			for _, r := range pl.Resources {
				if r.Address == "late_pkg[toque-late]" {
					pkg = r
				}
			}
			if pkg == nil {
				t.Fatalf("late_pkg not planned: %v", diags)
			}
			if !tc.deferred {
				if len(diags) != 1 || diags[0].Summary != "Missing a repository that offers package toque-late" || !pl.Errored {
					t.Fatalf("diagnostics %v (errored %v)", diags, pl.Errored)
				}
				for _, want := range tc.errs {
					if !strings.Contains(diags[0].Detail, want) {
						t.Errorf("detail lacks %q:\n%s", want, diags[0].Detail)
					}
				}
				if len(pkg.Awaits) != 0 {
					t.Errorf("deferred all the same: %+v", pkg.Awaits)
				}
				if _, err := json.Marshal(pl); err != nil {
					t.Errorf("the errored plan cannot be written: %v", err)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if len(pkg.Awaits) != 1 || pkg.Awaits[0].Property != "version" || pkg.Kind != resources.Create ||
				len(pkg.Changes) != 1 || pkg.Changes[0].Planned != nil {
				t.Fatalf("planned %+v", pkg)
			}
			reg := builtin.Registry().With(newLatePkg())
			ms := pl.MeetersOf(reg, pkg, pkg.Awaits[0])
			if len(ms) != 1 || !strings.HasPrefix(ms[0].String(), tc.meets) {
				t.Errorf("meets %v, want %s", ms, tc.meets)
			}
			s := pl.Show(reg, pkg)
			if len(s.Changes) != 1 || s.Changes[0].After != "(known at apply)" || !s.Changes[0].KnownAtApply {
				t.Errorf("shown %+v", s.Changes)
			}
			if got := pl.KnownAtApply(); len(got) != 1 || got[0] != "late_pkg[toque-late]" {
				t.Errorf("known at apply: %v", got)
			}
			if _, err := json.Marshal(pl); err != nil {
				t.Fatal(err)
			}
		})
	}
}
