package apply

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// beginConverge runs Apply's phases up to the converge loop (startRun,
// pre-flight, the journal's start) on the plan of s, and returns the run
// with the report and notifier the loop fills.
func beginConverge(t *testing.T, ctx context.Context, a *Applier, s ...spec) (*run, *Report, *notifier) {
	t.Helper()
	return beginConvergePlan(t, ctx, a, makePlan(t, a.Registry, s...))
}

// beginConvergePlan is beginConverge with the plan given.
func beginConvergePlan(t *testing.T, ctx context.Context, a *Applier, p *plan.Plan) (*run, *Report, *notifier) {
	t.Helper()
	r := startRun(t, a, p)
	if err := r.preflight(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.j.begin(); err != nil {
		t.Fatal(err)
	}
	rep := r.newReport(r.now(), false)
	return r, rep, newNotifier(r, rep)
}

// TestConvergeTurn holds one turn of the converge loop alone: which
// outcome of a resource stops the loop, and with which error.
func TestConvergeTurn(t *testing.T) {
	cases := []struct {
		name      string
		resource  func(dir string) spec
		cancelled bool   // ctx is cancelled before the turn
		outcome   string // the resource's outcome in the report
		stops     string // "" (the loop goes on), "resource" or "interrupted"
	}{
		{"a change", func(dir string) spec { return tfile(filepath.Join(dir, "f"), "x") }, false, OutcomeChanged, ""},
		{"a failure", func(string) spec { return tscript("fail", "exit 3") }, false, OutcomeFailed, "resource"},
		{"a failure with ignore_failure", func(string) spec {
			s := tscript("fail", "exit 3")
			s.ignoreFailure = true
			return s
		}, false, OutcomeFailedIgnored, ""},
		{"a failure with ignore_failure once ctx is cancelled", func(string) spec {
			s := tscript("fail", "exit 3")
			s.ignoreFailure = true
			return s
		}, true, OutcomeFailedIgnored, "interrupted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, _ := newApplier(t, testRegistry())
			r, rep, nt := beginConverge(t, context.Background(), a, c.resource(t.TempDir()))
			e, rr := r.entries[0], &rep.Resources[0]
			ctx, cancel := context.WithCancel(context.Background())
			if c.cancelled {
				cancel()
			}
			defer cancel()

			err := r.convergeTurn(ctx, e, rr, nt)

			if rr.Outcome != c.outcome {
				t.Errorf("outcome %q, want %q", rr.Outcome, c.outcome)
			}
			var re *ResourceError
			var ie *InterruptedError
			switch c.stops {
			case "":
				if err != nil {
					t.Errorf("the turn stops the loop: %v", err)
				}
			case "resource":
				if !errors.As(err, &re) || re.Address != e.pr.Address {
					t.Errorf("error %v, want a *ResourceError of %s", err, e.pr.Address)
				}
			case "interrupted":
				if !errors.As(err, &ie) || !ie.Aborted || ie.After != e.pr.Address {
					t.Errorf("error %#v, want an aborting *InterruptedError after %s", err, e.pr.Address)
				}
			}
		})
	}
}

// TestReported holds convergeOne's last step alone: an outcome journaled
// with its resource reaches the hooks only once the journal holds it
// durably; one of an action of a resource journaled around all its
// actions reaches them at once.
func TestReported(t *testing.T) {
	for _, record := range []bool{true, false} {
		t.Run(fmt.Sprintf("record=%v", record), func(t *testing.T) {
			a, _ := newApplier(t, testRegistry())
			r, _, _ := beginConverge(t, context.Background(), a, tscript("s", "true"))
			e := r.entries[0]
			heard := false

			if err := r.reported(e, record, OutcomeChanged, func() { heard = true }); err != nil {
				t.Fatal(err)
			}

			journaled := strings.Contains(readFile(t, r.j.path()), `"`+OutcomeChanged+`"`)
			if journaled != record {
				t.Errorf("outcome journaled %v, want %v", journaled, record)
			}
			if heard == record {
				t.Errorf("hooks heard of it before the sync: %v", heard)
			}
			r.syncJournal()
			if !heard {
				t.Error("hooks never heard of it")
			}
		})
	}
}

// TestSummarizeActions holds the sum of a resource's action reports, the
// last step of convergeActions.
func TestSummarizeActions(t *testing.T) {
	a := func(action string, kind resources.Kind, outcome string) ActionReport {
		return ActionReport{Action: action, Kind: kind, Outcome: outcome}
	}
	cases := []struct {
		name    string
		actions []ActionReport
		outcome string
	}{
		{"none ran", []ActionReport{a("create", resources.NoOp, OutcomeUnchanged)}, OutcomeUnchanged},
		{"one changed", []ActionReport{a("create", resources.NoOp, OutcomeUnchanged), a("run", resources.Run, OutcomeChanged)}, OutcomeChanged},
		{"every one with work skipped", []ActionReport{a("create", resources.NoOp, OutcomeUnchanged), a("run", resources.Run, OutcomeSkipped)}, OutcomeSkipped},
		{"one of two with work skipped", []ActionReport{a("create", resources.Create, OutcomeChanged), a("run", resources.Run, OutcomeSkipped)}, OutcomeChanged},
		{"a failure wins", []ActionReport{a("create", resources.Create, OutcomeChanged), a("run", resources.Run, OutcomeFailed), a("delete", resources.Delete, OutcomeNotStarted)}, OutcomeFailed},
		{"an ignored failure", []ActionReport{a("run", resources.Run, OutcomeFailedIgnored), a("create", resources.Create, OutcomeChanged)}, OutcomeFailedIgnored},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, _, _ := summarizeActions(c.actions); got != c.outcome {
				t.Errorf("outcome %q, want %q", got, c.outcome)
			}
		})
	}
	t.Run("differences and errors named by action", func(t *testing.T) {
		as := []ActionReport{
			{Action: "create", Kind: resources.Create, Outcome: OutcomeChanged, DiffersFromPlan: "mode moved"},
			{Action: "run", Kind: resources.Run, Outcome: OutcomeFailed, Error: "exit 3"},
		}
		_, differs, errText := summarizeActions(as)
		if differs != "create: mode moved" || errText != "run: exit 3" {
			t.Errorf("differs %q, errors %q", differs, errText)
		}
	})
}
