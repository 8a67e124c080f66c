package planner_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/resources"
)

// batchType reads its "host" (a map of existing names) in one LoadAll.
type batchType struct {
	s              *resources.Schema
	have           map[string]bool
	loads, batches atomic.Int32
	failBatch      bool
}

func newBatchType() *batchType {
	return &batchType{have: map[string]bool{"a": true, "c": true}, s: &resources.Schema{
		Name:       "thing",
		Properties: []*resources.Property{{Name: "name", Type: cty.String, NameProperty: true}},
		Actions:    []string{"create"}, DefaultAction: "create",
	}}
}

func (t *batchType) Schema() *resources.Schema { return t.s }
func (t *batchType) Load(_ context.Context, r *resources.Resource) (*resources.State, error) {
	t.loads.Add(1)
	return t.state(r), nil
}
func (t *batchType) LoadAll(_ context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	t.batches.Add(1)
	if t.failBatch {
		return nil, errors.New("batch broke")
	}
	out := make([]*resources.State, len(rs))
	for i, r := range rs {
		out[i] = t.state(r)
	}
	return out, nil
}
func (t *batchType) state(r *resources.Resource) *resources.State {
	if t.have[r.Name] {
		return &resources.State{Exists: true, Values: map[string]cty.Value{}}
	}
	return resources.Absent()
}
func (t *batchType) Plan(_ string, d *resources.Resource, cur *resources.State) (*resources.Step, error) {
	return resources.ConvergeIfChanged(d, cur), nil
}
func (t *batchType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *batchType) converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return nil
}

func TestPlanReadsBatchTypesOnce(t *testing.T) {
	for _, fail := range []bool{false, true} {
		typ := newBatchType()
		typ.failBatch = fail
		var insts []*eval.Instance
		for i, name := range []string{"a", "b", "c", "d"} {
			action := "create"
			if name == "d" {
				action = "nothing" // not read
			}
			rng := hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: i + 1}}
			insts = append(insts, &eval.Instance{
				Block: &config.ResourceBlock{Type: "thing", Name: name, DeclRange: rng}, Type: typ,
				Resource: resources.NewResource(typ.s, name, action, map[string]cty.Value{"name": cty.StringVal(name)}),
			})
		}
		p := plantest.FixedPlanner(plantest.NewFakeType(), 4)
		p.Registry = resources.NewRegistry(typ)
		pl, diags := p.PlanInstances(context.Background(), insts)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		wantLoads := int32(0)
		if fail {
			wantLoads = 3 // the batch failed: one by one
		}
		if typ.batches.Load() != 1 || typ.loads.Load() != wantLoads {
			t.Errorf("failing batch %v: %d batches, %d loads", fail, typ.batches.Load(), typ.loads.Load())
		}
		if pl.Resources[0].Kind != resources.NoOp || pl.Resources[1].Kind != resources.Create {
			t.Errorf("kinds %s %s", pl.Resources[0].Kind, pl.Resources[1].Kind)
		}
	}
}
