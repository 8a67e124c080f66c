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

// unitNeeder needs a unit, and says itself what the plan should say when
// nothing provides it (Need.Missing).
type unitNeeder struct{ needyType }

func (t *unitNeeder) Plan(_ string, d *resources.Resource, _ *resources.State) (*resources.Step, error) {
	return &resources.Step{Kind: resources.Update, Reason: "inactive", Needs: []resources.Need{{
		Namespace: "unit", Value: "web.service", What: "unit", Missing: "The unit web.service is not on this host.",
	}}}, nil
}

func TestPlanWordsAMissingNeedAsTheTypeSays(t *testing.T) {
	typ := &unitNeeder{*newNeedy()}
	rng := hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: 3, Column: 1}}
	inst := &eval.Instance{Block: &config.ResourceBlock{Type: "needy", Name: "web", DeclRange: rng}, Type: typ,
		Resource: resources.NewResource(typ.s, "web", "create", map[string]cty.Value{"name": cty.StringVal("web")})}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 1)
	p.Registry = resources.NewRegistry(typ)
	_, diags := p.PlanInstances(context.Background(), []*eval.Instance{inst})
	if len(diags) != 1 || diags[0].Summary != "Missing unit" || diags[0].Detail != "The unit web.service is not on this host." || diags[0].Subject.Start.Line != 3 {
		t.Fatalf("diagnostics %v", diags)
	}
}
