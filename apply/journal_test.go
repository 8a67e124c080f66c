package apply

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/plan"
)

// journalPath is where a's journal of p lives.
func journalPath(t *testing.T, a *Applier, p *plan.Plan) string {
	t.Helper()
	name, err := journalFile(p.Digest())
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(a.StateDir, journalDirName, name)
}

// journalLines decodes every line of a journal, failing on one that is not
// a JSON object.
func journalLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the journal does not end with a newline: %q", b)
	}
	return out
}

// counter is a log file each script appends its name to.
type counter string

func (c counter) script(name string) spec {
	return tscript(name, "echo "+name+" >> "+string(c))
}

func (c counter) runs(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(string(c))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", " ")
}

func TestFinishedPlanIsNotAppliedAgain(t *testing.T) {
	log := counter(filepath.Join(t.TempDir(), "log"))
	a, h := newApplier(t, testRegistry())
	p := makePlan(t, a.Registry, log.script("migrate"))
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.PlanFinished || rep.Resumed {
		t.Errorf("report: finished %v, resumed %v", rep.PlanFinished, rep.Resumed)
	}
	path := journalPath(t, a, p)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal %v, %v; want a 0600 file", fi, err)
	}
	// Compacted to the header and the end.
	lines := journalLines(t, path)
	if len(lines) != 2 || lines[0]["plan_digest"] != p.Digest() || lines[1]["event"] != evApplyEnd || lines[1]["finished"] != true || lines[1]["report"] != rep.Path {
		t.Errorf("finished journal: %v", lines)
	}

	for i := 0; i < 2; i++ {
		rep, err := a.Apply(context.Background(), p)
		var aa *AlreadyAppliedError
		if !errors.As(err, &aa) || rep != nil {
			t.Fatalf("replay %d: %v, want *AlreadyAppliedError", i, err)
		}
		if aa.PlanDigest != p.Digest() || aa.At.IsZero() || aa.Report == "" || aa.Journal != path {
			t.Errorf("already applied: %+v", aa)
		}
		if !strings.Contains(err.Error(), "already applied at ") || !strings.Contains(err.Error(), "run toque plan again") {
			t.Errorf("message %q", err)
		}
	}
	if got := log.runs(t); got != "migrate" {
		t.Errorf("runs %q, want migrate once", got)
	}
	if n := len(h.Events()); n != 2 {
		t.Errorf("the replays ran hooks: %q", h.Events())
	}
}

func TestStoppedApplyResumesWhatItDidNotDo(t *testing.T) {
	log := counter(filepath.Join(t.TempDir(), "log"))
	a, h := newApplier(t, testRegistry())
	stop := make(chan struct{})
	a.Stop = stop
	h.onPre = func(r *plan.Resource) {
		if r.Address == "tscript[one]" {
			close(stop)
		}
	}
	p := makePlan(t, a.Registry, log.script("one"), log.script("two"), log.script("three"))
	rep, err := a.Apply(context.Background(), p)
	var ie *InterruptedError
	if !errors.As(err, &ie) || rep.PlanFinished {
		t.Fatalf("first apply: %v (finished %v), want interrupted", err, rep.PlanFinished)
	}
	if got := log.runs(t); got != "one" {
		t.Fatalf("runs %q", got)
	}

	h.onPre, a.Stop = nil, nil
	rep, err = a.Apply(context.Background(), p)
	if err != nil {
		t.Fatalf("resumed apply: %v", err)
	}
	if got := log.runs(t); got != "one two three" {
		t.Errorf("runs %q: every script once", got)
	}
	want := map[string]string{"tscript[one]": OutcomeDoneEarlier, "tscript[two]": OutcomeChanged, "tscript[three]": OutcomeChanged}
	if got := outcomes(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes %v", got)
	}
	if !rep.Resumed || !rep.PlanFinished || rep.DoneEarlier != 1 || rep.Changed != 2 {
		t.Errorf("report: resumed %v finished %v done earlier %d changed %d", rep.Resumed, rep.PlanFinished, rep.DoneEarlier, rep.Changed)
	}
	if r := resourceReport(t, rep, "tscript[one]").Reason; !strings.HasPrefix(r, "changed by an earlier apply of this plan at ") {
		t.Errorf("reason %q", r)
	}
	if ev := strings.Join(h.Events(), "; "); !strings.Contains(ev, "earlier tscript[one] done earlier; pre tscript[two]") || strings.Count(ev, "pre tscript[one]") != 1 {
		t.Errorf("hooks %q", ev)
	}
	var aa *AlreadyAppliedError
	if _, err := a.Apply(context.Background(), p); !errors.As(err, &aa) {
		t.Errorf("third apply: %v, want already applied", err)
	}
}

