package resources

import (
	"context"
	"fmt"
	"strings"
)

// Steps holds the functions that carry out a type's steps, one for each
// kind of step its Plan returns (OpenTofu's SDK resources name their
// Create, Update and Delete the same way). The framework calls the one a
// step's kind names (ConvergeStep); it never calls any for a no-op or a
// skip, and a kind the type left nil is an error the framework words.
type Steps struct {
	Create ConvergeFunc
	Update ConvergeFunc
	Delete ConvergeFunc
	Run    ConvergeFunc
}

// ConvergeFunc carries out step, which the type's Plan returned for
// current. desired.Action is the action the step was planned for, never
// "" (the framework puts the type's default there). It changes only what
// step lists; writes are atomic where the platform allows.
type ConvergeFunc func(ctx context.Context, env *Env, desired *Resource, current *State, step *Step) error

// Same returns Steps that carry out every kind of step with f: for a type
// whose one function reads the step (its groups, its kind) itself.
func Same(f ConvergeFunc) Steps { return Steps{Create: f, Update: f, Delete: f, Run: f} }

// For returns the function of kind k, or nil.
func (s Steps) For(k Kind) ConvergeFunc {
	switch k {
	case Create:
		return s.Create
	case Update:
		return s.Update
	case Delete:
		return s.Delete
	case Run:
		return s.Run
	}
	return nil
}

// EffectiveAction is r's action, or its type's default when the recipe
// named none.
func (r *Resource) EffectiveAction() string {
	if r.Action != "" || r.schema == nil {
		return r.Action
	}
	return r.schema.DefaultAction
}

// PlanStep is the framework's half of planning one action of desired: it
// resolves the action (the recipe's, else the type's default), answers
// "nothing" itself, refuses an action the schema does not declare, and
// only then calls t.Plan, with desired's Action set to the action. Every
// caller that plans a resource calls it, never t.Plan.
func PlanStep(t Type, desired *Resource, current *State) (*Step, error) {
	s := t.Schema()
	action := desired.Action
	if action == "" {
		action = s.DefaultAction
	}
	if action == "nothing" {
		return NothingStep(), nil
	}
	if !s.HasAction(action) {
		return nil, UnknownAction(s, action)
	}
	if desired.Action != action {
		desired = desired.WithAction(action)
	}
	return t.Plan(action, desired, current)
}

// ConvergeStep is the framework's half of converging: a no-op or a skip
// does nothing, a cancelled ctx stops before anything runs, and any other
// step is carried out by the function t's Steps give for its kind, with
// desired's Action set to the action it was planned for. A kind the type
// has no function for is an error. Every caller that converges a resource
// calls it, never a type's functions.
func ConvergeStep(ctx context.Context, t Type, env *Env, desired *Resource, current *State, step *Step) error {
	if !step.Kind.IsWork() {
		if step.Kind == NoOp || step.Kind == Skip {
			return nil
		}
		return fmt.Errorf("%s: a step of kind %q cannot be carried out", desired.Address(), step.Kind)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("converging %s: %w", desired.Address(), err)
	}
	if desired.Action == "" {
		desired = desired.WithAction(t.Schema().DefaultAction)
	}
	f := t.Steps().For(step.Kind)
	if f == nil {
		return fmt.Errorf("%s: a %s step of action %s cannot be carried out: %s has no %s step", desired.Address(), step.Kind, desired.Action, t.Schema().Name, step.Kind)
	}
	return f(ctx, env, desired, current, step)
}

// NothingStep is the plan of the "nothing" action, which every type
// accepts.
func NothingStep() *Step { return &Step{Kind: NoOp, Reason: "action nothing does nothing"} }

// UnknownAction is the error for an action s does not declare.
func UnknownAction(s *Schema, action string) error {
	return fmt.Errorf("%s has no action %q; its actions are %s", s.Name, action, strings.Join(s.Actions, ", "))
}
