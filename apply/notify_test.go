package apply

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// edge adds a notification edge from notifier to target on p.
func edge(p *plan.Plan, notifier, target, action, timing string) {
	for _, r := range p.Resources {
		if r.Address == notifier {
			r.Notifications = append(r.Notifications, plan.Notification{Target: target, Action: action, Timing: timing})
		}
		if r.Address == target {
			r.NotifiedBy = append(r.NotifiedBy, plan.Trigger{Notifier: notifier, Action: action, Timing: timing})
		}
	}
}

// planRun adds a planned notified run of target, read and planned as the
// planner does, at the end of p.NotifiedRuns.
func planRun(t *testing.T, reg *resources.Registry, p *plan.Plan, target, action, timing string, slot int, before bool, notifiers ...string) {
	t.Helper()
	var pr *plan.Resource
	for _, r := range p.Resources {
		if r.Address == target {
			pr = r
		}
	}
	if pr == nil {
		t.Fatalf("no resource %s", target)
	}
	view := *pr
	view.Action = action
	typ, d, err := plan.DesiredResource(reg, &view)
	if err != nil {
		t.Fatal(err)
	}
	st, err := typ.Load(context.Background(), d.LoadView())
	if err != nil {
		t.Fatal(err)
	}
	step, err := resources.PlanStep(typ, d, st)
	if err != nil {
		t.Fatal(err)
	}
	cur := plan.StoreCurrent(typ.Schema(), st, p.Salt, false)
	nr := &plan.NotifiedRun{
		Address: target, Action: action, Timing: timing, Notifiers: notifiers, Slot: slot, Before: before,
		Kind: step.Kind, Groups: step.Groups, Current: cur, Fingerprint: cur.Fingerprint(),
	}
	nr.Reason = plan.NotifiedReason(notifiers, timing, step.Kind, step.Reason)
	for _, c := range step.Changes {
		nr.Changes = append(nr.Changes, plan.Change{Property: c.Property})
	}
	p.NotifiedRuns = append(p.NotifiedRuns, nr)
}

func nothing(s spec) spec {
	s.action = "nothing"
	return s
}

// makeNotifyPlan is makePlan, with resources whose action is nothing
// planned as the planner does: a no-op, not read.
func makeNotifyPlan(t *testing.T, reg *resources.Registry, specs ...spec) *plan.Plan {
	t.Helper()
	p := makePlan(t, reg, specs...)
	for _, r := range p.Resources {
		if r.Action == "nothing" {
			r.Kind, r.Reason, r.Current, r.Fingerprint, r.Changes, r.Groups = resources.NoOp, plan.ReasonNothing, nil, "", nil, nil
		}
	}
	return p
}

func notified(rep *Report) map[string]ResourceReport {
	out := map[string]ResourceReport{}
	for _, rr := range rep.Notified {
		out[rr.Address] = rr
	}
	return out
}

func TestNotificationTimings(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	echo := func(name string) spec { return tscript(name, "echo "+name+" >> "+log) }
	reg := testRegistry()
	p := makeNotifyPlan(t, reg, echo("n"), echo("x"), nothing(echo("b")), nothing(echo("i")), nothing(echo("d")))
	edge(p, "tscript[n]", "tscript[b]", "run", "before")
	edge(p, "tscript[n]", "tscript[i]", "run", "immediately")
	edge(p, "tscript[n]", "tscript[d]", "run", "delayed")
	planRun(t, reg, p, "tscript[b]", "run", "before", 0, true, "tscript[n]")
	planRun(t, reg, p, "tscript[i]", "run", "immediately", 0, false, "tscript[n]")
	planRun(t, reg, p, "tscript[d]", "run", "delayed", len(p.Resources), false, "tscript[n]")

	a, h := newApplier(t, reg)
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, log), "b\nn\ni\nx\nd\n"; got != want {
		t.Fatalf("ran in order %q, want %q", got, want)
	}
	if got := strings.Join(h.Events(), "; "); !strings.Contains(got, "pre tscript[b]; post tscript[b] changed; pre tscript[n]") {
		t.Errorf("hooks: %s", got)
	}
	n := notified(rep)
	for _, addr := range []string{"tscript[b]", "tscript[i]", "tscript[d]"} {
		if n[addr].Outcome != OutcomeChanged {
			t.Errorf("%s: outcome %q, want changed", addr, n[addr].Outcome)
		}
	}
	if r := n["tscript[d]"].Reason; r != "notified by tscript[n] (delayed)" {
		t.Errorf("reason %q", r)
	}
	// b, i, d ran (by notification), n and x changed: 5 changed, none
	// counted as unchanged.
	if rep.Changed != 5 || rep.Unchanged != 0 {
		t.Errorf("changed %d, unchanged %d; want 5, 0", rep.Changed, rep.Unchanged)
	}
}

