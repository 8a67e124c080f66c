package views

import (
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// EventsFormatVersion is the version of the JSON event stream written by
// EventWriter (`toque apply -json`), documented in docs/apply-json.md.
const EventsFormatVersion = "1.4"

// Event types of the JSON event stream.
const (
	EventApplyStart        = "apply_start"
	EventResourceStart     = "resource_start"
	EventResourceEnd       = "resource_end"
	EventAlreadyDone       = "already_done"
	EventDoneEarlier       = "done_earlier"
	EventDiffersFromPlan   = "differs_from_plan"
	EventHeartbeat         = "heartbeat"
	EventOutput            = "output"
	EventNotificationFired = "notification_fired"
	EventSummary           = "summary"
	EventDiagnostic        = "diagnostic"
	EventError             = "error"
)

// EventWriter is a apply.Hooks that writes apply's progress as a stream of JSON
// objects, one per line, for CI to render (`toque apply -json`). Besides
// the hooks, the caller writes the first event with Start and the last one
// with Summary or Error. It is safe for concurrent use: Heartbeat comes
// from a timer goroutine.
//
// Sensitive values never appear: the events carry addresses, kinds,
// outcomes and the already redacted display forms of the report.
type EventWriter struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	err error
}

var _ apply.Hooks = (*EventWriter)(nil)

// NewEventWriter writes events to w, timestamped with now (nil means
// time.Now).
func NewEventWriter(w io.Writer, now func() time.Time) *EventWriter {
	if now == nil {
		now = time.Now
	}
	return &EventWriter{w: w, now: now}
}

// Err is the first write error, if any; later events are dropped after it.
func (e *EventWriter) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// head is the two fields every event starts with.
type head struct {
	Type string `json:"type"`
	Time string `json:"time"`
}

// emit writes one event. build gets the head to embed, so every event
// starts with "type" and "time".
func (e *EventWriter) emit(typ string, build func(h head) any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return
	}
	h := head{Type: typ, Time: e.now().UTC().Format(time.RFC3339Nano)}
	b, err := json.Marshal(build(h))
	if err != nil {
		e.err = err
		return
	}
	b = append(b, '\n')
	_, e.err = e.w.Write(b)
}

// PlannedCounts are a plan's resources by kind, in apply_start, and (1.3)
// those with work decided at apply or with values known at apply.
type PlannedCounts struct {
	Create         int `json:"create"`
	Update         int `json:"update"`
	Delete         int `json:"delete"`
	Run            int `json:"run"`
	Skip           int `json:"skip"`
	Unchanged      int `json:"unchanged"`
	DecidedAtApply int `json:"decided_at_apply"`
	KnownAtApply   int `json:"known_at_apply"`
}

// Start writes apply_start for plan p with the given digest.
func (e *EventWriter) Start(p *plan.Plan, digest string) {
	c := p.Counts()
	e.emit(EventApplyStart, func(h head) any {
		return struct {
			head
			FormatVersion string        `json:"format_version"`
			Host          string        `json:"host"`
			PlanDigest    string        `json:"plan_digest"`
			Resources     int           `json:"resources"`
			Planned       PlannedCounts `json:"planned"`
		}{h, EventsFormatVersion, p.Host.Hostname, digest, len(p.Resources),
			PlannedCounts{c.Create, c.Update, c.Delete, c.Run, c.Skip, c.NoOp, c.DecidedAtApply, c.KnownAtApply}}
	})
}

type resourceHead struct {
	Address string         `json:"address"`
	Kind    resources.Kind `json:"kind"`
}

// PreApply writes resource_start.
func (e *EventWriter) PreApply(r *plan.Resource) {
	e.emit(EventResourceStart, func(h head) any {
		return struct {
			head
			resourceHead
			Action string `json:"action"`
			Reason string `json:"reason"`
		}{h, resourceHead{r.Address, r.Kind}, r.Action, r.Reason}
	})
}

// PostApply writes differs_from_plan when the live state differed from
// the plan's reading, then resource_end.
func (e *EventWriter) PostApply(r *plan.Resource, rr apply.ResourceReport) {
	if rr.DiffersFromPlan != "" {
		e.emit(EventDiffersFromPlan, func(h head) any {
			return struct {
				head
				resourceHead
				Differences string `json:"differences"`
			}{h, resourceHead{r.Address, r.Kind}, rr.DiffersFromPlan}
		})
	}
	e.emit(EventResourceEnd, func(h head) any { return resourceEnd(h, rr) })
}

