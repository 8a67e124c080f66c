package plan

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/resources"
)

// Subject is one action of one resource, as the lifecycle evaluates it:
// the planner for every resource and every notified run, and apply at
// pre-flight, right before converging, and before firing "before"
// notifications. Everything it holds comes from the plan (at apply) or
// from the evaluated recipe (at plan), so the two evaluate the same thing.
type Subject struct {
	// Address is TYPE[NAME].
	Address string
	Type    resources.Type
	// Desired is the resource with the properties the recipe set; its
	// Action is the action evaluated.
	Desired *resources.Resource
	// Guards are evaluated first, in order (Chef's: every only_if, then
	// every not_if); none means the action is not guarded.
	Guards []*guard.Spec
	// Sensitive hides every live value of the resource (kept as salted
	// HMACs in Current); SensitiveProps names the properties whose values
	// are hidden besides those the schema marks (Resource.SensitiveProperties).
	Sensitive      bool
	SensitiveProps []string
	// Salt keys the HMACs of sensitive live values: the plan's salt, so
	// readings taken at apply compare with those taken at plan.
	Salt string
	// State, when set, is the state to plan the action from instead of
	// reading the host: the state the previous action of the same
	// resource is predicted to leave (action = ["enable", "start"]). The
	// guards are still evaluated when given.
	State *resources.State
	// ForgetNoOp leaves Current nil when the step changes nothing: the
	// plan is only printed as text, which shows nothing of an unchanged
	// resource, so its reading is not digested and stored (a tenth of a
	// no-op plan's time at 10,000 resources).
	ForgetNoOp bool
	// Lazy holds the values known only at apply, by property (Desired
	// holds each as an unknown value); Deferred says what this evaluation
	// does with them, and with guards decided at apply.
	Lazy     map[string]*LazyExpr
	Deferred Deferred
}

// Deferred says what Evaluate does with what a plan defers to apply:
// values known only at apply (Subject.Lazy) and guards decided at apply
// (guard.Spec.AtApply).
type Deferred int

const (
	// DeferredUnknown leaves lazy values unknown and run-time guards
	// unevaluated: apply's pre-flight (staleness treats them as unknown),
	// and steps planned from a predicted state.
	DeferredUnknown Deferred = iota
	// DeferredShow leaves lazy values unknown and evaluates run-time
	// guards only to say what they say now, as if they let the resource
	// run (one that cannot run now is not an error): the planner.
	DeferredShow
	// DeferredDecide evaluates the lazy values (Lifecycle.Resolver) and
	// lets run-time guards decide: right before the resource converges.
	DeferredDecide
)

// Resolver evaluates what a plan defers to apply. package plan neither
// evaluates expressions nor imports package eval: command builds one from
// eval (eval.Resolver) and hands it to the planner and to apply, whose
// lifecycle calls it right before a resource converges.
type Resolver interface {
	// Resolve returns desired with its lazy values (by property)
	// evaluated, converted and validated as the recipe's own values are;
	// a failure names the property and its expression's source range.
	Resolve(ctx context.Context, desired *resources.Resource, lazy map[string]*LazyExpr) (*resources.Resource, error)
	// Guard evaluates the expression of a run-time expression guard.
	Guard(ctx context.Context, e *LazyExpr) (bool, error)
}

// hidesLazy reports whether an evaluation error of s's lazy values must
// not say more than where it is: the resource, or a lazy property of it,
// is sensitive.
func (s *Subject) hidesLazy() bool {
	if s.Sensitive {
		return true
	}
	for _, p := range s.SensitiveProps {
		if s.Lazy[p] != nil {
			return true
		}
	}
	return false
}

// Reading is what the lifecycle found for a Subject: the guards' verdict
// and, unless a guard decided to skip, the live state and the step the
// action would take from it.
type Reading struct {
	// Guards are the outcomes of the guards evaluated, in order, up to the
	// one that decided to skip.
	Guards []guard.Outcome
	// Skip is set when a guard decided to skip; DecidedBy is its index in
	// Guards (-1 when none decided). State, Current and Step are nil then:
	// a skipped resource is not read.
	Skip      bool
	DecidedBy int
	// State is the live state as the type read it; Current its stored
	// form (what a plan keeps, and what staleness compares).
	State   *resources.State
	Current *Current
	// Step is what the action would do from State.
	Step *resources.Step
	// Desired is the resource the step was planned for: the subject's,
	// with its lazy values evaluated when they were (Resolved names them,
	// sorted). Converge gets this one.
	Desired  *resources.Resource
	Resolved []string
}

