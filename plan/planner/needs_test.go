package planner_test

import (
	"context"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/resources"
)

// needyType creates things; its steps need and provide what its
// properties say.
type needyType struct{ s *resources.Schema }

func newNeedy() *needyType {
	return &needyType{s: &resources.Schema{
		Name: "needy",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true},
			{Name: "needs", Type: cty.List(cty.String), NonState: true},
			{Name: "provides", Type: cty.List(cty.String), NonState: true},
		},
		Actions: []string{"create"}, DefaultAction: "create",
	}}
}

func (t *needyType) Schema() *resources.Schema { return t.s }
func (t *needyType) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return resources.Absent(), nil
}
func (t *needyType) Plan(d *resources.Resource, _ *resources.State) (*resources.Step, error) {
	step := &resources.Step{Kind: resources.Create, Reason: "does not exist"}
	list := func(name string) []resources.Need {
		var out []resources.Need
		if v := d.Get(name); !v.IsNull() {
			for _, e := range v.AsValueSlice() {
				out = append(out, resources.Need{Namespace: resources.NamespacePath, Value: e.AsString(), What: "directory"})
			}
		}
		return out
	}
	step.Needs, step.Provides = list("needs"), list("provides")
	return step, nil
}
func (t *needyType) Converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return nil
}

func TestPlanRefusesUnmetNeeds(t *testing.T) {
	typ := newNeedy()
	inst := func(name string, line int, needs, provides []string) *eval.Instance {
		return instOf(typ, name, line, needs, provides)
	}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 4)
	p.Registry = resources.NewRegistry(typ)
	pl, diags := p.PlanInstances(context.Background(), []*eval.Instance{
		inst("late", 1, []string{"/srv"}, nil),       // needs /srv before anything made it
		inst("maker", 2, nil, []string{"/srv", "/"}), // makes it
		inst("early", 3, []string{"/srv"}, nil),      // fine now
		inst("other", 4, []string{"/opt"}, nil),      // nothing makes /opt
	})
	if len(diags) != 2 || diags[0].Summary != "Missing directory" || diags[0].Subject.Start.Line != 1 || diags[1].Subject.Start.Line != 4 || !pl.Errored {
		t.Fatalf("diagnostics %v", diags)
	}
}

// instOf is a needy instance at line of a.hcl that needs and provides the
// directories given.
func instOf(typ *needyType, name string, line int, needs, provides []string) *eval.Instance {
	vals := map[string]cty.Value{"name": cty.StringVal(name)}
	for k, l := range map[string][]string{"needs": needs, "provides": provides} {
		if l != nil {
			var vs []cty.Value
			for _, x := range l {
				vs = append(vs, cty.StringVal(x))
			}
			vals[k] = cty.ListVal(vs)
		}
	}
	rng := hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: line, Column: 1}}
	return &eval.Instance{Block: &config.ResourceBlock{Type: "needy", Name: name, DeclRange: rng}, Type: typ, Resource: resources.NewResource(typ.s, name, "create", vals)}
}
