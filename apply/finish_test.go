package apply

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/plan"
)

// TestFinishPhase holds Apply's last phase alone, after a loop that did
// nothing: what the report says, that it is written, and whether the
// journal leaves the plan to resume or refuses it as applied.
func TestFinishPhase(t *testing.T) {
	loopFailed := errors.New("the loop failed")
	cases := []struct {
		name        string
		runErr      error
		interrupted bool
		finished    bool // the plan is finished: applying it again is refused
	}{
		{"the loop ended", nil, false, true},
		{"the loop failed", loopFailed, false, false},
		{"the loop was interrupted", nil, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a, _ := newApplier(t, testRegistry())
			// The loop did nothing: the end-state check (tested in
			// endstate_test.go) would say so.
			a.SkipVerify = true
			writeFile(t, filepath.Join(dir, "same"), "same")
			r, rep, _ := beginConverge(t, context.Background(), a,
				tfile(filepath.Join(dir, "new"), "x"), tscript("s", "true"), tfile(filepath.Join(dir, "same"), "same"))
			runErr := c.runErr
			var ie *InterruptedError
			if c.interrupted {
				ie = &InterruptedError{}
				runErr = ie
			}

			got, err := r.finish(context.Background(), rep, runErr, ie)

			if got != rep || err != runErr {
				t.Errorf("finish returned %p, %v; want the report %p and the loop's error %v", got, err, rep, runErr)
			}
			if rep.PlanFinished != c.finished || rep.Interrupted != c.interrupted || rep.Finished.IsZero() {
				t.Errorf("report: finished %v, interrupted %v at %v", rep.PlanFinished, rep.Interrupted, rep.Finished)
			}
			if c.interrupted && ie.NotStarted != 2 {
				t.Errorf("interruption counts %d resources not started, want the 2 with work", ie.NotStarted)
			}
			var written Report
			if b, err := os.ReadFile(rep.Path); err != nil || json.Unmarshal(b, &written) != nil || written.PlanFinished != c.finished {
				t.Errorf("report file %q: %v; finished %v", rep.Path, err, written.PlanFinished)
			}

			// The journal's end decides what the next apply of the plan does.
			next := startRunErr(t, a, r.p)
			var aa *AlreadyAppliedError
			if c.finished != errors.As(next, &aa) {
				t.Errorf("applying the plan again: %v; want refused %v", next, c.finished)
			}
		})
	}
}

// startRunErr is the error of the journal phase of a new apply of p.
func startRunErr(t *testing.T, a *Applier, p *plan.Plan) error {
	t.Helper()
	r, err := a.newRun(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.state, err = OpenStateDir(a.StateDir); err != nil {
		t.Fatal(err)
	}
	defer r.state.Close()
	if err := r.readJournal(); err != nil {
		return err
	}
	r.j.close()
	return nil
}