// Fingerprint is the fingerprint of the live reading, "" when nothing was
// read (skipped).
func (r *Reading) Fingerprint() string {
	if r == nil || r.Current == nil {
		return ""
	}
	return r.Current.Fingerprint()
}

// Phase is the part of the lifecycle an error happened in.
type Phase string

const (
	PhaseGuards Phase = "guards"
	PhaseValues Phase = "values"
	PhaseLoad   Phase = "load"
	PhasePlan   Phase = "plan"
)

// LifecycleError is a failure of one phase of the lifecycle. Its message is
// the same wherever the lifecycle runs (plan, pre-flight, converge,
// notified runs); callers add only where it happened.
type LifecycleError struct {
	Address string
	// Type is the resource type's name; Action the action evaluated.
	Type   string
	Action string
	Phase  Phase
	// Panicked is set when the resource type panicked (a bug in the type);
	// the stack is logged, not kept here.
	Panicked bool
	Err      error
}

func (e *LifecycleError) Error() string {
	if e.Panicked {
		method := "Load"
		if e.Phase == PhasePlan {
			method = "Plan"
		}
		return fmt.Sprintf("resource type %q panicked in %s: %v (a bug in the resource type; please report it)", e.Type, method, e.Err)
	}
	switch e.Phase {
	case PhaseGuards:
		return fmt.Sprintf("a guard cannot run: %s. A guard that cannot run is an error; toque never guesses its verdict", e.Err)
	case PhaseValues:
		return fmt.Sprintf("a value known only at apply failed: %s", e.Err)
	case PhaseLoad:
		return fmt.Sprintf("reading the live state failed: %s", e.Err)
	default:
		return fmt.Sprintf("deciding what the %s action would do failed: %s", e.Action, e.Err)
	}
}

func (e *LifecycleError) Unwrap() error { return e.Err }

// GuardFunc evaluates a subject's guards; Lifecycle.Guards replaces
// guard.EvaluateAll with it (tests decide from a table).
type GuardFunc func(ctx context.Context, s *Subject) (outcomes []guard.Outcome, skip bool, decidedBy int, err error)

// Lifecycle evaluates one resource action: guards, then Load, then Plan.
// It is the one place where toque asks a resource type what it would do,
// so "apply re-plans exactly as plan did" holds by construction. It only
// reads the host (guards must be side-effect free; Load reads) and never
// converges. It is safe for concurrent use.
type Lifecycle struct {
	// Registry holds the guard interpreters' types.
	Registry *resources.Registry
	// Logger receives traces; nil discards them.
	Logger hclog.Logger
	// Guards, when set, decides every subject's guards instead of
	// guard.EvaluateAll (tests decide from a table).
	Guards GuardFunc
	// Resolver evaluates lazy values and run-time expression guards; nil
	// cannot, and a subject that needs it fails.
	Resolver Resolver
}

