package planner_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/resources"
)

// batchFake is the fake file type reading in batches, and saying what
// its changes mean in a note.
type batchFake struct {
	*plantest.FakeType
	batches atomic.Int32
	sizes   []int
}

func (b *batchFake) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	b.batches.Add(1)
	b.sizes = append(b.sizes, len(rs))
	out := make([]*resources.State, len(rs))
	for i, r := range rs {
		st, err := b.FakeType.Load(ctx, r)
		if err != nil {
			return nil, err
		}
		out[i] = st
	}
	b.Loads.Store(0) // count only the Loads the lifecycle makes
	return out, nil
}

func (b *batchFake) Plan(d *resources.Resource, cur *resources.State) (*resources.Step, error) {
	step, err := b.FakeType.Plan(d, cur)
	if err == nil {
		for i := range step.Changes {
			step.Changes[i].Note = "noted " + step.Changes[i].Property
		}
	}
	return step, err
}

func TestPlanReadsBatchesOncePerType(t *testing.T) {
	b := &batchFake{FakeType: plantest.NewFakeType()}
	b.Set("/same", map[string]cty.Value{"content": cty.StringVal("x")})
	p := plantest.FixedPlanner(b.FakeType, 4)
	p.Registry = resources.NewRegistry(b)
	var insts []*eval.Instance
	for i, name := range []string{"/new", "/same", "/idle", "/secret"} {
		action := "create"
		if name == "/idle" {
			action = "nothing"
		}
		vals := map[string]cty.Value{"content": cty.StringVal("x")}
		inst := b.Inst(name, action, i+1, vals)
		inst.Type = b
		if name == "/secret" {
			inst.Sensitive = true
		}
		insts = append(insts, inst)
	}
	pl, diags := p.PlanInstances(context.Background(), insts)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if b.batches.Load() != 1 || b.sizes[0] != 3 || b.Loads.Load() != 0 {
		t.Fatalf("LoadAll calls %d (sizes %v), Load calls after it %d: want one batch of the three read resources and no Load", b.batches.Load(), b.sizes, b.Loads.Load())
	}
	kinds := map[string]resources.Kind{}
	for _, r := range pl.Resources {
		kinds[r.Name] = r.Kind
	}
	if kinds["/new"] != resources.Create || kinds["/same"] != resources.NoOp || kinds["/idle"] != resources.NoOp {
		t.Fatalf("kinds %v", kinds)
	}
	for _, r := range pl.Resources {
		for _, c := range r.Changes {
			want := "noted " + c.Property
			if r.Sensitive {
				want = "" // the planner's own note on sensitive content, at most
			}
			if c.DiffNote != want && (!r.Sensitive || strings.Contains(c.DiffNote, "noted")) {
				t.Errorf("%s %s: note %q, want %q (a type's note, never for a sensitive value)", r.Name, c.Property, c.DiffNote, want)
			}
		}
	}
}

// TestPlanNeedsMetOnlyAtApply: a need whose Missing text is the type's,
// and one an earlier step meets only at apply (a package from a
// repository the same plan adds).
func TestPlanNeedsMetOnlyAtApply(t *testing.T) {
	typ := &atApplyType{newNeedy()}
	mk := func(name string, line int, needs, provides []string) *eval.Instance {
		i := instOf(typ.needyType, name, line, needs, provides)
		i.Type = typ
		return i
	}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 4)
	p.Registry = resources.NewRegistry(typ)
	_, diags := p.PlanInstances(context.Background(), []*eval.Instance{
		mk("pkg-before", 1, []string{"repo"}, nil),
		mk("repository", 2, nil, []string{"repo"}),
		mk("pkg-after", 3, []string{"repo"}, nil),
	})
	if len(diags) != 2 {
		t.Fatalf("diagnostics %v", diags)
	}
	if d := diags[0]; d.Summary != "Missing thing" || d.Detail != "pkg-before: no repository offers it" || d.Subject.Start.Line != 1 {
		t.Errorf("unmet need: %q %q line %d", d.Summary, d.Detail, d.Subject.Start.Line)
	}
	if d := diags[1]; d.Summary != "Value known only at apply" || !strings.Contains(d.Detail, "only needy[repository], earlier in this plan") || !strings.Contains(d.Detail, "Apply needy[repository] first") || d.Subject.Start.Line != 3 {
		t.Errorf("need met at apply: %q %q line %d", d.Summary, d.Detail, d.Subject.Start.Line)
	}
}

// atApplyType is needyType whose needs are met only at apply, with a
// message of its own when nothing meets them.
type atApplyType struct{ *needyType }

func (t *atApplyType) Plan(d *resources.Resource, st *resources.State) (*resources.Step, error) {
	step, err := t.needyType.Plan(d, st)
	for i := range step.Needs {
		step.Needs[i].AtApply = true
		step.Needs[i].What = "thing"
		step.Needs[i].Missing = d.Name + ": no repository offers it"
	}
	return step, err
}
