package views

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// Apply is the view of `toque apply`: progress as it happens (the hooks
// apply calls), the summary once convergence started, and last the
// command's diagnostics with the exit status it ends with. Apply calls the
// hooks from one goroutine at a time, but Heartbeat comes from a timer
// goroutine, so implementations lock.
type Apply interface {
	apply.Hooks
	// Start is called once the plan to apply is known and verified.
	Start(p *plan.Plan, digest string)
	// Summary is called with the report once convergence started.
	Summary(rep *apply.Report)
	// Diagnostics is called last, with every error and warning of the
	// command and the exit status it ends with.
	Diagnostics(diags diag.Diagnostics, exitCode int)
	// Stopping acknowledges the first Ctrl-C at once: the resource in hand
	// finishes, nothing else starts. It may be called from any goroutine.
	Stopping()
}

// NewApply returns the text view, or with asJSON the JSON event stream
// (docs/apply-json.md). now timestamps events; nil means time.Now.
func NewApply(v *View, asJSON bool, now func() time.Time) Apply {
	if asJSON {
		return &applyJSON{v: v, ew: NewEventWriter(v.Streams.Stdout, now)}
	}
	return &applyText{v: v}
}

// applyText prints apply's progress, Terraform style, on stdout, and the
// diagnostics on stderr.
type applyText struct {
	mu sync.Mutex
	v  *View
	// inHand is the resource between PreApply and PostApply, "" between
	// resources.
	inHand string
}

func (a *applyText) paint(attr color.Attribute, s string) string {
	if !a.v.Color {
		return s
	}
	c := color.New(attr, color.Bold)
	c.EnableColor()
	return c.Sprint(s)
}

func (a *applyText) printf(format string, args ...any) {
	fmt.Fprintf(a.v.Streams.Stdout, format, args...)
}

func verbs(k resources.Kind) (ing, done string) {
	switch k {
	case resources.Create:
		return "Creating…", "Creation complete"
	case resources.Update:
		return "Modifying…", "Modifications complete"
	case resources.Delete:
		return "Deleting…", "Deletion complete"
	case resources.Run:
		return "Running…", "Run complete"
	}
	return "Converging…", "Complete"
}

func (a *applyText) Start(p *plan.Plan, _ string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !p.HasChanges() {
		a.printf("No changes. %s already matches the plan.\n", EscapeLine(p.Host.Hostname))
	}
}

func (a *applyText) PreApply(r *plan.Resource) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ing, _ := verbs(r.Kind)
	a.inHand = r.Address
	a.printf("%s: %s\n", a.paint(color.FgWhite, EscapeLine(r.Address)), ing)
}

func (a *applyText) PostApply(r *plan.Resource, rr apply.ResourceReport) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inHand = ""
	addr := EscapeLine(r.Address)
	d := time.Duration(rr.DurationMS) * time.Millisecond
	_, done := verbs(r.Kind)
	switch {
	case rr.Outcome == apply.OutcomeFailed, rr.Outcome == apply.OutcomeFailedIgnored:
		a.printf("%s: %s after %s: %s\n", a.paint(color.FgRed, addr), rr.Outcome, roundDur(d), Escape(rr.Error))
	case rr.Outcome == apply.OutcomeUnchanged && r.Kind == resources.Run && rr.Reason != "":
		// A run that the reading right before it left nothing to do: the
		// type's reason says why ("not running: nothing to reload").
		a.printf("%s: nothing to do: %s\n", addr, EscapeLine(rr.Reason))
	case rr.Outcome == apply.OutcomeUnchanged:
		a.printf("%s: already in the planned state, nothing to do\n", addr)
	case rr.Outcome == apply.OutcomeSkipped && strings.HasPrefix(rr.Reason, apply.SkippedAtApply):
		a.printf("%s: skipped: a guard decided at apply: %s\n", a.paint(color.FgMagenta, addr), EscapeLine(strings.TrimPrefix(rr.Reason, apply.SkippedAtApply)))
	case rr.Outcome == apply.OutcomeSkipped:
		a.printf("%s: skipped, a guard decided (see the note)\n", a.paint(color.FgMagenta, addr))
	default:
		a.printf("%s: %s after %s\n", a.paint(color.FgGreen, addr), done, roundDur(d))
	}
	if len(rr.KnownAtApply) > 0 || len(rr.DecidedAtApply) > 0 {
		var parts []string
		// The recipe's lazy values are evaluated; the values its type
		// knows only at apply (Awaits: a package's version) are read.
		var evaluated, read []string
		for _, prop := range rr.KnownAtApply {
			if r.Awaited(prop) {
				read = append(read, prop)
			} else {
				evaluated = append(evaluated, prop)
			}
		}
		if len(evaluated) > 0 {
			parts = append(parts, "evaluated "+strings.Join(evaluated, ", "))
		}
		if len(read) > 0 {
			parts = append(parts, "read "+strings.Join(read, ", ")+" once the resources before it ran")
		}
		if len(rr.DecidedAtApply) > 0 && rr.Outcome != apply.OutcomeSkipped {
			parts = append(parts, strings.Join(rr.DecidedAtApply, ", "))
		}
		if len(parts) > 0 {
			a.printf("  decided at apply: %s\n", EscapeLine(strings.Join(parts, "; ")))
		}
	}
	if rr.DiffersFromPlan != "" {
		a.printf("  note: differs from plan: %s\n", EscapeLine(rr.DiffersFromPlan))
	}
}