func TestFailedApplyRetriesOnlyTheFailure(t *testing.T) {
	dir := t.TempDir()
	log := counter(filepath.Join(dir, "log"))
	fixed := filepath.Join(dir, "fixed")
	a, _ := newApplier(t, testRegistry())
	ignored := tscript("flaky", "echo flaky >> "+string(log)+"; exit 1")
	ignored.ignoreFailure = true
	p := makePlan(t, a.Registry,
		log.script("one"),
		ignored,
		tscript("needs-fix", "test -e "+fixed+" && echo needs-fix >> "+string(log)),
		log.script("last"))

	rep, err := a.Apply(context.Background(), p)
	var re *ResourceError
	if !errors.As(err, &re) || re.Address != "tscript[needs-fix]" || rep.PlanFinished {
		t.Fatalf("first apply: %v", err)
	}
	if got := log.runs(t); got != "one flaky" {
		t.Fatalf("runs %q", got)
	}

	writeFile(t, fixed, "")
	rep, err = a.Apply(context.Background(), p)
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	// The scripts that ran are not run again, an ignored failure neither;
	// the failed one is retried, and the rest run.
	if got := log.runs(t); got != "one flaky needs-fix last" {
		t.Errorf("runs %q", got)
	}
	want := map[string]string{"tscript[one]": OutcomeDoneEarlier, "tscript[flaky]": OutcomeDoneEarlier, "tscript[needs-fix]": OutcomeChanged, "tscript[last]": OutcomeChanged}
	if got := outcomes(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes %v", got)
	}
	if r := resourceReport(t, rep, "tscript[flaky]").Reason; !strings.HasPrefix(r, "failed (ignored) by an earlier apply") {
		t.Errorf("reason %q", r)
	}
}

