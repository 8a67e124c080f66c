package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/resources"
)

// lcType is a resource type whose Load and Plan misbehave on request.
type lcType struct {
	schema    *resources.Schema
	loads     int
	load      func() (*resources.State, error)
	planStep  func() (*resources.Step, error)
	sawAction string
}

func newLCType() *lcType {
	return &lcType{schema: &resources.Schema{
		Name: "lc",
		Properties: []*resources.Property{
			{Name: "path", Type: cty.String, NameProperty: true},
			{Name: "content", Type: cty.String},
		},
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
	}}
}

func (t *lcType) Schema() *resources.Schema { return t.schema }

func (t *lcType) Load(_ context.Context, r *resources.Resource) (*resources.State, error) {
	t.loads++
	if _, ok := r.Values["content"]; ok {
		return nil, errors.New("Load saw a desired-state property")
	}
	if t.load != nil {
		return t.load()
	}
	return &resources.State{Exists: true, Values: map[string]cty.Value{"content": cty.StringVal("old")}}, nil
}

func (t *lcType) Plan(_ string, d *resources.Resource, cur *resources.State) (*resources.Step, error) {
	t.sawAction = d.Action
	if t.planStep != nil {
		return t.planStep()
	}
	return resources.ConvergeIfChanged(d, cur), nil
}

func (t *lcType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *lcType) converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return errors.New("never")
}

func exprGuard(kind guard.Kind, v bool) *guard.Spec {
	return &guard.Spec{Kind: kind, Form: guard.Expression, Source: "node.x", ExprValue: &v}
}

func lcSubject(t *lcType, action string, guards ...*guard.Spec) *Subject {
	d := resources.NewResource(t.schema, "/x", action, map[string]cty.Value{"path": cty.StringVal("/x"), "content": cty.StringVal("new")})
	return &Subject{Address: d.Address(), Type: t, Desired: d, Guards: guards, Salt: "s"}
}

func TestLifecycleEvaluate(t *testing.T) {
	lc := &Lifecycle{Registry: builtin.Registry()}
	ctx := context.Background()

	t.Run("reads and plans the subject's action", func(t *testing.T) {
		typ := newLCType()
		rd, err := lc.Evaluate(ctx, lcSubject(typ, "create", exprGuard(guard.OnlyIf, true)))
		if err != nil {
			t.Fatal(err)
		}
		if rd.Skip || rd.Step.Kind != resources.Update || typ.sawAction != "create" || len(rd.Guards) != 1 {
			t.Fatalf("reading %+v step %+v", rd, rd.Step)
		}
		if rd.Current == nil || rd.Fingerprint() == "" || rd.Fingerprint() != rd.Current.Fingerprint() {
			t.Errorf("current %+v fingerprint %q", rd.Current, rd.Fingerprint())
		}
	})

	t.Run("a deciding guard stops before reading", func(t *testing.T) {
		typ := newLCType()
		rd, err := lc.Evaluate(ctx, lcSubject(typ, "create", exprGuard(guard.OnlyIf, true), exprGuard(guard.NotIf, true), exprGuard(guard.NotIf, false)))
		if err != nil {
			t.Fatal(err)
		}
		if !rd.Skip || rd.DecidedBy != 1 || len(rd.Guards) != 2 || typ.loads != 0 || rd.Current != nil || rd.Fingerprint() != "" {
			t.Errorf("skip %v by %d, %d outcomes, %d loads", rd.Skip, rd.DecidedBy, len(rd.Guards), typ.loads)
		}
	})

	t.Run("a real script guard runs", func(t *testing.T) {
		typ := newLCType()
		g := &guard.Spec{Kind: guard.OnlyIf, Form: guard.Script, Source: "exit 1", Interpreter: guard.Default,
			Values: map[string]guard.Value{"command": {Value: cty.StringVal("exit 1")}}}
		rd, err := lc.Evaluate(ctx, lcSubject(typ, "create", g))
		if err != nil {
			t.Fatal(err)
		}
		if !rd.Skip || rd.Guards[0].ExitCode == nil || *rd.Guards[0].ExitCode != 1 {
			t.Errorf("outcomes %+v", rd.Guards)
		}
	})

	fails := []struct {
		name      string
		setup     func(*lcType)
		guards    []*guard.Spec
		phase     Phase
		panicked  bool
		wantInMsg string
	}{
		{"guard cannot run", nil, []*guard.Spec{{Kind: guard.OnlyIf, Form: guard.Expression, Source: "node.x"}}, PhaseGuards, false, "a guard cannot run: only_if node.x: the expression's value is not known"},
		{"load error", func(t *lcType) {
			t.load = func() (*resources.State, error) { return nil, errors.New("permission denied") }
		}, nil, PhaseLoad, false, "reading the live state failed: permission denied"},
		{"no state", func(t *lcType) { t.load = func() (*resources.State, error) { return nil, nil } }, nil, PhaseLoad, false, "returned no state"},
		{"load panics", func(t *lcType) { t.load = func() (*resources.State, error) { panic("boom") } }, nil, PhaseLoad, true, `resource type "lc" panicked in Load: boom`},
		{"plan error", func(t *lcType) { t.planStep = func() (*resources.Step, error) { return nil, errors.New("bad") } }, nil, PhasePlan, false, "deciding what the delete action would do failed: bad"},
		{"no step", func(t *lcType) { t.planStep = func() (*resources.Step, error) { return &resources.Step{}, nil } }, nil, PhasePlan, false, "returned no step"},
		{"plan panics", func(t *lcType) { t.planStep = func() (*resources.Step, error) { panic("kaput") } }, nil, PhasePlan, true, `panicked in Plan: kaput`},
	}
	for _, tc := range fails {
		t.Run(tc.name, func(t *testing.T) {
			typ := newLCType()
			if tc.setup != nil {
				tc.setup(typ)
			}
			rd, err := lc.Evaluate(ctx, lcSubject(typ, "delete", tc.guards...))
			var le *LifecycleError
			if !errors.As(err, &le) {
				t.Fatalf("error %v (%T), want a *LifecycleError", err, err)
			}
			if le.Phase != tc.phase || le.Panicked != tc.panicked || le.Address != "lc[/x]" || le.Action != "delete" {
				t.Errorf("error %+v", le)
			}
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("message %q, want it to contain %q", err, tc.wantInMsg)
			}
			if rd == nil || rd.Step != nil {
				t.Errorf("reading with an error: %+v", rd)
			}
			if tc.phase == PhaseGuards && len(rd.Guards) != 1 {
				t.Errorf("the failed guard's outcome is kept: %+v", rd.Guards)
			}
		})
	}
}

