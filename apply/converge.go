package apply

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// newReport is the report of this apply before anything converges: every
// resource not started, but those the journal says an earlier apply of
// the plan finished, which are reported done earlier (Hooks.Resumed).
// resumed is set when an earlier apply of the plan did part of it.
func (r *run) newReport(started time.Time, resumed bool) *Report {
	rep := &Report{PlanDigest: r.digest, Host: r.p.Host.Hostname, Started: started, Resumed: resumed}
	rep.Resources = make([]ResourceReport, len(r.entries))
	for i, e := range r.entries {
		rep.Resources[i] = ResourceReport{Address: e.pr.Address, Kind: e.pr.Kind, Outcome: OutcomeNotStarted, Reason: e.pr.Reason}
		if e.earlier != nil {
			rr := &rep.Resources[i]
			rr.Outcome, rr.Reason = OutcomeDoneEarlier, doneEarlier(e.earlier)
			r.hooks.Resumed(e.pr, *rr)
		}
	}
	return rep
}

// converge is the converge loop: first the notifications an earlier,
// unfinished apply of the plan owes (notifier.resume), then every resource
// with planned work, in plan order, each in its turn (convergeTurn) or
// staged into a group commit (commit.go). It fills rep's resources and
// returns the error that stopped the loop: an *InterruptedError when Stop
// was closed (the group in hand is committed first) or ctx cancelled (it
// is removed), a resource's failure (not one of an ignore_failure
// resource), or the journal's. Nothing is left staged when it returns.
func (r *run) converge(ctx context.Context, rep *Report, nt *notifier) error {
	runErr := nt.resume(ctx)
	o := &inOrder{r: r}
	for i, e := range r.entries {
		if runErr != nil {
			break
		}
		rr := &rep.Resources[i]
		if r.noTurn(e, rr) {
			continue
		}
		if runErr = o.interrupted(ctx, e); runErr != nil {
			break
		}
		if staged, err := o.stage(ctx, e, rr, nt); staged {
			runErr = err
			continue
		}
		if runErr = o.commit(ctx); runErr != nil {
			break
		}
		o.last = e.pr.Address
		runErr = r.convergeTurn(ctx, e, rr, nt)
	}
	if runErr == nil {
		runErr = o.commit(ctx)
	} else {
		o.grp.abort() // (empty unless the loop broke on ctx)
	}
	return runErr
}

// inOrder is the converge loop's state between resources.
type inOrder struct {
	r *run
	// grp is the group commit in hand (commit.go): resources staged, not
	// yet committed.
	grp group
	// last is the address of the last resource converged, or finished by
	// a group commit: where an interruption stopped the run.
	last string
}

// commit commits the group in hand and empties it.
func (o *inOrder) commit(ctx context.Context) error {
	l, err := o.r.commit(ctx, &o.grp)
	if l != "" {
		o.last = l
	}
	return err
}

// noTurn reports whether e is not converged in its own turn of the loop:
// an earlier apply of the plan finished it, it is a child resource (its
// parent converges it, in the place its action gives it), or it has
// nothing to converge (settle). It records the outcome of the last two in
// rr.
func (r *run) noTurn(e *entry, rr *ResourceReport) bool {
	switch {
	case e.earlier != nil:
		return true
	case e.pr.Parent != "":
		if rr.Outcome == OutcomeNotStarted {
			r.settle(e, rr)
		}
		return true
	}
	return r.settle(e, rr)
}

// interrupted is the *InterruptedError that stops the loop before e, nil
// to go on: ctx cancelled removes the group in hand; Stop closed commits
// it first (it is the work in hand), and the commit's failure is the
// error instead.
func (o *inOrder) interrupted(ctx context.Context, e *entry) error {
	if err := ctx.Err(); err != nil {
		o.grp.abort()
		return &InterruptedError{After: o.last, Aborted: true, Err: err}
	}
	if stopped(o.r.a.Stop) {
		if err := o.commit(ctx); err != nil {
			return err
		}
		o.r.logger.Info("stop requested: not starting further resources", "next", e.pr.Address)
		return &InterruptedError{After: o.last}
	}
	return nil
}

// stage stages e into the group in hand when it may join one (stager),
// committing the group when e failed or the group is full. It reports
// whether e was staged (or settled while being read to stage), and the
// error of that commit.
func (o *inOrder) stage(ctx context.Context, e *entry, rr *ResourceReport, nt *notifier) (bool, error) {
	st, path, ok := o.r.stager(e, &o.grp, nt)
	if !ok {
		return false, nil
	}
	it := o.r.stage(ctx, e, rr, st)
	if it == nil {
		return false, nil
	}
	o.grp.add(it, path)
	if it.err != nil || len(o.grp.items) >= commitGroupMax {
		return true, o.commit(ctx)
	}
	return true, nil
}

