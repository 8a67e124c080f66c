package resources_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// recorder is a type whose Plan and steps say what they were given.
type recorder struct {
	schema  *resources.Schema
	planned []string
	ran     []string
	kind    resources.Kind
	steps   resources.Steps
}

func newRecorder(kind resources.Kind) *recorder {
	r := &recorder{kind: kind, schema: &resources.Schema{
		Name:          "rec",
		Properties:    []*resources.Property{{Name: "name", Type: cty.String, NameProperty: true}},
		Actions:       []string{"create", "poke"},
		DefaultAction: "create",
	}}
	f := func(name string) resources.ConvergeFunc {
		return func(_ context.Context, _ *resources.Env, d *resources.Resource, _ *resources.State, _ *resources.Step) error {
			r.ran = append(r.ran, name+":"+d.Action)
			return nil
		}
	}
	r.steps = resources.Steps{Create: f("create"), Update: f("update")}
	return r
}

func (r *recorder) Schema() *resources.Schema { return r.schema }
func (r *recorder) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return resources.Absent(), nil
}
func (r *recorder) Plan(action string, d *resources.Resource, _ *resources.State) (*resources.Step, error) {
	r.planned = append(r.planned, action+"/"+d.Action)
	return &resources.Step{Kind: r.kind, Reason: "because"}, nil
}
func (r *recorder) Steps() resources.Steps { return r.steps }

func TestPlanStep(t *testing.T) {
	cases := []struct {
		name, action string
		wantPlanned  string // "" when Plan must not be called
		wantErr      string
	}{
		{"the default action, resolved", "", "create/create", ""},
		{"a declared action", "poke", "poke/poke", ""},
		{"nothing is the framework's", "nothing", "", ""},
		{"an undeclared action is refused", "explode", "", `rec has no action "explode"; its actions are create, poke`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRecorder(resources.Create)
			d := resources.NewResource(r.schema, "x", c.action, nil)
			step, err := resources.PlanStep(r, d, resources.Absent())
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(r.planned, ",")
			if got != c.wantPlanned {
				t.Errorf("Plan called with %q, want %q", got, c.wantPlanned)
			}
			if c.action == "nothing" && (step.Kind != resources.NoOp || step.Reason != "action nothing does nothing") {
				t.Errorf("nothing planned %+v", step)
			}
			if d.Action != c.action {
				t.Errorf("the caller's resource was changed: action %q", d.Action)
			}
		})
	}
}

func TestConvergeStep(t *testing.T) {
	r := newRecorder(resources.Create)
	d := resources.NewResource(r.schema, "x", "", nil)
	ctx := context.Background()
	for _, k := range []resources.Kind{resources.NoOp, resources.Skip} {
		if err := resources.ConvergeStep(ctx, r, nil, d, resources.Absent(), &resources.Step{Kind: k}); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if len(r.ran) != 0 {
		t.Fatalf("a no-op or a skip ran %v", r.ran)
	}
	if err := resources.ConvergeStep(ctx, r, nil, d, resources.Absent(), &resources.Step{Kind: resources.Create}); err != nil {
		t.Fatal(err)
	}
	if err := resources.ConvergeStep(ctx, r, nil, d.WithAction("poke"), resources.Absent(), &resources.Step{Kind: resources.Update}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.ran, ","); got != "create:create,update:poke" {
		t.Errorf("ran %q, want the create function with the default action, then update with poke", got)
	}

	err := resources.ConvergeStep(ctx, r, nil, d, resources.Absent(), &resources.Step{Kind: resources.Delete})
	if err == nil || err.Error() != "rec[x]: a delete step of action create cannot be carried out: rec has no delete step" {
		t.Errorf("a kind without a function: %v", err)
	}
	err = resources.ConvergeStep(ctx, r, nil, d, resources.Absent(), &resources.Step{Kind: "sideways"})
	if err == nil || !strings.Contains(err.Error(), `a step of kind "sideways" cannot be carried out`) {
		t.Errorf("an unknown kind: %v", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	r.ran = nil
	err = resources.ConvergeStep(cancelled, r, nil, d, resources.Absent(), &resources.Step{Kind: resources.Create})
	if !errors.Is(err, context.Canceled) || len(r.ran) != 0 {
		t.Errorf("cancelled: err %v, ran %v", err, r.ran)
	}
}
