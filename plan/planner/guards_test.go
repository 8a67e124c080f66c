package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/resources"
)

func script(kind guard.Kind, cmd string, extra map[string]cty.Value) *guard.Spec {
	vals := map[string]guard.Value{"command": {Value: cty.StringVal(cmd)}}
	for k, v := range extra {
		vals[k] = guard.Value{Value: v}
	}
	return &guard.Spec{Kind: kind, Form: guard.Script, Source: cmd, Interpreter: guard.Default, Values: vals}
}

// The planner's own evaluator runs the decoded guards for real.
func TestPlanRunsDecodedGuards(t *testing.T) {
	f := plantest.NewFakeType()
	dir := t.TempDir()
	p := plantest.FixedPlanner(f, 2)
	run := f.Inst("/run", "run", 1, nil)
	run.Guards = []*guard.Spec{script(guard.OnlyIf, `test "$PWD:$X" = "`+dir+`:1"`, map[string]cty.Value{
		"cwd": cty.StringVal(dir), "environment": cty.MapVal(map[string]cty.Value{"X": cty.StringVal("1")}),
	})}
	skip := f.Inst("/skip", "create", 4, nil)
	falseExpr := false
	skip.Guards = []*guard.Spec{
		script(guard.OnlyIf, "true", nil),
		{Kind: guard.NotIf, Form: guard.Expression, Source: "node.off", ExprValue: &falseExpr},
		script(guard.NotIf, "exit 0", nil),
		script(guard.NotIf, "exit 1", nil),
	}
	pl, diags := p.PlanInstances(context.Background(), []*eval.Instance{run, skip})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := pl.Resources[0]
	if r.Kind != resources.Run || r.Reason != "only_if `test \"$PWD:$X\" = \""+dir+":1\"` passed" {
		t.Errorf("run: %s %q", r.Kind, r.Reason)
	}
	if len(r.Guards) != 1 || r.Guards[0].ExitCode == nil || *r.Guards[0].ExitCode != 0 || !r.Guards[0].Passed {
		t.Errorf("guard result %+v", r.Guards)
	}
	if g := pl.Show(nil, r).Guards; len(g) != 1 || g[0].Cwd != dir || g[0].Environment["X"] != "1" || g[0].Interpreter != "default" {
		t.Errorf("guard shown as %+v", g)
	}
	if len(r.GuardSpecs) != 1 {
		t.Errorf("specs not kept for apply: %v", r.GuardSpecs)
	}
	s := pl.Resources[1]
	if s.Kind != resources.Skip || s.Reason != "not_if `exit 0` is true" || s.Current != nil {
		t.Errorf("skip: %s %q", s.Kind, s.Reason)
	}
	if len(s.Guards) != 3 || !s.Guards[2].Decided || s.Guards[0].Decided || len(s.GuardSpecs) != 4 {
		t.Errorf("evaluated %d guards (want 3, the last deciding) and kept %d specs (want 4)", len(s.Guards), len(s.GuardSpecs))
	}
	var b strings.Builder
	views.RenderText(&b, pl, views.RenderOptions{Registry: resources.NewRegistry(f)})
	for _, want := range []string{
		"# fake_file[/run] will run: only_if `test",
		"#   (/bin/sh; cwd " + dir + " from the guard, X=1 from the guard; exit 0 in ",
		"# fake_file[/skip] skipped: not_if `exit 0` is true",
		"#   only_if `true` passed (/bin/sh; exit 0 in ",
		"#   not_if node.off is false\n",
		"1 skipped",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("render lacks %q:\n%s", want, b.String())
		}
	}
}