// convergeTurn is e's turn in the converge loop: it converges e with its
// notifications (apply/notify.go: "before" ones run their target first
// when the resource is about to change; "immediately" ones right after it
// changed; "delayed" ones are queued and run after the loop; their runs
// go to the report's Notified), and returns the error that stops the
// loop: the resource's failure, unless it is an ignore_failure
// resource's own (logged, not returned), an *InterruptedError when ctx
// was cancelled while it ran, or the journal's failure (nothing more runs
// unrecorded).
func (r *run) convergeTurn(ctx context.Context, e *entry, rr *ResourceReport, nt *notifier) error {
	err := r.convergeResource(ctx, e, rr, nt)
	if err == nil {
		err = r.j.Err() // nothing more runs unrecorded
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return &InterruptedError{After: e.pr.Address, Aborted: true, Err: err}
	}
	if e.pr.IgnoreFailure && ownFailure(err, e.pr.Address) {
		r.logger.Warn("resource failed; ignore_failure is set, continuing", "resource", e.pr.Address, "error", err)
		return nil
	}
	return err
}

// interruption is the *InterruptedError in err, nil when the run was not
// interrupted.
func interruption(err error) *InterruptedError {
	var ie *InterruptedError
	if errors.As(err, &ie) {
		return ie
	}
	return nil
}

// convergeResource converges e's actions in order, each with its
// notifications: "before" edges fire when the action is about to change,
// "immediately" and "delayed" ones after each action that changed (as
// Chef's run_all_actions). A resource of one action is converged as
// itself; one of several by convergeActions.
func (r *run) convergeResource(ctx context.Context, e *entry, rr *ResourceReport, nt *notifier) error {
	if e.pr.Steps() > 1 {
		return r.convergeActions(ctx, e, rr, nt)
	}
	err := nt.before(ctx, e, 0)
	if err == nil {
		err = r.convergeOne(ctx, e, 0, rr, true, nt)
		if err == nil {
			err = nt.after(ctx, e, rr)
		}
	}
	return err
}

// convergeActions converges a resource of several actions: it is
// journaled as one resource, around all of them, and reported with a
// report per action (rr.Actions) and an outcome summing them up
// (summarizeActions). An action after one that failed is not started.
func (r *run) convergeActions(ctx context.Context, e *entry, rr *ResourceReport, nt *notifier) error {
	if err := r.j.Err(); err != nil {
		return err
	}
	ref := stepRef{index: e.idx}
	if r.actionsStillDone(ctx, e) {
		rr.Outcome = OutcomeAlreadyDone
		rr.Reason = "already in the planned state (" + e.pr.Reason + " at plan time)"
		jerr := r.j.ended(ref, e.pr.Address, e.pr.Kind, rr.Outcome, nil)
		r.hooks.AlreadyDone(e.pr)
		return jerr
	}
	if jerr := r.j.started(ref, e.pr.Address, e.pr.Kind); jerr != nil {
		return jerr
	}
	var runErr error
	for si := 0; si < e.pr.Steps(); si++ {
		view := e.pr.StepView(si)
		srr := ResourceReport{Address: e.pr.Address, Kind: view.Kind, Outcome: OutcomeNotStarted, Reason: view.Reason}
		switch {
		case runErr != nil:
		case view.Kind == resources.Skip:
			srr.Outcome = OutcomeSkipped
		case !r.tree.StepWork(e.idx, si):
			srr.Outcome = OutcomeUnchanged
		default:
			runErr = nt.before(ctx, e, si)
			if runErr == nil {
				runErr = r.convergeOne(ctx, e, si, &srr, false, nt)
				if runErr == nil {
					runErr = nt.after(ctx, e, &srr)
				}
			}
		}
		addAction(rr, view.Action, srr)
	}
	rr.Outcome, rr.DiffersFromPlan, rr.Error = summarizeActions(rr.Actions)
	recorded := rr.Outcome
	if runErr != nil {
		recorded = failedOutcome(ctx, rr.Outcome)
	}
	if jerr := r.j.ended(ref, e.pr.Address, e.pr.Kind, recorded, nil); jerr != nil {
		runErr = errors.Join(runErr, jerr)
	}
	return runErr
}

