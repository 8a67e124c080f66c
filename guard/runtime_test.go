package guard

import (
	"context"
	"errors"
	"testing"

	"github.com/toquehq/toque/internal/lazy"
)

// TestEvaluateRunTimeGuards: a guard decided at apply is left alone at
// pre-flight, shown (never deciding, never failing) at plan, and decides
// right before the resource converges.
func TestEvaluateRunTimeGuards(t *testing.T) {
	reg := testRegistry()
	specs := mustDecode(t, "file", nil, `only_if = ["false", { command = "true", cwd = "/no/such/dir" }]`+"\n"+`not_if = "false"`)
	for _, s := range specs[:2] {
		s.AtApply = true
	}
	ctx := context.Background()

	outs, skip, by, err := EvaluateAllWith(ctx, reg, specs, nil, Options{RunTime: RunTimeLeave})
	if err != nil || skip || by != -1 || len(outs) != 3 || !outs[0].NotRun || !outs[1].NotRun || outs[2].Deferred {
		t.Errorf("leave: %+v skip %v err %v", outs, skip, err)
	}

	outs, skip, _, err = EvaluateAllWith(ctx, reg, specs, nil, Options{RunTime: RunTimeShow})
	if err != nil || skip || len(outs) != 3 {
		t.Fatalf("show: skip %v err %v outcomes %d", skip, err, len(outs))
	}
	if !outs[0].Deferred || outs[0].NotRun || outs[0].Condition || outs[0].Err != nil {
		t.Errorf("show, fails now: %+v", outs[0])
	}
	if !outs[1].Deferred || outs[1].Err == nil {
		t.Errorf("show, cannot run now (no cwd) is recorded, not an error: %+v", outs[1])
	}

	outs, skip, by, err = EvaluateAllWith(ctx, reg, specs, nil, Options{RunTime: RunTimeDecide})
	if err != nil || !skip || by != 0 || len(outs) != 1 {
		t.Errorf("decide: skip %v by %d err %v outcomes %d", skip, by, err, len(outs))
	}
	if _, _, _, err = EvaluateAllWith(ctx, reg, specs[1:], nil, Options{RunTime: RunTimeDecide}); err == nil {
		t.Errorf("decide: a guard that cannot run at apply is an error")
	}
}

func TestRunTimeExpressionGuard(t *testing.T) {
	reg := testRegistry()
	e := &lazy.Expr{Source: "fileexists(\"/x\")"}
	spec := &Spec{Kind: NotIf, Form: Expression, Source: e.Source, AtApply: true, Lazy: e}
	var got *lazy.Expr
	o := Options{RunTime: RunTimeDecide, Expr: func(_ context.Context, x *lazy.Expr) (bool, error) { got = x; return true, nil }}
	outs, skip, by, err := EvaluateAllWith(context.Background(), reg, []*Spec{spec}, nil, o)
	if err != nil || !skip || by != 0 || got != e || !outs[0].Condition {
		t.Errorf("skip %v by %d err %v evaluated %v", skip, by, err, got)
	}
	o.Expr = func(context.Context, *lazy.Expr) (bool, error) { return false, errors.New("boom") }
	if _, _, _, err := EvaluateAllWith(context.Background(), reg, []*Spec{spec}, nil, o); err == nil {
		t.Errorf("an expression that fails at apply is an error")
	}
	o.RunTime = RunTimeShow
	outs, _, _, err = EvaluateAllWith(context.Background(), reg, []*Spec{spec}, nil, o)
	if err != nil || outs[0].Err == nil || !outs[0].Deferred {
		t.Errorf("show: %+v %v", outs, err)
	}
	if _, _, _, err := EvaluateAllWith(context.Background(), reg, []*Spec{spec}, nil, Options{RunTime: RunTimeDecide}); err == nil {
		t.Errorf("without an evaluator, a run-time expression guard cannot decide")
	}
}
