package apply

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestNotifyDelayed holds the notifications phase after the converge loop
// alone: a delayed run queued by the loop runs when the loop ended or
// failed, and not when it was interrupted.
func TestNotifyDelayed(t *testing.T) {
	loopFailed := errors.New("the loop failed")
	cases := []struct {
		name        string
		runErr      error
		interrupted bool
		ran         bool
		outcome     string // the delayed run's outcome in the report
	}{
		{"after the loop", nil, false, true, OutcomeChanged},
		{"after a failure", loopFailed, false, true, OutcomeChanged},
		{"after an interruption", &InterruptedError{}, true, false, OutcomeNotStarted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			echo := func(name string) spec { return tscript(name, "echo "+name+" >> "+log) }
			reg := testRegistry()
			p := makeNotifyPlan(t, reg, echo("n"), nothing(echo("d")))
			edge(p, "tscript[n]", "tscript[d]", "run", "delayed")
			planRun(t, reg, p, "tscript[d]", "run", "delayed", len(p.Resources), false, "tscript[n]")
			a, _ := newApplier(t, reg)
			ctx := context.Background()
			r, rep, nt := beginConvergePlan(t, ctx, a, p)
			if err := r.converge(ctx, rep, nt); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, log); got != "n\n" {
				t.Fatalf("the loop ran %q, want only n", got)
			}

			err := r.notifyDelayed(ctx, nt, rep, c.runErr, c.interrupted)

			if c.runErr != nil && !errors.Is(err, c.runErr) || c.runErr == nil && err != nil {
				t.Errorf("error %v, want the loop's %v", err, c.runErr)
			}
			want := "n\n"
			if c.ran {
				want += "d\n"
			}
			if got := readFile(t, log); got != want {
				t.Errorf("ran %q, want %q", got, want)
			}
			if n := notified(rep); n["tscript[d]"].Outcome != c.outcome {
				t.Errorf("delayed run reported %+v, want outcome %q", n["tscript[d]"], c.outcome)
			}
		})
	}
}