// actionsStillDone reports whether every action of e, found already in its
// planned state at pre-flight (and with no child resource to converge),
// still is: each is read again, since an earlier resource of this run may
// have undone one.
func (r *run) actionsStillDone(ctx context.Context, e *entry) bool {
	if !e.alreadyDone || r.tree.ChildWork(e.idx) {
		return false
	}
	allDone := true
	for si := 0; si < e.pr.Steps() && allDone; si++ {
		rd, err := r.lc.Evaluate(ctx, r.stepSubject(e, si, nil))
		allDone = err == nil && !rd.Skip && rd.Step.Kind == resources.NoOp
	}
	return allDone
}

// addAction adds srr, the report of e's action, to rr, the report of
// the resource: its line in rr.Actions, its duration, what it knew only
// at apply and the verdicts of its guards decided at apply.
func addAction(rr *ResourceReport, action string, srr ResourceReport) {
	rr.Actions = append(rr.Actions, ActionReport{Action: action, Kind: srr.Kind, Outcome: srr.Outcome, Reason: srr.Reason, DiffersFromPlan: srr.DiffersFromPlan, Error: srr.Error, DurationMS: srr.DurationMS})
	rr.DurationMS += srr.DurationMS
	if len(srr.KnownAtApply) > 0 {
		rr.KnownAtApply = srr.KnownAtApply
	}
	rr.DecidedAtApply = append(rr.DecidedAtApply, srr.DecidedAtApply...)
}

// summarizeActions is a resource's outcome from its actions': failed when
// one failed, changed when one changed, skipped when every one that
// should have run was skipped, else unchanged; the differences from the
// plan and errors, each named by its action.
func summarizeActions(as []ActionReport) (outcome, differs, errText string) {
	outcome = OutcomeUnchanged
	var ds, es []string
	changed, skipped, ran := false, 0, 0
	for _, a := range as {
		switch a.Outcome {
		case OutcomeFailed, OutcomeFailedIgnored:
			outcome = a.Outcome
		case OutcomeChanged:
			changed = true
		case OutcomeSkipped:
			skipped++
		}
		if a.Kind.IsWork() {
			ran++
		}
		if a.DiffersFromPlan != "" {
			ds = append(ds, a.Action+": "+a.DiffersFromPlan)
		}
		if a.Error != "" {
			es = append(es, a.Action+": "+a.Error)
		}
	}
	switch {
	case outcome == OutcomeFailed || outcome == OutcomeFailedIgnored:
	case changed:
		outcome = OutcomeChanged
	case ran > 0 && skipped == ran:
		outcome = OutcomeSkipped
	}
	return outcome, strings.Join(ds, "; "), strings.Join(es, "; ")
}

// convergeOne reads e again and converges its si-th action toward the live
// reading within what the plan showed. It fills rr and returns the
// resource's error; record journals the resource's start and end (a
// resource of several actions is journaled around all of them).
//
// Every outcome is recorded in the journal before the hooks hear of it,
// and a run is recorded as started before it starts: whatever is printed
// as done is on disk as done.
func (r *run) convergeOne(ctx context.Context, e *entry, si int, rr *ResourceReport, record bool, nt *notifier) error {
	if err := r.j.Err(); err != nil {
		return err
	}
	if seq := r.sequence(e, si); seq != nil {
		return r.convergeComposite(ctx, e, si, seq, rr, record, nt)
	}
	view := e.pr.StepView(si)
	start := time.Now()
	rd, err := r.readToConverge(ctx, e, si, view, rr)
	if err == nil {
		if report := r.settleReading(e, view, rd, rr, record); report != nil {
			return r.reported(e, record, rr.Outcome, report)
		}
	}
	if record {
		if jerr := r.j.started(stepRef{index: e.idx}, e.pr.Address, e.pr.Kind); jerr != nil {
			return jerr
		}
	}
	r.hooks.PreApply(view)
	if err == nil {
		planned := e.planned
		if si > 0 {
			planned = "" // a later action starts from a predicted state
		}
		err = r.convergeStep(ctx, e, view, planned, rr, rd)
		if err == nil {
			r.expectConverged(e, si, rd)
		}
	}
	rr.DurationMS = time.Since(start).Milliseconds()
	recorded := rr.Outcome
	if err != nil {
		err = &ResourceError{Address: e.pr.Address, Err: err}
		rr.Error = err.Error()
		rr.Outcome = OutcomeFailed
		if e.pr.IgnoreFailure {
			rr.Outcome = OutcomeFailedIgnored
		}
		recorded = failedOutcome(ctx, rr.Outcome)
	}
	rep := *rr
	if jerr := r.reported(e, record, recorded, func() { r.out.PostApply(view, rep) }); jerr != nil {
		err = errors.Join(err, jerr)
	}
	return err
}