// Evaluate runs s's guards (stopping at the first that decides to skip),
// then, unless skipped, reads the live state and asks the type what s's
// action would do from it. A panicking type, a nil state or step, and
// every failure come back as a *LifecycleError; the Reading returned with
// an error holds what was found before it (the guards' outcomes).
func (l *Lifecycle) Evaluate(ctx context.Context, s *Subject) (*Reading, error) {
	rd := &Reading{DecidedBy: -1}
	log := l.logger()
	if !isNull(log) {
		log = log.With("resource", s.Address, "action", s.Desired.Action)
	}
	fail := func(phase Phase, err error) (*Reading, error) {
		var le *LifecycleError
		if e, ok := err.(*LifecycleError); ok {
			le = e
		} else {
			le = &LifecycleError{Err: err}
		}
		le.Address, le.Type, le.Action, le.Phase = s.Address, s.Desired.Type, s.Desired.Action, phase
		log.Debug("lifecycle failed", "phase", phase, "error", le.Err)
		return rd, le
	}

	if len(s.Guards) > 0 || l.Guards != nil {
		t0 := time.Now()
		outs, skip, by, err := l.evaluateGuards(ctx, s)
		rd.Guards = outs
		log.Debug("evaluated guards", "count", len(outs), "skip", skip, "duration", time.Since(t0))
		if err != nil {
			return fail(PhaseGuards, err)
		}
		if skip {
			rd.Skip, rd.DecidedBy = true, by
			return rd, nil
		}
	}

	desired := s.Desired
	if s.Deferred == DeferredDecide && len(s.Lazy) > 0 {
		if l.Resolver == nil {
			return fail(PhaseValues, fmt.Errorf("%d values are known only at apply, and nothing here can evaluate them", len(s.Lazy)))
		}
		t0 := time.Now()
		resolved, err := l.Resolver.Resolve(ctx, desired, s.Lazy)
		if err == nil && resolved == nil {
			err = fmt.Errorf("evaluating them gave no resource")
		}
		if r, ok := err.(interface{ Redacted() error }); ok && s.hidesLazy() {
			err = r.Redacted()
		}
		if err != nil {
			return fail(PhaseValues, err)
		}
		// Converge gets the secrets the subject has, as a resource the
		// plan holds does (DesiredResource).
		desired = resolved.WithSecrets(s.Sensitive, s.SensitiveProps)
		for k := range s.Lazy {
			rd.Resolved = append(rd.Resolved, k)
		}
		sort.Strings(rd.Resolved)
		log.Debug("evaluated values known at apply", "properties", rd.Resolved, "duration", time.Since(t0))
	}
	if s.Deferred == DeferredDecide {
		// Nothing unknown ever reaches Converge.
		for k, v := range desired.Values {
			if v != cty.NilVal && !v.IsWhollyKnown() {
				return fail(PhaseValues, fmt.Errorf("the value of %s is not known, and the plan says no way to know it", k))
			}
		}
	}
	rd.Desired = desired

	t0 := time.Now()
	st, err := s.State, error(nil)
	if st == nil {
		st, err = protect(log, func() (*resources.State, error) { return s.Type.Load(ctx, s.loadView(desired)) })
	}
	if err == nil && st == nil {
		err = fmt.Errorf("the resource type returned no state")
	}
	if err != nil {
		return fail(PhaseLoad, err)
	}
	if st.Values == nil {
		st.Values = map[string]cty.Value{}
	}
	loadDur := time.Since(t0)

	t1 := time.Now()
	step, err := protect(log, func() (*resources.Step, error) { return resources.PlanStep(s.Type, desired, st) })
	if err == nil && (step == nil || step.Kind == "") {
		err = fmt.Errorf("the resource type returned no step")
	}
	if err != nil {
		return fail(PhasePlan, err)
	}
	rd.State, rd.Step = st, step
	if !(s.ForgetNoOp && step.Kind == resources.NoOp) {
		rd.Current = StoreCurrent(desired.Schema(), st, s.Salt, s.Sensitive, s.SensitiveProps...)
	}
	if log.IsTrace() {
		log.Trace("evaluated", "kind", step.Kind, "load", loadDur, "plan", time.Since(t1))
	}
	return rd, nil
}

func (l *Lifecycle) evaluateGuards(ctx context.Context, s *Subject) ([]guard.Outcome, bool, int, error) {
	if l.Guards != nil {
		return l.Guards(ctx, s)
	}
	o := guard.Options{}
	switch s.Deferred {
	case DeferredShow:
		o.RunTime = guard.RunTimeShow
	case DeferredDecide:
		o.RunTime = guard.RunTimeDecide
	}
	if l.Resolver != nil {
		o.Expr = l.Resolver.Guard
	}
	return guard.EvaluateAllWith(ctx, l.Registry, s.Guards, l.logger().Named("guard"), o)
}

// isNull reports whether log discards everything (the planner's default
// logger), so that Evaluate names no sub-logger for each of 100,000
// resources.
func isNull(log hclog.Logger) bool {
	return !log.IsError() // (the highest level: off when it is)
}

func (l *Lifecycle) logger() hclog.Logger {
	if l == nil || l.Logger == nil {
		return hclog.NewNullLogger()
	}
	return l.Logger
}