type resourceEndEvent struct {
	head
	resourceHead
	Outcome         string `json:"outcome"`
	DurationMS      int64  `json:"duration_ms"`
	Reason          string `json:"reason"`
	Error           string `json:"error"`
	DiffersFromPlan string `json:"differs_from_plan"`
	// KnownAtApply and DecidedAtApply (1.3) are what was decided right
	// before the resource converged: the properties whose values known at
	// apply were evaluated, the verdicts of its guards decided at apply.
	KnownAtApply   []string `json:"known_at_apply"`
	DecidedAtApply []string `json:"decided_at_apply"`
}

func resourceEnd(h head, rr apply.ResourceReport) resourceEndEvent {
	return resourceEndEvent{h, resourceHead{rr.Address, rr.Kind}, rr.Outcome, rr.DurationMS, rr.Reason, rr.Error, rr.DiffersFromPlan, nonNil(rr.KnownAtApply), nonNil(rr.DecidedAtApply)}
}

// Heartbeat writes heartbeat.
func (e *EventWriter) Heartbeat(r *plan.Resource, elapsed time.Duration) {
	e.emit(EventHeartbeat, func(h head) any {
		return struct {
			head
			resourceHead
			ElapsedMS int64 `json:"elapsed_ms"`
		}{h, resourceHead{r.Address, r.Kind}, elapsed.Milliseconds()}
	})
}

// Output writes output: one line a live_stream resource printed.
func (e *EventWriter) Output(r *plan.Resource, stream, line string) {
	e.emit(EventOutput, func(h head) any {
		return struct {
			head
			resourceHead
			Stream string `json:"stream"`
			Line   string `json:"line"`
		}{h, resourceHead{r.Address, r.Kind}, stream, line}
	})
}

// AlreadyDone writes already_done.
func (e *EventWriter) AlreadyDone(r *plan.Resource) {
	e.emit(EventAlreadyDone, func(h head) any {
		return struct {
			head
			resourceHead
			Reason string `json:"reason"`
		}{h, resourceHead{r.Address, r.Kind}, "already in the planned state (" + r.Reason + " at plan time)"}
	})
}

// Resumed writes done_earlier: an earlier, unfinished apply of the plan
// finished this resource or notified run.
func (e *EventWriter) Resumed(r *plan.Resource, rr apply.ResourceReport) {
	e.emit(EventDoneEarlier, func(h head) any {
		return struct {
			head
			resourceHead
			Reason string `json:"reason"`
		}{h, resourceHead{r.Address, r.Kind}, rr.Reason}
	})
}

// Warning writes a diagnostic event for err, worded as the text view
// words it.
func (e *EventWriter) Warning(err error) {
	d := warningDiags(err)[0]
	e.Diagnostic(JSONDiagnostic{Severity: "warning", Summary: d.Summary, Detail: d.Detail, Kind: kindOf(d)})
}