// readToConverge reads e's si-th action (view) once more, right before
// converging it: first the deferred work that may not wait (doLater), then
// the lifecycle with the guards, which decide now (decide): an earlier
// change of this run may have flipped one. It adds the verdicts of the
// guards decided at apply to rr. The reading may be nil when err is not.
func (r *run) readToConverge(ctx context.Context, e *entry, si int, view *plan.Resource, rr *ResourceReport) (*plan.Reading, error) {
	if len(e.pr.GuardSpecs) > 0 {
		// Guards may take their time: what waits to be printed is
		// printed first.
		r.syncJournal()
	}
	var rd *plan.Reading
	err := r.doLater(ctx, e.desired.WithAction(view.Action))
	if err == nil {
		rd, err = r.lc.Evaluate(ctx, decide(r.stepSubject(e, si, e.pr.GuardSpecs)))
	}
	if rd != nil {
		rr.DecidedAtApply = append(rr.DecidedAtApply, decidedAtApply(rd)...)
	}
	return rd, err
}

// settleReading decides from rd, the reading right before converging view,
// whether e's action is done without converging: skipped by a guard
// decided at apply (as the plan said one would be), skipped by a guard an
// earlier change of this run flipped (the opposite cannot happen here, as
// a resource skipped at plan time is never converged), or, journaled on
// its own (record) and found already done at pre-flight, still in the
// planned state (an earlier resource of this run may have undone it). It
// fills rr and returns the hook call that reports it, nil to converge.
func (r *run) settleReading(e *entry, view *plan.Resource, rd *plan.Reading, rr *ResourceReport, record bool) func() {
	switch {
	case rd.Skip && rd.Guards[rd.DecidedBy].Spec.AtApply:
		r.hooks.PreApply(view)
		rr.Outcome = OutcomeSkipped
		o := rd.Guards[rd.DecidedBy]
		rr.Reason = SkippedAtApply + o.Spec.Verdict(o.Condition)
		r.logger.Info("skipped by a guard decided at apply", "resource", e.pr.Address, "guard", rr.Reason)
		rep := *rr
		return func() { r.out.PostApply(view, rep) }
	case rd.Skip:
		r.hooks.PreApply(view)
		why := skippedNow(rd)
		rr.Outcome = OutcomeSkipped
		rr.Reason = "skipped: " + why
		rr.DiffersFromPlan = why
		r.logger.Info("guard flipped by an earlier change in this run: skipping", "resource", e.pr.Address, "guard", why)
		rep := *rr
		return func() { r.out.PostApply(view, rep) }
	case record && e.alreadyDone && rd.Step.Kind == resources.NoOp:
		rr.Outcome = OutcomeAlreadyDone
		rr.Reason = "already in the planned state (" + e.pr.Reason + " at plan time)"
		return func() { r.out.AlreadyDone(e.pr) }
	}
	return nil
}

// reported records outcome, the outcome of e, and has report print it
// once that record is durable: at the next sync of the journal, which
// comes before anything else is printed (syncingHooks), started or
// changed (a run's start record, a group commit). One sync then serves
// the end of a run and the start of the next. Without record (an action
// of a resource journaled around all its actions) nothing is recorded:
// what waits is synced and report called at once.
func (r *run) reported(e *entry, record bool, outcome string, report func()) error {
	if !record {
		r.syncJournal()
		report()
		return nil
	}
	jerr := r.j.endedUnsynced(stepRef{index: e.idx}, e.pr.Address, e.pr.Kind, outcome)
	r.j.afterSync(report)
	return jerr
}

// failedOutcome is what the journal records of a failure: aborted when ctx
// was cancelled while the step ran (it may have done part of its work),
// else the report's outcome.
func failedOutcome(ctx context.Context, outcome string) string {
	if ctx.Err() != nil {
		return journalAborted
	}
	return outcome
}

