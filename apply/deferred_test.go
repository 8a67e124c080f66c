package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/plan/planner"
)

// recipePlan plans src (ROOT replaced by root) with the built-in types,
// as toque plan does.
func recipePlan(t *testing.T, root, src string) *plan.Plan {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(strings.ReplaceAll(src, "ROOT", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := builtin.Registry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p := &planner.Planner{Registry: reg, Host: &host.Facts{Identity: host.Identity{Hostname: "test-host", MachineID: "0123"}}, Version: "test"}
	pl, diags := p.Plan(context.Background(), cfg)
	if diags.HasErrors() || pl.Errored {
		t.Fatalf("%v %v", diags, pl.Errors)
	}
	return pl
}

const bootstrapRecipe = `
directory "ROOT/keys" {}
execute "keygen" {
  command = "printf k3y > ROOT/keys/api.key"
  creates = "ROOT/keys/api.key"
}
file "ROOT/app.conf" {
  content = lazy("key=${file("ROOT/keys/api.key")}\n")
  notifies "run" {
    resource = "execute[reload]"
  }
}
execute "start" {
  command = "touch ROOT/started"
  only_if = lazy("test -f ROOT/keys/api.key")
}
execute "reload" {
  command = "touch ROOT/reloaded"
  action  = "nothing"
}
`

// TestApplyEvaluatesWhatWasDeferred: values known at apply are evaluated
// right before their resource converges, after the earlier resource that
// makes what they read; guards decided at apply decide then; notifications
// follow what really changed.
func TestApplyEvaluatesWhatWasDeferred(t *testing.T) {
	root := t.TempDir()
	p := recipePlan(t, root, bootstrapRecipe)
	a, _ := newApplier(t, builtin.Registry())
	a.Resolver = eval.Resolver{}
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "app.conf")); got != "key=k3y\n" {
		t.Errorf("app.conf %q", got)
	}
	for _, f := range []string{"started", "reloaded"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	conf := resourceReport(t, rep, "file["+root+"/app.conf]")
	if conf.Outcome != OutcomeChanged || !reflect.DeepEqual(conf.KnownAtApply, []string{"content"}) || conf.DiffersFromPlan != "" {
		t.Errorf("app.conf: %+v", conf)
	}
	start := resourceReport(t, rep, "execute[start]")
	if start.Outcome != OutcomeChanged || len(start.DecidedAtApply) != 1 || !strings.HasSuffix(start.DecidedAtApply[0], "passed") {
		t.Errorf("start: %+v", start)
	}
}

// TestApplyRunTimeGuardSkips: a guard decided at apply that says skip
// skips its resource (as the plan said it might), and what it would have
// notified does not run.
func TestApplyRunTimeGuardSkips(t *testing.T) {
	root := t.TempDir()
	p := recipePlan(t, root, `
execute "maybe" {
  command = "true"
}
execute "start" {
  command = "touch ROOT/started"
  only_if = lazy("test -f ROOT/never")
  notifies "run" {
    resource = "execute[reload]"
  }
}
execute "reload" {
  command = "touch ROOT/reloaded"
  action  = "nothing"
}
`)
	a, _ := newApplier(t, builtin.Registry())
	a.Resolver = eval.Resolver{}
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	start := resourceReport(t, rep, "execute[start]")
	if start.Outcome != OutcomeSkipped || !strings.HasPrefix(start.Reason, "skipped: decided at apply: only_if `test -f") || start.DiffersFromPlan != "" {
		t.Errorf("start: %+v", start)
	}
	mustNotExist(t, filepath.Join(root, "started"))
	mustNotExist(t, filepath.Join(root, "reloaded"))
	if len(rep.Notified) != 1 || rep.Notified[0].Outcome != OutcomeNotNotified {
		t.Errorf("notified: %+v", rep.Notified)
	}
}

// TestApplyLazyFailure: a value known at apply that cannot be evaluated
// fails its resource, pointing at its expression; without an evaluator,
// such a resource fails too and nothing is written.
func TestApplyLazyFailure(t *testing.T) {
	root := t.TempDir()
	p := recipePlan(t, root, `
execute "maybe" {
  command = "true"
}
file "ROOT/app.conf" {
  content = lazy(file("ROOT/never"))
}
`)
	for _, withResolver := range []bool{true, false} {
		a, _ := newApplier(t, builtin.Registry())
		if withResolver {
			a.Resolver = eval.Resolver{}
		}
		rep, err := a.Apply(context.Background(), p)
		var re *ResourceError
		if !errors.As(err, &re) {
			t.Fatalf("got %v", err)
		}
		conf := resourceReport(t, rep, "file["+root+"/app.conf]")
		want := "a.hcl:6:18: content = lazy(…) could not be evaluated"
		if !withResolver {
			want = "nothing here can evaluate them"
		}
		if conf.Outcome != OutcomeFailed || !strings.Contains(conf.Error, want) {
			t.Errorf("resolver %v: %+v", withResolver, conf)
		}
		mustNotExist(t, filepath.Join(root, "app.conf"))
	}
}

// TestApplyStaleWithDeferred: pre-flight treats a value known at apply as
// unknown and leaves guards decided at apply alone, but still refuses a
// plan whose reading changed.
func TestApplyStaleWithDeferred(t *testing.T) {
	root := t.TempDir()
	p := recipePlan(t, root, bootstrapRecipe)
	// Made before any resource of the plan ran: the plan read nothing.
	writeFile(t, filepath.Join(root, "app.conf"), "someone else's\n")
	a, _ := newApplier(t, builtin.Registry())
	a.Resolver = eval.Resolver{}
	_, err := a.Apply(context.Background(), p)
	var se *StaleError
	if !errors.As(err, &se) || len(se.Resources) != 1 || se.Resources[0].Address != "file["+root+"/app.conf]" {
		t.Fatalf("got %v", err)
	}
	mustNotExist(t, filepath.Join(root, "keys"))
}