func TestDelayedNotificationsAreDeduplicated(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	echo := func(name string) spec { return tscript(name, "echo "+name+" >> "+log) }
	reg := testRegistry()
	p := makeNotifyPlan(t, reg, echo("n1"), echo("n2"), nothing(echo("d")))
	edge(p, "tscript[n1]", "tscript[d]", "run", "delayed")
	edge(p, "tscript[n2]", "tscript[d]", "run", "delayed")
	planRun(t, reg, p, "tscript[d]", "run", "delayed", len(p.Resources), false, "tscript[n1]", "tscript[n2]")

	a, _ := newApplier(t, reg)
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, log), "n1\nn2\nd\n"; got != want {
		t.Fatalf("ran %q, want %q", got, want)
	}
	if len(rep.Notified) != 1 || rep.Notified[0].Reason != "notified by tscript[n1] and tscript[n2] (delayed)" {
		t.Errorf("notified: %+v", rep.Notified)
	}
}

func TestDelayedNotificationsRunAfterAFailure(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	echo := func(name string) spec { return tscript(name, "echo "+name+" >> "+log) }
	reg := testRegistry()
	p := makeNotifyPlan(t, reg, echo("n"), tscript("fail", "exit 3"), echo("after"), nothing(echo("d")))
	edge(p, "tscript[n]", "tscript[d]", "run", "delayed")
	planRun(t, reg, p, "tscript[d]", "run", "delayed", len(p.Resources), false, "tscript[n]")

	a, h := newApplier(t, reg)
	rep, err := a.Apply(context.Background(), p)
	var re *ResourceError
	if !errors.As(err, &re) || re.Address != "tscript[fail]" {
		t.Fatalf("err = %v, want the failure of tscript[fail]", err)
	}
	if got, want := readFile(t, log), "n\nd\n"; got != want {
		t.Fatalf("ran %q, want %q (the delayed run, not the resource after the failure)", got, want)
	}
	ev := strings.Join(h.Events(), "; ")
	if !strings.Contains(ev, "post tscript[fail] failed; pre tscript[d]; post tscript[d] changed") {
		t.Errorf("the delayed run should follow the failure: %s", ev)
	}
	if o := outcomes(rep)["tscript[after]"]; o != OutcomeNotStarted {
		t.Errorf("tscript[after]: %q", o)
	}
	if rep.Failed != 1 || notified(rep)["tscript[d]"].Outcome != OutcomeChanged {
		t.Errorf("report: failed %d, notified %+v", rep.Failed, rep.Notified)
	}
}

func TestFailingImmediateNotificationStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	reg := testRegistry()
	p := makeNotifyPlan(t, reg, tscript("n", "echo n >> "+log), tscript("x", "echo x >> "+log), nothing(tscript("bad", "exit 4")))
	edge(p, "tscript[n]", "tscript[bad]", "run", "immediately")
	planRun(t, reg, p, "tscript[bad]", "run", "immediately", 0, false, "tscript[n]")
	a, _ := newApplier(t, reg)
	rep, err := a.Apply(context.Background(), p)
	var re *ResourceError
	if !errors.As(err, &re) || re.Address != "tscript[bad]" {
		t.Fatalf("err = %v", err)
	}
	if got := readFile(t, log); got != "n\n" {
		t.Errorf("ran %q: the run should stop after the failed notification", got)
	}
	if notified(rep)["tscript[bad]"].Outcome != OutcomeFailed {
		t.Errorf("notified: %+v", rep.Notified)
	}
}

func TestNotifierThatDoesNotChangeFiresNothing(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	target := filepath.Join(dir, "conf")
	reg := testRegistry()
	p := makeNotifyPlan(t, reg, tfile(target, "v2\n"), nothing(tscript("reload", "echo reload >> "+log)))
	edge(p, "tfile["+target+"]", "tscript[reload]", "run", "delayed")
	planRun(t, reg, p, "tscript[reload]", "run", "delayed", len(p.Resources), false, "tfile["+target+"]")
	// Someone (an earlier, interrupted run of this plan) did the work.
	writeFile(t, target, "v2\n")

	a, _ := newApplier(t, reg)
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, log)
	rr := notified(rep)["tscript[reload]"]
	if rr.Outcome != OutcomeNotNotified || !strings.Contains(rr.Reason, "tfile["+target+"] did not change (already done)") {
		t.Errorf("notified: %+v", rr)
	}
}

func TestNotifiedRunNotInThePlanIsRefused(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	reg := testRegistry()
	p := makeNotifyPlan(t, reg, tscript("n", "true"), nothing(tscript("d", "echo d >> "+log)))
	edge(p, "tscript[n]", "tscript[d]", "run", "immediately")
	// No planned run: the plan never showed tscript[d] running.
	a, _ := newApplier(t, reg)
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, log)
	if rr := notified(rep)["tscript[d]"]; rr.Outcome != OutcomeRefused {
		t.Errorf("notified: %+v", rep.Notified)
	}
}

func TestNotificationFollowsTheLiveTruth(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	target := filepath.Join(dir, "conf")
	reg := testRegistry()
	// tscript[w] makes the file that tfile was planned to create: the
	// template turns into an update, still a change, so reload runs and
	// the report says the notifier differed from the plan.
	p := makeNotifyPlan(t, reg, tscript("w", "printf old > "+target), tfile(target, "new\n"), nothing(tscript("reload", "echo reload >> "+log)))
	addr := "tfile[" + target + "]"
	edge(p, addr, "tscript[reload]", "run", "delayed")
	planRun(t, reg, p, "tscript[reload]", "run", "delayed", len(p.Resources), false, addr)

	a, _ := newApplier(t, reg)
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, log); got != "reload\n" {
		t.Fatalf("reload ran %q", got)
	}
	if rr := resourceReport(t, rep, addr); rr.DiffersFromPlan == "" {
		t.Errorf("%s should differ from plan: %+v", addr, rr)
	}
	if rr := notified(rep)["tscript[reload]"]; !strings.Contains(rr.DiffersFromPlan, "notified because "+addr+" changed") {
		t.Errorf("notified: %+v", rr)
	}
}

func TestStaleNotifiedTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "conf")
	reg := testRegistry()
	p := makeNotifyPlan(t, reg, tscript("n", "true"), nothing(tfile(target, "x\n")))
	edge(p, "tscript[n]", "tfile["+target+"]", "create", "delayed")
	planRun(t, reg, p, "tfile["+target+"]", "create", "delayed", len(p.Resources), false, "tscript[n]")
	writeFile(t, target, "x\n") // the notified create is now a no-op: the plan is stale
	a, _ := newApplier(t, reg)
	_, err := a.Apply(context.Background(), p)
	var se *StaleError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a stale plan", err)
	}
}