func (a *applyText) Heartbeat(r *plan.Resource, elapsed time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ing, _ := verbs(r.Kind)
	a.printf("%s: Still %s [%s elapsed]\n", EscapeLine(r.Address), strings.ToLower(strings.TrimSuffix(ing, "…"))+"…", roundDur(elapsed))
}

// Output prints a live_stream line under its resource, as Chef does.
func (a *applyText) Output(r *plan.Resource, stream, line string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.printf("%s: %s\n", EscapeLine(r.Address), EscapeLine(line))
}

func (a *applyText) AlreadyDone(r *plan.Resource) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.printf("%s: already in its planned state (done earlier), skipping\n", EscapeLine(r.Address))
}

func (a *applyText) Resumed(r *plan.Resource, rr apply.ResourceReport) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.printf("%s: %s\n", EscapeLine(r.Address), EscapeLine(rr.Reason))
}

func (a *applyText) Warning(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.v.Diagnostics(warningDiags(err))
}

func (a *applyText) Stopping() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inHand != "" {
		fmt.Fprintf(a.v.Streams.Stderr, "Stopping after %s, the resource in hand; nothing else will start. Press Ctrl-C again to abort it.\n", EscapeLine(a.inHand))
		return
	}
	fmt.Fprintln(a.v.Streams.Stderr, "Stopping before the next resource; nothing else will start. Press Ctrl-C again to abort.")
}

// Summary says what the apply did, by kind of change ("2 created, 1
// updated, 1 ran"), what was already done, unchanged, failed, skipped or
// not started, and names every notified run that did not happen because
// the apply stopped.
func (a *applyText) Summary(rep *apply.Report) {
	a.mu.Lock()
	defer a.mu.Unlock()
	head := "Apply complete!"
	if rep.Interrupted {
		head = "Apply interrupted!"
	} else if rep.Failed > 0 {
		head = "Apply failed!"
	}
	a.printf("\n%s Resources: %s.\n", a.paint(color.FgGreen, head), summaryCounts(rep))
	var dropped []string
	for _, n := range rep.Notified {
		if n.Outcome == apply.OutcomeNotStarted {
			dropped = append(dropped, fmt.Sprintf("  %s: %s", EscapeLine(n.Address), EscapeLine(n.Reason)))
		}
	}
	if len(dropped) > 0 {
		a.printf("Notified runs that did not happen because the apply stopped:\n%s\n", strings.Join(dropped, "\n"))
	}
	if rep.Resumed {
		a.printf("Resumed an unfinished apply of this plan: %d step%s it had finished %s not done again.\n", rep.DoneEarlier, plural(rep.DoneEarlier), were(rep.DoneEarlier))
	}
	if !rep.PlanFinished {
		a.printf("The plan is not finished: applying it again resumes it, retrying what failed and never repeating what was done.\n")
	}
	if rep.Path != "" {
		a.printf("Report: %s\n", EscapeLine(rep.Path))
	}
}