// protect calls f, turning a panic of the resource type into a
// *LifecycleError (Panicked) so one broken type fails only its resource.
func protect[T any](log hclog.Logger, f func() (T, error)) (out T, err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("resource type panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			var zero T
			out, err = zero, &LifecycleError{Panicked: true, Err: fmt.Errorf("%v", v)}
		}
	}()
	return f()
}

// EvaluateActions evaluates the actions of one resource in order, as the
// recipe lists them (action = ["enable", "start"]): the first as Evaluate
// does (its guards decide for all: a skipped resource takes none of its
// actions), each further one planned from the state the previous one is
// predicted to leave (resources.Predict), without reading the host again
// and without its guards, which gave their verdict on this same host.
// s.Desired.Action is ignored. It returns one reading per action taken
// (only the first when skipped), or the readings so far and the error.
func (l *Lifecycle) EvaluateActions(ctx context.Context, s *Subject, actions []string) ([]*Reading, error) {
	if len(actions) == 0 {
		actions = []string{s.Desired.Action}
	}
	first := *s
	first.Desired = s.Desired.WithAction(actions[0])
	if len(actions) > 1 {
		first.Desired = first.Desired.WithLater(actions[1:])
	}
	rd, err := l.Evaluate(ctx, &first)
	out := []*Reading{rd}
	if err != nil || rd.Skip {
		return out, err
	}
	prev, prevDesired := rd, rd.Desired
	for _, a := range actions[1:] {
		predicted, err := resources.Predict(s.Type, prevDesired, prev.State, prev.Step)
		if err != nil {
			return out, &LifecycleError{Address: s.Address, Type: s.Desired.Type, Action: a, Phase: PhasePlan,
				Err: fmt.Errorf("predicting the state the %s action leaves: %w", prevDesired.Action, err)}
		}
		next := *s
		// The values known at apply were evaluated once, for the first
		// action, when they were.
		next.Desired, next.Guards, next.State = prevDesired.WithAction(a), nil, predicted
		if len(rd.Resolved) > 0 {
			next.Lazy = nil
		}
		if prev, err = l.Evaluate(ctx, &next); err != nil {
			return out, err
		}
		out = append(out, prev)
		prevDesired = next.Desired
	}
	return out, nil
}

// Preload reads, with one LoadAll call per type that implements
// resources.BatchLoader, every subject of such a type, and returns the
// readings by subject (subjects of other types, and of a type whose
// LoadAll failed or panicked, are left to Load). The subjects' States are
// not changed; the caller plans each from its reading.
func (l *Lifecycle) Preload(ctx context.Context, subjects []*Subject) map[*Subject]*resources.State {
	// One batch per type, or per key the types that share batches give
	// (resources.BatchSharer), read by the first of them met.
	byKey := map[any][]*Subject{}
	var order []any
	loader := map[any]resources.BatchLoader{}
	for _, s := range subjects {
		bl, ok := s.Type.(resources.BatchLoader)
		if !ok || s.State != nil {
			continue
		}
		key := resources.BatchKeyOf(bl)
		if _, seen := byKey[key]; !seen {
			order = append(order, key)
			loader[key] = bl
		}
		byKey[key] = append(byKey[key], s)
	}
	out := map[*Subject]*resources.State{}
	for _, key := range order {
		bl, subs := loader[key], byKey[key]
		views := make([]*resources.Resource, len(subs))
		for i, s := range subs {
			views[i] = s.loadView(s.Desired)
		}
		log := l.logger().With("type", bl.Schema().Name, "resources", len(subs))
		t0 := time.Now()
		states, err := protect(log, func() ([]*resources.State, error) { return bl.LoadAll(ctx, views) })
		if err == nil && len(states) != len(subs) {
			err = fmt.Errorf("the resource type returned %d states for %d resources", len(states), len(subs))
		}
		if err != nil {
			log.Debug("batch read failed; reading one by one", "error", err)
			continue
		}
		for i, s := range subs {
			if states[i] != nil {
				out[s] = states[i]
			}
		}
		log.Debug("read in one batch", "duration", time.Since(t0))
	}
	return out
}

// loadView is what Load gets of s's resource desired (its own, or it with
// its values known at apply evaluated): the seed's fresh resource, knowing
// which of its values are secrets.
func (s *Subject) loadView(desired *resources.Resource) *resources.Resource {
	return desired.WithSecrets(s.Sensitive, s.SensitiveProps).LoadView()
}
