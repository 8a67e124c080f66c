package systemd

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// boxSh runs a shell command in the container (the test runs there),
// failing the test when it fails.
func boxSh(t *testing.T, script string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// reloadUnit writes a unit whose ExecReload appends to log, and has
// systemd read it; it is not started.
func reloadUnit(t *testing.T, name, log string) {
	t.Helper()
	boxSh(t, `printf '[Service]\nExecStart=/bin/sleep 1000\nExecReload=/bin/sh -c "echo reloaded >> `+log+`"\n' > /etc/systemd/system/`+name+` && systemctl daemon-reload`)
	t.Cleanup(func() {
		exec.Command("sh", "-c", "systemctl stop "+name+"; rm -f /etc/systemd/system/"+name+" "+log+"; systemctl daemon-reload").Run()
	})
}

// A reload of a service that is not running does nothing (Chef's
// action_reload): the plan says so, with a no-op, so that nothing is
// counted as done and no notification fires. Planned from a state in
// which an earlier action starts it, or with the unit running, it is a
// run that reloads it. The reading is systemd's own, in the container.
func TestInBoxReloadOfAStoppedService(t *testing.T) {
	insideBox(t)
	typ := ServiceType()
	const unit, log = "toque-t-reload.service", "/run/toque-t-reload.log"
	reloadUnit(t, unit, log)
	reload := resourcetest.BuildRes(t, typ, unit, "reload", nil)

	st, step := resourcetest.Plan(t, typ, reload)
	if step.Kind != resources.NoOp || !strings.HasPrefix(step.Reason, "not running: nothing to reload") {
		t.Fatalf("reload of an inactive unit: %s %q, want a no-op: not running: nothing to reload", step.Kind, step.Reason)
	}
	if st.Extra[extraActive] != "inactive" {
		t.Errorf("reading %v", st.Extra)
	}
	// start, then reload: the reload is planned from the state start
	// leaves, and runs.
	start := resourcetest.BuildRes(t, typ, unit, "start", nil)
	sst, sstep := resourcetest.Plan(t, typ, start)
	next, err := typ.(resources.Predictor).Predict(start, sst, sstep)
	if err != nil {
		t.Fatal(err)
	}
	if rs, err := resources.PlanStep(typ, reload, next); err != nil || rs.Kind != resources.Run {
		t.Fatalf("reload after start: %+v, %v", rs, err)
	}

	boxSh(t, "systemctl start "+unit)
	st, step = resourcetest.Plan(t, typ, reload)
	if step.Kind != resources.Run {
		t.Fatalf("reload of a running unit: %s %q", step.Kind, step.Reason)
	}
	if err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), reload, st, step); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(log); string(got) != "reloaded\n" {
		t.Fatalf("ExecReload did not run: %q", got)
	}
	// Planned while it ran, carried out once it no longer does (someone
	// stopped it in between): the type does not claim a reload that did
	// not happen.
	boxSh(t, "systemctl stop "+unit)
	err = resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), reload, st, step)
	if err == nil {
		t.Errorf("a reload of a unit that stopped since it was read succeeded, and would be counted as done")
	} else if !strings.Contains(err.Error(), "inactive") && !strings.Contains(err.Error(), "not active") {
		t.Logf("reload of a stopped unit: %v", err)
	}
	if got, _ := os.ReadFile(log); string(got) != "reloaded\n" {
		t.Errorf("reload log %q", got)
	}
}

// A unit the host lacks: systemd says it cannot reload (CanReload=no),
// but that is not why a reload would fail: the plan needs the unit from
// an earlier resource, as for every action that acts on it. The actions
// after the first are planned from the unit that resource creates, so
// that a missing unit is one error, not one per action.
func TestInBoxMissingUnit(t *testing.T) {
	insideBox(t)
	typ := ServiceType()
	const unit = "toque-t-missing.service"
	if out := boxSh(t, "systemctl show -p LoadState,CanReload "+unit); out != "LoadState=not-found\nCanReload=no" {
		t.Errorf("systemd reads a missing unit as %q", out)
	}
	for _, action := range []string{"reload", "start", "restart", "enable"} {
		_, step := resourcetest.Plan(t, typ, resourcetest.BuildRes(t, typ, unit, action, nil))
		if !step.Kind.IsWork() || len(step.Needs) != 1 || step.Needs[0].Namespace != resources.NamespaceUnit || !strings.Contains(step.Reason, "not on the host yet") {
			t.Errorf("%s of a missing unit: %s %q, needs %+v", action, step.Kind, step.Reason, step.Needs)
		}
	}
	// enable, start, reload: one need, on the first.
	actions := []string{"enable", "start", "reload"}
	var needs []string
	st := resourcetest.Load(t, typ, resourcetest.BuildRes(t, typ, unit, actions[0], nil))
	for i, a := range actions {
		r := resourcetest.BuildRes(t, typ, unit, a, nil)
		step, err := resources.PlanStep(typ, r, st)
		if err != nil {
			t.Fatalf("%s (action %d of %d): %v", a, i+1, len(actions), err)
		}
		for _, n := range step.Needs {
			needs = append(needs, a+": "+n.Value)
		}
		if !step.Kind.IsWork() {
			t.Errorf("%s: %s %q", a, step.Kind, step.Reason)
		}
		if st, err = typ.(resources.Predictor).Predict(r, st, step); err != nil {
			t.Fatal(err)
		}
	}
	if len(needs) != 1 || needs[0] != "enable: "+unit {
		t.Errorf("needs %q, want the unit once, on enable", needs)
	}
}
