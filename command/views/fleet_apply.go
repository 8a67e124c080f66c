package views

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/toquehq/toque/fleet"
	"github.com/toquehq/toque/internal/diag"
)

// ExitHostsFailed is fleet apply's exit status when a host failed, could
// not be reached, refused its plan or ended in an unknown state.
const ExitHostsFailed = 7

// FleetApplyExit is fleet apply's exit status from its result: 5 when it
// was interrupted, 7 when a host failed, was unreachable, refused its plan
// or is unknown, 3 when hosts were stale and none of that, else 0.
func FleetApplyExit(r *fleet.Result) int {
	failed, stale := false, false
	for _, h := range r.Hosts {
		switch {
		case h.Outcome == fleet.Stale:
			stale = true
		case h.Outcome.Failure():
			failed = true
		}
	}
	switch {
	case r.Stopped == "interrupted":
		return ExitInterrupted
	case failed:
		return ExitHostsFailed
	case stale:
		return ExitStale
	}
	return ExitOK
}

// FleetApply is the view of fleet apply: the rollout's progress (the
// fleet.ApplyHooks), then its summary.
type FleetApply interface {
	fleet.ApplyHooks
	Start(bundle string, digest string, hosts int, rollout fleet.Rollout)
	Summary(r *fleet.Result, resultFile string, resultErr error)
	Diagnostics(diags diag.Diagnostics)
}

// NewFleetApply returns the text or JSON view.
func NewFleetApply(v *View, asJSON bool) FleetApply {
	if asJSON {
		return &fleetApplyJSON{v: v}
	}
	return &fleetApplyText{v: v}
}

type fleetApplyText struct {
	v  *View
	mu sync.Mutex
}

func (t *fleetApplyText) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.v.Streams.Stdout, format, args...)
}

func (t *fleetApplyText) Diagnostics(diags diag.Diagnostics) { t.v.Diagnostics(diags) }

func (t *fleetApplyText) Start(bundle, digest string, hosts int, r fleet.Rollout) {
	batches := make([]string, len(r.Batches))
	for i, b := range r.Batches {
		batches[i] = b.String()
	}
	t.printf("Applying %s (%s) to %s: batches %s, at most %d at a time, stopping after %s failed.\n",
		EscapeLine(bundle), EscapeLine(digest), hostCount(hosts), strings.Join(batches, ", "), r.Parallel, hostCount(r.Budget(hosts)+1))
}

func (t *fleetApplyText) BatchStarted(n, total int, hosts []string) {
	t.printf("\nBatch %d of %d: %s\n", n, total, hostList(hosts, 10))
}

func (t *fleetApplyText) HostStarted(alias string, batch int) {}

// HostEvent prints nothing: a host's outcome says what failed.
func (t *fleetApplyText) HostEvent(alias string, ev fleet.ApplyEvent) {}

func (t *fleetApplyText) HostDone(r fleet.HostResult) {
	pt := newPainter(t.v.Color)
	word := string(r.Outcome)
	switch {
	case r.Outcome == fleet.Applied:
		word = pt.create(word)
	case r.Outcome.Failure():
		word = pt.del(word)
	case r.Outcome == fleet.NoChanges || r.Outcome == fleet.AlreadyApplied:
		word = pt.faint(word)
	}
	line := fmt.Sprintf("  %s: %s", pt.bold(EscapeLine(r.Alias)), word)
	if r.Resources != nil && r.Outcome == fleet.Applied {
		line += fmt.Sprintf(" (%d changed)", r.Resources["changed"])
	}
	if !r.Ended.IsZero() && !r.Started.IsZero() {
		line += fmt.Sprintf(" in %s", r.Ended.Sub(r.Started).Round(10*time.Millisecond))
	}
	if r.Detail != "" {
		line += ": " + indentRest(Escape(r.Detail), "    ")
	}
	t.printf("%s\n", line)
}

func (t *fleetApplyText) Stopping(why string, failures, budget int) {
	pt := newPainter(t.v.Color)
	if why == "interrupted" {
		t.printf("\n%s\n", pt.bold("Interrupt received: no further host is started; the hosts applying stop after the resource in hand. Press Ctrl-C again to abort them."))
		return
	}
	t.printf("\n%s\n", pt.del(pt.bold(fmt.Sprintf("%s failed, more than max_failures = %d allows: no further host is started.", hostCount(failures), budget))))
}