// fakeResolver resolves every lazy value to "resolved" (or fails).
type fakeResolver struct {
	fail  error
	calls int
}

func (f *fakeResolver) Resolve(_ context.Context, d *resources.Resource, lazy map[string]*LazyExpr) (*resources.Resource, error) {
	f.calls++
	if f.fail != nil {
		return nil, f.fail
	}
	vals := map[string]cty.Value{}
	for k, v := range d.Values {
		vals[k] = v
	}
	for k := range lazy {
		vals[k] = cty.StringVal("resolved")
	}
	return resources.NewResource(d.Schema(), d.Name, d.Action, vals), nil
}

func (f *fakeResolver) Guard(context.Context, *LazyExpr) (bool, error) { return true, nil }

// TestLifecycleDeferred: values known at apply stay unknown until the
// evaluation right before converging, which resolves them after the guards
// and plans (and hands Converge) the resolved resource.
func TestLifecycleDeferred(t *testing.T) {
	ctx := context.Background()
	typ := newLCType()
	s := lcSubject(typ, "create")
	s.Desired.Values["content"] = cty.UnknownVal(cty.String)
	s.Lazy = map[string]*LazyExpr{"content": {Source: `"x"`}}

	res := &fakeResolver{}
	lc := &Lifecycle{Registry: builtin.Registry(), Resolver: res}
	rd, err := lc.Evaluate(ctx, s)
	if err != nil || res.calls != 0 || rd.Step.Kind != resources.Update || rd.Desired.Values["content"].IsKnown() {
		t.Fatalf("unknown: %v calls %d %+v", err, res.calls, rd)
	}

	s.Deferred = DeferredDecide
	rd, err = lc.Evaluate(ctx, s)
	if err != nil || res.calls != 1 || rd.Desired.Values["content"].AsString() != "resolved" || !reflectEqual(rd.Resolved, []string{"content"}) {
		t.Fatalf("decide: %v %+v", err, rd)
	}
	if s.Desired.Values["content"].IsKnown() {
		t.Errorf("the subject's own resource was changed")
	}

	// A guard that skips: nothing is resolved.
	s.Guards = []*guard.Spec{exprGuard(guard.OnlyIf, false)}
	if rd, err = lc.Evaluate(ctx, s); err != nil || !rd.Skip || res.calls != 1 {
		t.Errorf("skipped: %v %+v calls %d", err, rd, res.calls)
	}
	s.Guards = nil

	res.fail = errors.New("no file /k")
	_, err = lc.Evaluate(ctx, s)
	var le *LifecycleError
	if !errors.As(err, &le) || le.Phase != PhaseValues || !strings.Contains(err.Error(), "a value known only at apply failed: no file /k") {
		t.Errorf("failure: %v", err)
	}
	if _, err = (&Lifecycle{}).Evaluate(ctx, s); !errors.As(err, &le) || le.Phase != PhaseValues {
		t.Errorf("no resolver: %v", err)
	}
}

func reflectEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

type redactable struct{ msg string }

func (r redactable) Error() string   { return r.msg + ": hunter2" }
func (r redactable) Redacted() error { return errors.New(r.msg) }

// TestLifecycleHidesSensitiveLazyErrors: a value known at apply of a
// sensitive resource, or a sensitive property, fails without saying what
// its evaluation said.
func TestLifecycleHidesSensitiveLazyErrors(t *testing.T) {
	typ := newLCType()
	s := lcSubject(typ, "create")
	s.Desired.Values["content"] = cty.UnknownVal(cty.String)
	s.Lazy = map[string]*LazyExpr{"content": {Source: `"x"`}}
	s.Deferred = DeferredDecide
	lc := &Lifecycle{Resolver: &fakeResolver{fail: redactable{"content failed"}}}
	for _, c := range []struct {
		sensitive bool
		props     []string
		hidden    bool
	}{{false, nil, false}, {true, nil, true}, {false, []string{"content"}, true}, {false, []string{"other"}, false}} {
		s.Sensitive, s.SensitiveProps = c.sensitive, c.props
		_, err := lc.Evaluate(context.Background(), s)
		if err == nil || strings.Contains(err.Error(), "hunter2") != !c.hidden {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