// summaryCounts words a report's counts: changes by kind, then the other
// outcomes that occurred ("2 created, 1 ran, 1 already done, 3 unchanged,
// 0 failed").
func summaryCounts(rep *apply.Report) string {
	byKind := map[resources.Kind]int{}
	ran := map[string]bool{}
	count := func(rr apply.ResourceReport) {
		if rr.Outcome == apply.OutcomeChanged {
			byKind[rr.Kind]++
		}
	}
	for _, n := range rep.Notified {
		switch n.Outcome {
		case apply.OutcomeNotNotified, apply.OutcomeRefused, apply.OutcomeNotStarted:
			continue
		}
		ran[n.Address] = true
		count(n)
	}
	for _, rr := range rep.Resources {
		if !(rr.Kind == resources.NoOp && ran[rr.Address]) {
			count(rr)
		}
	}
	var parts []string
	for _, k := range []struct {
		kind resources.Kind
		verb string
	}{{resources.Create, "created"}, {resources.Update, "updated"}, {resources.Delete, "deleted"}, {resources.Run, "ran"}} {
		if n := byKind[k.kind]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k.verb))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "0 changed")
	}
	if rep.AlreadyDone > 0 {
		parts = append(parts, fmt.Sprintf("%d already done", rep.AlreadyDone))
	}
	if rep.DoneEarlier > 0 {
		parts = append(parts, fmt.Sprintf("%d done earlier", rep.DoneEarlier))
	}
	parts = append(parts, fmt.Sprintf("%d unchanged", rep.Unchanged), fmt.Sprintf("%d failed", rep.Failed), fmt.Sprintf("%d skipped", rep.Skipped))
	if rep.NotStarted > 0 {
		parts = append(parts, fmt.Sprintf("%d not started", rep.NotStarted))
	}
	if rep.DidNotEndAsPlanned > 0 {
		parts = append(parts, fmt.Sprintf("%d did not end as planned", rep.DidNotEndAsPlanned))
	}
	return strings.Join(parts, ", ")
}

func (a *applyText) Diagnostics(diags diag.Diagnostics, _ int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.v.Diagnostics(diags)
}

func were(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// warningDiags makes a warning diagnostic of err, worded like an error of
// the same type.
func warningDiags(err error) diag.Diagnostics {
	d := &diag.Diagnostic{Severity: diag.Warning, Summary: err.Error(), Err: err}
	return diag.Diagnostics{worded(d)}
}

func roundDur(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	return d.Round(time.Second).String()
}

// applyJSON writes the event stream on stdout; the diagnostics also go to
// stderr as text, for people reading a CI log.
type applyJSON struct {
	v  *View
	ew *EventWriter
}

func (a *applyJSON) Start(p *plan.Plan, digest string)                   { a.ew.Start(p, digest) }
func (a *applyJSON) PreApply(r *plan.Resource)                           { a.ew.PreApply(r) }
func (a *applyJSON) PostApply(r *plan.Resource, rr apply.ResourceReport) { a.ew.PostApply(r, rr) }
func (a *applyJSON) Heartbeat(r *plan.Resource, d time.Duration)         { a.ew.Heartbeat(r, d) }
func (a *applyJSON) AlreadyDone(r *plan.Resource)                        { a.ew.AlreadyDone(r) }
func (a *applyJSON) Output(r *plan.Resource, stream, line string)        { a.ew.Output(r, stream, line) }
func (a *applyJSON) Resumed(r *plan.Resource, rr apply.ResourceReport)   { a.ew.Resumed(r, rr) }
func (a *applyJSON) Summary(rep *apply.Report)                           { a.ew.Summary(rep) }

// Warning writes a diagnostic event at once, and the warning as text on
// stderr.
func (a *applyJSON) Warning(err error) {
	d := warningDiags(err)
	a.v.Diagnostics(d)
	a.ew.Diagnostic(a.v.JSONDiagnostics(d)[0])
}

// Stopping writes nothing on the event stream (the summary says the run
// was interrupted) but acknowledges on stderr, for the person at the
// keyboard.
func (a *applyJSON) Stopping() {
	fmt.Fprintln(a.v.Streams.Stderr, "Stopping after the resource in hand; press Ctrl-C again to abort it.")
}

// Diagnostics writes a diagnostic event for each warning and, when the
// command fails, the final error event: worded from the first error, with
// every error diagnostic in its "diagnostics".
func (a *applyJSON) Diagnostics(diags diag.Diagnostics, exitCode int) {
	a.v.Diagnostics(diags)
	var errs diag.Diagnostics
	for _, d := range diags {
		if d.Severity == diag.Warning {
			a.ew.Diagnostic(a.v.JSONDiagnostics(diag.Diagnostics{d})[0])
		} else {
			errs = append(errs, d)
		}
	}
	if exitCode == 0 {
		return
	}
	if len(errs) == 0 {
		a.ew.Error(KindOther, nil, "apply failed", exitCode, nil)
		return
	}
	first := errs[0]
	a.ew.Error(kindOf(first), first.Err, worded(first).Error(), exitCode, a.v.JSONDiagnostics(errs))
}