func (t *fleetApplyText) Summary(r *fleet.Result, resultFile string, resultErr error) {
	pt := newPainter(t.v.Color)
	counts := r.Counts()
	var parts []string
	for _, o := range fleet.Outcomes {
		if n := counts[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, o))
		}
	}
	t.printf("\n%s\n", pt.bold("Fleet apply: "+strings.Join(parts, ", ")+"."))
	if resultErr != nil {
		t.printf("%s\n", pt.del("Cannot write the result file "+EscapeLine(resultFile)+": "+EscapeLine(resultErr.Error())))
		return
	}
	if resultFile == "" {
		return
	}
	t.printf("Result: %s.", EscapeLine(resultFile))
	retry := 0
	for _, h := range r.Hosts {
		if !h.Outcome.Succeeded() && h.Outcome != fleet.NotPlanned {
			retry++
		}
	}
	if retry > 0 {
		t.printf(" To go on with the %s that did not succeed: toque fleet apply -limit %s %s", hostCount(retry), ShellQuote("@"+resultFile), EscapeLine(ShellQuote(r.Bundle)))
	}
	t.printf("\n")
}

// fleetApplyJSON prints one JSON object per line (docs/fleet.md).
type fleetApplyJSON struct {
	v  *View
	mu sync.Mutex
}

// FleetApplyJSONVersion is the version of fleet apply -json's stream.
const FleetApplyJSONVersion = "1.0"

func (j *fleetApplyJSON) emit(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(fields)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.v.Streams.Stdout.Write(append(b, '\n'))
}

func (j *fleetApplyJSON) Diagnostics(diags diag.Diagnostics) {
	j.v.Diagnostics(diags)
	if diags.HasErrors() {
		j.emit("error", map[string]any{"diagnostics": j.v.JSONDiagnostics(diags)})
	}
}

func (j *fleetApplyJSON) Start(bundle, digest string, hosts int, r fleet.Rollout) {
	batches := make([]string, len(r.Batches))
	for i, b := range r.Batches {
		batches[i] = b.String()
	}
	j.emit("fleet_apply_start", map[string]any{"format_version": FleetApplyJSONVersion, "bundle": bundle, "digest": digest, "hosts": hosts,
		"batches": batches, "parallel": r.Parallel, "max_failures": r.Budget(hosts)})
}

func (j *fleetApplyJSON) BatchStarted(n, total int, hosts []string) {
	j.emit("batch_start", map[string]any{"batch": n, "batches": total, "hosts": hosts})
}

func (j *fleetApplyJSON) HostStarted(alias string, batch int) {
	j.emit("host_start", map[string]any{"host": alias, "batch": batch})
}

func (j *fleetApplyJSON) HostEvent(alias string, ev fleet.ApplyEvent) {
	if ev.Type != "resource_end" {
		return
	}
	j.emit("host_resource", map[string]any{"host": alias, "address": ev.Address, "kind": ev.Kind, "outcome": ev.Outcome, "error": ev.Error})
}

func (j *fleetApplyJSON) HostDone(r fleet.HostResult) {
	j.emit("host_done", map[string]any{"host": r.Alias, "outcome": r.Outcome, "batch": r.Batch, "detail": r.Detail, "plan_digest": r.PlanDigest, "resources": r.Resources})
}

func (j *fleetApplyJSON) Stopping(why string, failures, budget int) {
	j.emit("stopping", map[string]any{"reason": why, "failures": failures, "max_failures": budget})
}

func (j *fleetApplyJSON) Summary(r *fleet.Result, resultFile string, resultErr error) {
	counts := map[string]int{}
	for o, n := range r.Counts() {
		counts[string(o)] = n
	}
	f := map[string]any{"outcomes": counts, "stopped": r.Stopped, "result_file": resultFile, "exit_code": FleetApplyExit(r)}
	if resultErr != nil {
		f["result_error"] = resultErr.Error()
	}
	j.emit("summary", f)
}