// killedJournal writes the journal an apply killed while tscript index i
// ran would leave: started, no end.
func killedJournal(t *testing.T, a *Applier, p *plan.Plan, done []int, running int, aborted bool) {
	t.Helper()
	state, err := OpenStateDir(a.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	j, err := openJournal(state, p, p.Digest(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if err := j.begin(); err != nil {
		t.Fatal(err)
	}
	for _, i := range done {
		ref := stepRef{index: i}
		pr := p.Resources[i]
		if err := errors.Join(j.started(ref, pr.Address, pr.Kind), j.ended(ref, pr.Address, pr.Kind, OutcomeChanged, nil)); err != nil {
			t.Fatal(err)
		}
	}
	pr := p.Resources[running]
	if err := j.started(stepRef{index: running}, pr.Address, pr.Kind); err != nil {
		t.Fatal(err)
	}
	if aborted {
		if err := j.ended(stepRef{index: running}, pr.Address, pr.Kind, journalAborted, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRunInDoubtMakesThePlanStale(t *testing.T) {
	for _, aborted := range []bool{false, true} {
		name := "killed"
		if aborted {
			name = "aborted"
		}
		t.Run(name, func(t *testing.T) {
			log := counter(filepath.Join(t.TempDir(), "log"))
			a, h := newApplier(t, testRegistry())
			p := makePlan(t, a.Registry, log.script("one"), log.script("migrate"), log.script("three"))
			killedJournal(t, a, p, []int{0}, 1, aborted)

			rep, err := a.Apply(context.Background(), p)
			var se *StaleError
			if !errors.As(err, &se) || rep != nil {
				t.Fatalf("Apply: %v, want *StaleError", err)
			}
			if len(se.Resources) != 1 || se.Resources[0].Address != "tscript[migrate]" || se.Resources[0].StartedEarlier.IsZero() {
				t.Errorf("stale: %+v", se.Resources)
			}
			if !strings.Contains(err.Error(), "may or may not have run") {
				t.Errorf("message %q", err)
			}
			if got := log.runs(t); got != "" || len(h.Events()) != 0 {
				t.Errorf("something ran: %q %q", got, h.Events())
			}
		})
	}
}

func TestDamagedJournal(t *testing.T) {
	cases := []struct {
		name string
		// damage writes to the journal path of plan p after one resource
		// of three was done; "" content means the test writes nothing.
		damage func(t *testing.T, path string, p *plan.Plan)
		// wantErr is "" when the apply must resume with a warning.
		wantErr string
	}{
		{"an unfinished last line", func(t *testing.T, path string, _ *plan.Plan) {
			appendTo(t, path, `{"event":"resource_end","time":"2025-01-02T03:04:05Z","index":1,"addr`)
		}, ""},
		{"not toque's", func(t *testing.T, path string, _ *plan.Plan) {
			writeFile(t, path, "{\"hello\":1}\n")
		}, "not a toque apply journal"},
		{"not JSON at all", func(t *testing.T, path string, _ *plan.Plan) {
			writeFile(t, path, "#!/bin/sh\nrm -rf /\n")
		}, "not a toque apply journal"},
		{"another plan's", func(t *testing.T, path string, _ *plan.Plan) {
			b := readFile(t, path)
			writeFile(t, path, strings.Replace(b, `"plan_digest":"sha256:`, `"plan_digest":"sha256:0`, 1))
		}, "not of this plan"},
		{"a later format", func(t *testing.T, path string, _ *plan.Plan) {
			b := readFile(t, path)
			writeFile(t, path, strings.Replace(b, `{"toque_journal":1`, `{"toque_journal":2`, 1))
		}, "journal format 2"},
		{"a damaged line before the last", func(t *testing.T, path string, p *plan.Plan) {
			lines := strings.SplitAfter(readFile(t, path), "\n")
			lines[1] = "garbage\n"
			writeFile(t, path, strings.Join(lines, ""))
		}, "line 2: not a journal event"},
		{"an event for another resource", func(t *testing.T, path string, p *plan.Plan) {
			appendTo(t, path, `{"event":"resource_end","time":"2025-01-02T03:04:05Z","index":2,"address":"tscript[one]","outcome":"changed"}`+"\n")
		}, `where the plan has "tscript[three]"`},
		{"an index past the plan", func(t *testing.T, path string, p *plan.Plan) {
			appendTo(t, path, `{"event":"notified_end","time":"2025-01-02T03:04:05Z","index":0,"address":"x","outcome":"changed"}`+"\n")
		}, "notified run 0, but the plan has 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := counter(filepath.Join(t.TempDir(), "log"))
			a, h := newApplier(t, testRegistry())
			p := makePlan(t, a.Registry, log.script("one"), log.script("two"), log.script("three"))
			killedJournal(t, a, p, []int{0}, 1, false)
			// The second script's start was not written after all: the kill
			// came between the first and the second.
			path := journalPath(t, a, p)
			lines := strings.SplitAfter(readFile(t, path), "\n")
			writeFile(t, path, strings.Join(lines[:len(lines)-2], ""))
			c.damage(t, path, p)

			rep, err := a.Apply(context.Background(), p)
			if c.wantErr != "" {
				var je *JournalError
				if !errors.As(err, &je) || !strings.Contains(err.Error(), c.wantErr) || je.Path != path {
					t.Fatalf("Apply: %v, want a *JournalError for %s saying %q", err, path, c.wantErr)
				}
				if got := log.runs(t); got != "" || len(h.Events()) != 0 || rep != nil {
					t.Errorf("something ran despite the damaged journal: %q %q", got, h.Events())
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got := log.runs(t); got != "two three" {
				t.Errorf("runs %q", got)
			}
			ev := h.Events()
			if len(ev) == 0 || !strings.HasPrefix(ev[0], "warning ignored an unfinished last line of the apply journal "+path) {
				t.Errorf("no warning first: %q", ev)
			}
			journalLines(t, path) // every line whole again
		})
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestJournalThatIsALinkIsRefused(t *testing.T) {
	a, _ := newApplier(t, testRegistry())
	f := filepath.Join(t.TempDir(), "f")
	p := makePlan(t, a.Registry, tfile(f, "x"))
	path := journalPath(t, a, p)
	mkdirMode(t, filepath.Dir(path), 0o700)
	mkdirMode(t, a.StateDir, 0o700)
	sentinel := filepath.Join(t.TempDir(), "sentinel")
	writeFile(t, sentinel, "keep\n")
	symlink(t, sentinel, path)
	_, err := a.Apply(context.Background(), p)
	mustUntrusted(t, err, path, "symbolic link")
	mustNotExist(t, f)
	if got := readFile(t, sentinel); got != "keep\n" {
		t.Errorf("sentinel %q", got)
	}
}

func TestNotifiedRunsResume(t *testing.T) {
	t.Run("a delayed run queued before the stop runs once", func(t *testing.T) {
		log := counter(filepath.Join(t.TempDir(), "log"))
		reg := testRegistry()
		p := makeNotifyPlan(t, reg, log.script("n"), log.script("x"), nothing(log.script("d")))
		edge(p, "tscript[n]", "tscript[d]", "run", "delayed")
		planRun(t, reg, p, "tscript[d]", "run", "delayed", len(p.Resources), false, "tscript[n]")
		a, h := newApplier(t, reg)
		stop := make(chan struct{})
		a.Stop = stop
		h.onPre = func(r *plan.Resource) {
			if r.Address == "tscript[n]" {
				close(stop)
			}
		}
		if _, err := a.Apply(context.Background(), p); err == nil {
			t.Fatal("the first apply was not stopped")
		}
		if got := log.runs(t); got != "n" {
			t.Fatalf("runs %q: the delayed queue does not run after a stop", got)
		}
		h.onPre, a.Stop = nil, nil
		rep, err := a.Apply(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if got := log.runs(t); got != "n x d" {
			t.Errorf("runs %q: n's change still owes its delayed run", got)
		}
		if o := notified(rep)["tscript[d]"].Outcome; o != OutcomeChanged {
			t.Errorf("d: %q", o)
		}
	})
	t.Run("a run done after a failure is not run again", func(t *testing.T) {
		dir := t.TempDir()
		log := counter(filepath.Join(dir, "log"))
		fixed := filepath.Join(dir, "fixed")
		reg := testRegistry()
		p := makeNotifyPlan(t, reg, log.script("n"), tscript("fail", "test -e "+fixed), log.script("x"), nothing(log.script("d")))
		edge(p, "tscript[n]", "tscript[d]", "run", "delayed")
		planRun(t, reg, p, "tscript[d]", "run", "delayed", len(p.Resources), false, "tscript[n]")
		a, _ := newApplier(t, reg)
		if _, err := a.Apply(context.Background(), p); err == nil {
			t.Fatal("the first apply did not fail")
		}
		if got := log.runs(t); got != "n d" {
			t.Fatalf("runs %q: delayed runs follow a failure", got)
		}
		writeFile(t, fixed, "")
		rep, err := a.Apply(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if got := log.runs(t); got != "n d x" {
			t.Errorf("runs %q: d ran for n already", got)
		}
		if o := notified(rep)["tscript[d]"].Outcome; o != OutcomeDoneEarlier {
			t.Errorf("d: %q", o)
		}
	})
	t.Run("a new notifier runs it again", func(t *testing.T) {
		dir := t.TempDir()
		log := counter(filepath.Join(dir, "log"))
		fixed := filepath.Join(dir, "fixed")
		reg := testRegistry()
		// n1 and n2 both notify d; n2 fails the first time.
		p := makeNotifyPlan(t, reg, log.script("n1"), tscript("n2", "test -e "+fixed+" && echo n2 >> "+string(log)), nothing(log.script("d")))
		edge(p, "tscript[n1]", "tscript[d]", "run", "delayed")
		edge(p, "tscript[n2]", "tscript[d]", "run", "delayed")
		planRun(t, reg, p, "tscript[d]", "run", "delayed", len(p.Resources), false, "tscript[n1]", "tscript[n2]")
		a, _ := newApplier(t, reg)
		if _, err := a.Apply(context.Background(), p); err == nil {
			t.Fatal("the first apply did not fail")
		}
		writeFile(t, fixed, "")
		if _, err := a.Apply(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		// d ran after n1's change, and again after n2's.
		if got := log.runs(t); got != "n1 d n2 d" {
			t.Errorf("runs %q", got)
		}
	})
}

func TestOldPlanWithoutJournalIsRefused(t *testing.T) {
	a, h := newApplier(t, testRegistry())
	f := filepath.Join(t.TempDir(), "f")
	p := makePlan(t, a.Registry, tfile(f, "x"))
	p.CreatedAt = time.Now().Add(-JournalRetention - time.Hour)
	_, err := a.Apply(context.Background(), p)
	var old *PlanTooOldError
	if !errors.As(err, &old) || !strings.Contains(err.Error(), "more than 30 days ago") {
		t.Fatalf("Apply: %v, want *PlanTooOldError", err)
	}
	mustNotExist(t, f)
	if len(h.Events()) != 0 {
		t.Errorf("hooks ran: %q", h.Events())
	}
}

func TestJournalsArePruned(t *testing.T) {
	a, _ := newApplier(t, testRegistry())
	dir := filepath.Join(a.StateDir, journalDirName)
	mkdirMode(t, dir, 0o700)
	oldTime := time.Now().Add(-JournalRetention - 24*time.Hour)
	old := filepath.Join(dir, "sha256-"+strings.Repeat("a", 64)+".jsonl")
	oldTmp := filepath.Join(dir, ".sha256-"+strings.Repeat("b", 64)+".jsonl.tmp-0123")
	recent := filepath.Join(dir, "sha256-"+strings.Repeat("c", 64)+".jsonl")
	other := filepath.Join(dir, "notes.txt")
	for _, f := range []string{old, oldTmp, recent, other} {
		writeFile(t, f, "x\n")
	}
	for _, f := range []string{old, oldTmp, other} {
		if err := os.Chtimes(f, oldTime, oldTime); err != nil {
			t.Fatal(err)
		}
	}
	p := makePlan(t, a.Registry, tfile(filepath.Join(t.TempDir(), "f"), "x"))
	if _, err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, old)
	mustNotExist(t, oldTmp)
	for _, f := range []string{recent, other, journalPath(t, a, p)} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s was pruned: %v", f, err)
		}
	}
}

// TestApplyThatCannotRecordStops fills the disk under the journal (its
// descriptor is pointed at /dev/full) while the first script runs: the
// apply must stop before the next step, and the next apply must refuse to
// guess whether that script ran.
func TestApplyThatCannotRecordStops(t *testing.T) {
	testenv.MustHave(t, testenv.DevFull)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	log := counter(filepath.Join(t.TempDir(), "log"))
	a, h := newApplier(t, testRegistry())
	p := makePlan(t, a.Registry, log.script("one"), log.script("two"))
	journal := journalPath(t, a, p)
	h.onPre = func(r *plan.Resource) {
		if r.Address != "tscript[one]" {
			return
		}
		fds, _ := filepath.Glob("/proc/self/fd/*")
		for _, fd := range fds {
			if target, _ := os.Readlink(fd); target == journal {
				n, _ := strconv.Atoi(filepath.Base(fd))
				if err := syscall.Dup2(int(full.Fd()), n); err != nil {
					t.Error(err)
				}
				return
			}
		}
		t.Error("the journal is not open while a resource runs")
	}
	rep, err := a.Apply(context.Background(), p)
	var je *JournalError
	if !errors.As(err, &je) || !strings.Contains(err.Error(), "cannot record this apply's progress") {
		t.Fatalf("Apply: %v, want a *JournalError", err)
	}
	if got := log.runs(t); got != "one" {
		t.Errorf("runs %q: nothing may run once progress cannot be recorded", got)
	}
	if rep == nil || rep.PlanFinished || outcomes(rep)["tscript[two]"] != OutcomeNotStarted {
		t.Errorf("report %+v", rep)
	}
	if ev := strings.Join(h.Events(), "; "); !strings.Contains(ev, "warning apply journal") {
		t.Errorf("the failed end record was not warned about: %s", ev)
	}

	h.onPre = nil
	_, err = a.Apply(context.Background(), p)
	var se *StaleError
	if !errors.As(err, &se) || se.Resources[0].Address != "tscript[one]" {
		t.Fatalf("next apply: %v, want tscript[one] in doubt", err)
	}
	if got := log.runs(t); got != "one" {
		t.Errorf("runs %q", got)
	}
}