// Summary writes one notification_fired per run of a notification target
// in rep.Notified, then summary. rep may be nil when nothing ran.
func (e *EventWriter) Summary(rep *apply.Report) {
	if rep == nil {
		return
	}
	ran := 0
	for _, n := range rep.Notified {
		switch n.Outcome {
		case apply.OutcomeNotNotified, apply.OutcomeRefused, apply.OutcomeNotStarted, apply.OutcomeDoneEarlier:
			continue // listed in the report; it did not run in this apply
		}
		ran++
		e.emit(EventNotificationFired, func(h head) any { return resourceEnd(h, n) })
	}
	outcome := "complete"
	switch {
	case rep.Interrupted:
		outcome = "interrupted"
	case rep.Failed > 0:
		outcome = "failed"
	}
	var dur int64
	if !rep.Finished.IsZero() && !rep.Started.IsZero() {
		dur = rep.Finished.Sub(rep.Started).Milliseconds()
	}
	e.emit(EventSummary, func(h head) any {
		return struct {
			head
			Outcome     string `json:"outcome"`
			PlanDigest  string `json:"plan_digest"`
			Changed     int    `json:"changed"`
			Unchanged   int    `json:"unchanged"`
			AlreadyDone int    `json:"already_done"`
			DoneEarlier int    `json:"done_earlier"`
			Failed      int    `json:"failed"`
			Skipped     int    `json:"skipped"`
			NotStarted  int    `json:"not_started"`
			Notified    int    `json:"notified"`
			Interrupted bool   `json:"interrupted"`
			Resumed     bool   `json:"resumed"`
			Finished    bool   `json:"plan_finished"`
			DurationMS  int64  `json:"duration_ms"`
			Report      string `json:"report"`
			// Verified, NotAsPlanned and NotAsPlannedList: the end-state
			// check (1.4).
			Verified         bool                  `json:"verified"`
			NotAsPlanned     int                   `json:"did_not_end_as_planned"`
			NotAsPlannedList []apply.EndDifference `json:"not_as_planned"`
		}{h, outcome, rep.PlanDigest, rep.Changed, rep.Unchanged, rep.AlreadyDone, rep.DoneEarlier, rep.Failed, rep.Skipped, rep.NotStarted,
			ran, rep.Interrupted, rep.Resumed, rep.PlanFinished, dur, rep.Path, rep.Verified, rep.DidNotEndAsPlanned, nonNilEnd(rep.NotAsPlanned)}
	})
}

// StaleEntry is one difference in an error event of kind "stale".
type StaleEntry struct {
	Address  string         `json:"address"`
	Property string         `json:"property"`
	Then     string         `json:"then"`
	Now      string         `json:"now"`
	Planned  resources.Kind `json:"planned"`
	Needed   resources.Kind `json:"needed"`
}

// LockHolder describes the holder in an error event of kind "lock_held".
type LockHolder struct {
	PID      int    `json:"pid"`
	User     string `json:"user"`
	Hostname string `json:"hostname"`
	Since    string `json:"since"`
	Path     string `json:"path"`
	HostWide bool   `json:"host_wide"`
	StateDir string `json:"state_dir"`
}

// Diagnostic writes one diagnostic event.
func (e *EventWriter) Diagnostic(d JSONDiagnostic) {
	e.emit(EventDiagnostic, func(h head) any {
		return struct {
			head
			Diagnostic JSONDiagnostic `json:"diagnostic"`
		}{h, d}
	})
}

// Error writes the final error event: kind (errorKind(err) when ""), the
// message, the exit status the command ends with, for a stale plan every
// difference, for a held lock its holder, and the error diagnostics.
func (e *EventWriter) Error(kind string, err error, msg string, exitCode int, diags []JSONDiagnostic) {
	if diags == nil {
		diags = []JSONDiagnostic{}
	}
	if kind == "" {
		kind = errorKind(err)
	}
	var staleList []StaleEntry
	var holder *LockHolder
	var stale *apply.StaleError
	var held *apply.LockHeldError
	if errors.As(err, &stale) {
		staleList = []StaleEntry{}
		for _, r := range stale.Resources {
			if len(r.Differences) == 0 {
				staleList = append(staleList, StaleEntry{Address: r.Address, Planned: r.Planned, Needed: r.Now})
			}
			for _, d := range r.Differences {
				staleList = append(staleList, StaleEntry{r.Address, d.Property, d.Then, d.Now, r.Planned, r.Now})
			}
		}
	}
	if errors.As(err, &held) {
		holder = &LockHolder{PID: held.PID, User: held.User, Hostname: held.Hostname, Path: held.Path, HostWide: held.HostWide, StateDir: held.StateDir}
		if !held.Since.IsZero() {
			holder.Since = held.Since.UTC().Format(time.RFC3339)
		}
	}
	e.emit(EventError, func(h head) any {
		return struct {
			head
			Kind        string           `json:"error_kind"`
			Message     string           `json:"message"`
			ExitCode    int              `json:"exit_code"`
			Stale       []StaleEntry     `json:"stale,omitempty"`
			LockHolder  *LockHolder      `json:"lock_holder,omitempty"`
			Diagnostics []JSONDiagnostic `json:"diagnostics"`
		}{h, kind, msg, exitCode, staleList, holder, diags}
	})
}

func nonNilEnd(ds []apply.EndDifference) []apply.EndDifference {
	if ds == nil {
		return []apply.EndDifference{}
	}
	return ds
}