// convergeStep converges view (e, or one of its further actions) from
// rd, a reading taken right before, within what the plan showed. planned
// is the fingerprint the plan read, "" for a later action (its state was
// predicted).
func (r *run) convergeStep(ctx context.Context, e *entry, view *plan.Resource, planned string, rr *ResourceReport, rd *plan.Reading) error {
	if len(rd.Resolved) > 0 {
		rr.KnownAtApply = rd.Resolved
	}
	if planned != "" && rd.Fingerprint() != planned {
		rr.DiffersFromPlan = describeDifferences(e.typ, e.pr, rd.Current)
		if rr.DiffersFromPlan != "" {
			r.logger.Info("live state differs from the plan because of an earlier change in this run", "resource", e.pr.Address, "differences", rr.DiffersFromPlan)
		}
	}
	step := rd.Step
	if ns := step.AwaitedNeeds(); len(ns) > 0 && step.Kind.IsWork() {
		// What an earlier resource of this apply was to provide is still
		// missing (Need.AtApply): its value is not known even now.
		if ns[0].StillMissing != "" {
			return errors.New(ns[0].StillMissing)
		}
		return fmt.Errorf("%s is still missing now that the earlier resources of this apply have run, so its %s is not known: %s", ns[0].What, ns[0].Property, ns[0].Missing)
	}
	for _, a := range view.Awaits {
		rr.KnownAtApply = append(rr.KnownAtApply, a.Property)
	}
	if step.Kind == resources.NoOp {
		rr.Outcome = OutcomeUnchanged
		rr.Reason = "already in the planned state"
		switch {
		case view.Kind == resources.Run:
			// A run has no planned state to be in: what the type read
			// now leaves it nothing to do (an earlier resource stopped
			// the service a reload was for), and its reason says why.
			rr.Reason = step.Reason
			if rr.Reason == "" {
				rr.Reason = "its type has nothing to do now"
			}
		case rr.DiffersFromPlan != "":
			rr.Reason += ": an earlier resource in this run brought it there"
		}
		if view.Kind == resources.Run && step.Reason != "" {
			// A run leaves no state to be in: the type says why there is
			// nothing to run now ("not running: nothing to reload").
			rr.Reason = step.Reason
		}
		return nil
	}
	if err := allowed(view, step); err != nil {
		return err
	}
	if step.Reason != "" && step.Reason != view.Reason {
		rr.Reason = step.Reason
	}

	if err := r.runConverge(ctx, e, view, rd, rd.State, step); err != nil {
		return err
	}
	rr.Outcome = OutcomeChanged
	return nil
}

// runConverge calls e's type's Converge for view's action with step,
// from state, with a heartbeat while it runs. rd is the reading step was
// planned from: Converge gets its resource, with the values known only at
// apply evaluated.
func (r *run) runConverge(ctx context.Context, e *entry, view *plan.Resource, rd *plan.Reading, state *resources.State, step *resources.Step) error {
	env := &resources.Env{StateDir: r.a.StateDir, Logger: r.logger.Named(e.pr.Address), Sensitive: e.pr.Sensitive, Later: r.later}
	if !e.pr.Sensitive {
		env.Output = func(stream, line string) { r.hooks.Output(view, stream, line) }
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		t := time.NewTicker(r.heart)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.hooks.Heartbeat(view, time.Since(start))
			}
		}
	}()
	desired := e.desired.WithAction(view.Action)
	if rd.Desired != nil {
		desired = rd.Desired.WithAction(view.Action) // with its values known at apply
	}
	err := r.protect(e, "Converge", func() error {
		return resources.ConvergeStep(ctx, e.typ, env, desired, state, step)
	})
	close(done)
	wg.Wait()
	return err
}

// doLater does the deferred work (resources.Later) that may not wait until
// after desired converges, before it is read for that: a service is read
// after the daemon-reload that unit files changed before it need. A
// failure is the resource's: it is not converged.
func (r *run) doLater(ctx context.Context, desired *resources.Resource) error {
	if len(r.later.Pending()) == 0 {
		return nil
	}
	r.syncJournal() // what is done is printed before the work waits
	r.logger.Debug("doing deferred work before the next resource", "resource", desired.Address(), "pending", strings.Join(r.later.Pending(), ", "))
	if err := r.later.Before(ctx, desired); err != nil {
		return fmt.Errorf("before converging, toque did the work earlier resources of this apply left for later, and it failed: %w", err)
	}
	return nil
}

// skippedNow words the guard that now decides to skip a resource the plan
// runs: "not_if `test -f x` now true".
func skippedNow(rd *plan.Reading) string {
	o := rd.Guards[rd.DecidedBy]
	return o.Spec.Describe() + " now " + conditionWord(o.Spec, o.Condition, true)
}

// decidedAtApply words the verdicts of rd's guards decided at apply.
func decidedAtApply(rd *plan.Reading) []string {
	var out []string
	for _, o := range rd.Guards {
		if o.Spec != nil && o.Spec.AtApply && o.Err == nil && !o.Deferred {
			out = append(out, o.Spec.Verdict(o.Condition))
		}
	}
	return out
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// protect runs a resource type's Converge, turning a panic into an error
// so one broken resource type cannot take down the apply. (Load and Plan
// are protected by the lifecycle.)
func (r *run) protect(e *entry, method string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.logger.Error("resource type panicked", "resource", e.pr.Address, "method", method, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("resource type %q panicked in %s: %v", e.pr.Type, method, v)
		}
	}()
	return f()
}
