package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stepsRecipe has unguarded execute resources that each append their
// number to ROOT/runs.log: running one twice shows in the log.
// With ROOT/arm present, step-2 makes step-3's guard slow (it always
// passes), so that a test can kill toque between step-2 and step-3: while
// step-3's guard runs, right before it would start. With ROOT/hold
// present, step-2 itself is slow instead.
const stepsRecipe = `
execute "step-1" { command = "echo 1 >> ROOT/runs.log" }
execute "step-2" { command = "echo 2 >> ROOT/runs.log; if [ -e ROOT/arm ]; then touch ROOT/slow; fi; if [ -e ROOT/hold ]; then sleep 5; fi" }
execute "step-3" {
  command = "echo 3 >> ROOT/runs.log"
  only_if = "if [ -e ROOT/slow ]; then sleep 5; fi; true"
}
file "ROOT/done.txt" { content = "done\n" }
execute "step-4" { command = "echo 4 >> ROOT/runs.log" }
`

// killApplyAt starts apply plan.out and kills it with SIGKILL as soon as
// its progress prints a line containing marker.
func (e *env) killApplyAt(marker string) {
	e.t.Helper()
	cmd := e.binCmd("-chdir="+e.dir, "apply", "plan.out")
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), marker) {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		e.t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		e.t.Fatalf("apply was not killed at %q (%v); it printed:\n%s", marker, err, strings.Join(seen, "\n"))
	}
	e.waitUnlocked()
}

// waitUnlocked polls until the state directory's apply lock is free. A
// command toque was starting when it was killed holds a copy of the lock's
// descriptor until it has exec'd or died: a few milliseconds on a busy
// machine, in which the next apply would find the lock held.
func (e *env) waitUnlocked() {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := os.Open(filepath.Join(e.state, "apply.lock"))
		if os.IsNotExist(err) {
			return
		}
		if err != nil {
			e.t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close() // releases the lock we took, if we took it
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the killed apply's lock is still held after 5 s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) runsLog() string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, "runs.log"))
	if err != nil && !os.IsNotExist(err) {
		e.t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// TestE2EKilledApplyResumesWithoutRerunningExecutes kills an apply with
// SIGKILL between two resources, while it was appending to its journal,
// then applies the same plan again: the executes that ran do not run
// again, the rest do, and a third apply is refused.
func TestE2EKilledApplyResumesWithoutRerunningExecutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("steps.hcl", stepsRecipe)
	e.must(0, "plan", "-out=plan.out")
	e.write("arm", "", 0o644)

	start := time.Now()
	e.killApplyAt("execute[step-2]: Run complete")
	if time.Since(start) > 4*time.Second {
		t.Errorf("the kill did not land while step-3's guard ran (%v)", time.Since(start))
	}
	if got := e.runsLog(); got != "1 2" {
		t.Fatalf("before the kill: runs %q", got)
	}
	journals, _ := filepath.Glob(filepath.Join(e.state, "journal", "sha256-*.jsonl"))
	if len(journals) != 1 {
		t.Fatalf("journals %v", journals)
	}
	// As if the kill had also cut the journal's last line in half.
	f, err := os.OpenFile(journals[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"event":"resource_start","time":"2025-`)
	f.Close()
	for _, f := range []string{"arm", "slow"} { // no need to wait for step-3's guard now
		os.Remove(filepath.Join(e.root, f))
	}

	r := e.must(0, "apply", "plan.out")
	if got := e.runsLog(); got != "1 2 3 4" {
		t.Errorf("after the resumed apply: runs %q, want each step once", got)
	}
	for _, want := range []string{
		"execute[step-1]: changed by an earlier apply of this plan at ",
		"execute[step-2]: changed by an earlier apply of this plan at ",
		"Resumed an unfinished apply of this plan: 2 steps it had finished were not done again.",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("resumed apply output lacks %q:\n%s", want, r)
		}
	}
	if !strings.Contains(r.stderr, "Warning: Ignored an unfinished line at the end of the apply journal") {
		t.Errorf("no warning about the cut journal line:\n%s", r)
	}
	if e.read("done.txt") != "done\n" {
		t.Error("done.txt not written")
	}

	r = e.must(6, "apply", "plan.out")
	if stderr := strings.Join(strings.Fields(r.stderr), " "); !strings.Contains(stderr, "The plan was already applied") || !strings.Contains(stderr, "run toque plan and review the new plan") {
		t.Errorf("replay refusal:\n%s", r)
	}
	r = e.must(6, "apply", "-json", "plan.out")
	if ev := lastEvent(t, r.stdout); ev["error_kind"] != "already_applied" || ev["exit_code"] != 6.0 {
		t.Errorf("JSON replay refusal: %v", ev)
	}
	if got := e.runsLog(); got != "1 2 3 4" {
		t.Errorf("a replay ran steps: %q", got)
	}

	// A new plan is a new decision: it runs the unguarded executes again.
	e.must(0, "plan", "-out=plan2.out")
	e.must(0, "apply", "plan2.out")
	if got := e.runsLog(); got != "1 2 3 4 1 2 3 4" {
		t.Errorf("the new plan: runs %q", got)
	}
}

// TestE2EExecuteKilledWhileRunningMakesThePlanStale: an execute that was
// running when apply was killed may or may not have done its work, so
// the plan is refused as stale rather than run it again or skip it.
func TestE2EExecuteKilledWhileRunningMakesThePlanStale(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("steps.hcl", stepsRecipe)
	e.write("hold", "", 0o644)
	e.must(0, "plan", "-out=plan.out")
	e.killApplyAt("execute[step-2]: Running")
	before := e.runsLog()
	if before != "1 2" && before != "1" {
		t.Fatalf("before the kill: runs %q", before)
	}

	r := e.must(3, "apply", "plan.out")
	for _, want := range []string{"The plan is stale", "execute[step-2]: an earlier apply of this plan started it at", "may or may not have run", "run toque plan again"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("refusal lacks %q:\n%s", want, r)
		}
	}
	if got := e.runsLog(); got != before {
		t.Errorf("the refused apply ran steps: %q", got)
	}
}
