package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// Outcomes of a planned notified run in Report.Notified, besides those of
// a resource.
const (
	// OutcomeNotNotified: no notifier of the run changed at apply (each
	// was already in its planned state, or was skipped or failed), so the
	// run did not happen. Reason says which notifiers did not change.
	OutcomeNotNotified = "not notified"
	// OutcomeRefused: a notifier changed, but the plan did not show this
	// run of the target, so it was not run (see the package doc).
	OutcomeRefused = "refused: not in the plan"
)

// notifyKey is one action of one target.
type notifyKey struct{ addr, action string }

// notifier carries out notifications during one apply, following what
// really changed: a notifier that did not change fires nothing. It runs a
// target's action only as a notified run the plan lists (Plan.NotifiedRuns)
// for that target, action, timing and notifier, so nothing runs that the
// reviewer did not see.
type notifier struct {
	r   *run
	rep *Report
	// edges are each resource's outgoing edges, by address.
	edges map[string][]plan.Notification
	// used marks planned runs already carried out (or refused).
	used map[*plan.NotifiedRun]bool
	// queue holds the delayed actions in the order they were first
	// queued; queued de-duplicates them for the whole run.
	queue  []notifyKey
	queued map[notifyKey][]string
	// active holds the runs in progress: a cycle (which config rejects)
	// in a hand-made plan must not recurse forever.
	active map[notifyKey]bool
	// differs holds, per notifier, how its live state differed from the
	// plan when it converged: the notification followed the live truth.
	differs map[string]string
	// index is each planned run's index in Plan.NotifiedRuns (its key in
	// the journal); earlier holds, for a run an earlier apply of the plan
	// finished, the notifiers it ran for.
	index   map[*plan.NotifiedRun]int
	earlier map[*plan.NotifiedRun][]string
}

func newNotifier(r *run, rep *Report) *notifier {
	n := &notifier{r: r, rep: rep, edges: map[string][]plan.Notification{}, used: map[*plan.NotifiedRun]bool{}, queued: map[notifyKey][]string{}, differs: map[string]string{}, active: map[notifyKey]bool{},
		index: map[*plan.NotifiedRun]int{}, earlier: map[*plan.NotifiedRun][]string{}}
	for _, pr := range r.p.Resources {
		if len(pr.Notifications) > 0 {
			n.edges[pr.Address] = pr.Notifications
		}
	}
	for i, nr := range r.p.NotifiedRuns {
		n.index[nr] = i
	}
	return n
}

// resume takes up what an earlier, unfinished apply of the plan left: its
// finished notified runs are reported and not run again for the same
// notifiers, and the edges of everything it changed are fired again, in the
// order it changed them: an "immediately" run it did not get to runs now,
// a "delayed" one is queued (a run already done for those notifiers is
// not repeated). It returns the first error of a run that failed.
func (n *notifier) resume(ctx context.Context) error {
	past := n.r.j.past
	for i, nr := range n.r.p.NotifiedRuns {
		s := past.notified[i]
		if !s.final() {
			continue
		}
		n.earlier[nr] = s.covered
		view := n.r.p.NotifiedView(nr)
		rr := ResourceReport{Address: nr.Address, Kind: nr.Kind, Outcome: OutcomeDoneEarlier, Reason: nr.Reason + "; " + doneEarlier(s)}
		n.rep.Notified = append(n.rep.Notified, rr)
		n.r.hooks.Resumed(view, rr)
	}
	for _, ref := range past.changed {
		var addr string
		if ref.notified {
			addr = n.r.p.NotifiedRuns[ref.index].Address
		} else {
			addr = n.r.p.Resources[ref.index].Address
		}
		if err := n.fire(ctx, addr, plan.TimingImmediately); err != nil {
			return err
		}
		if err := n.fire(ctx, addr, plan.TimingDelayed); err != nil {
			return err
		}
	}
	return nil
}

// before runs e's before edges when e is about to change: its guards do
// not skip it now and a fresh reading needs a change.
func (n *notifier) before(ctx context.Context, e *entry, si int) error {
	r := n.r
	if !n.has(e.pr.Address, plan.TimingBefore) || e.typ == nil {
		return nil
	}
	if !r.aboutToChange(ctx, e, si) {
		return nil // convergeOne evaluates again and reports
	}
	return n.fire(ctx, e.pr.Address, plan.TimingBefore)
}

// after fires e's immediately and delayed edges when e changed.
func (n *notifier) after(ctx context.Context, e *entry, rr *ResourceReport) error {
	if rr.Outcome != OutcomeChanged || len(n.edges[e.pr.Address]) == 0 {
		return nil
	}
	if rr.DiffersFromPlan != "" {
		n.differs[e.pr.Address] = rr.DiffersFromPlan
	}
	if err := n.fire(ctx, e.pr.Address, plan.TimingImmediately); err != nil {
		return err
	}
	return n.fire(ctx, e.pr.Address, plan.TimingDelayed)
}

// has reports whether addr has outgoing edges of timing.
func (n *notifier) has(addr, timing string) bool {
	for _, e := range n.edges[addr] {
		if e.Timing == timing {
			return true
		}
	}
	return false
}

// fire carries out addr's edges of timing: before and immediately ones run
// their target now, delayed ones are queued. It returns the first error
// of a target run that failed without ignore_failure.
func (n *notifier) fire(ctx context.Context, addr, timing string) error {
	for _, e := range n.edges[addr] {
		if e.Timing != timing {
			continue
		}
		k := notifyKey{e.Target, e.Action}
		if timing == plan.TimingDelayed {
			if from, ok := n.queued[k]; ok {
				if !contains(from, addr) {
					n.queued[k] = append(from, addr)
				}
				continue
			}
			n.queued[k] = []string{addr}
			n.queue = append(n.queue, k)
			continue
		}
		if err := n.runTarget(ctx, k, timing, []string{addr}); err != nil {
			return err
		}
	}
	return nil
}

// drain runs the delayed queue, in order, including actions queued while
// it runs. Every queued action runs even when one fails; the errors are
// joined. It stops early only when ctx is cancelled or a stop was asked.
func (n *notifier) drain(ctx context.Context) error {
	var errs []error
	for i := 0; i < len(n.queue); i++ {
		if ctx.Err() != nil || stopped(n.r.a.Stop) || n.r.j.Err() != nil {
			break
		}
		k := n.queue[i]
		if err := n.runTarget(ctx, k, plan.TimingDelayed, n.queued[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// planned finds the plan's notified run for k at timing triggered by one
// of from, not used yet.
func (n *notifier) planned(k notifyKey, timing string, from []string) *plan.NotifiedRun {
	for _, nr := range n.r.p.NotifiedRuns {
		if n.used[nr] || nr.Address != k.addr || nr.Action != k.action || nr.Timing != timing {
			continue
		}
		for _, f := range from {
			if contains(nr.Notifiers, f) {
				return nr
			}
		}
	}
	return nil
}

// runTarget runs k's planned notified run: guards again, then read,
// plan, check against the plan and converge, like a resource. A run that
// changed fires its own target's edges.
func (n *notifier) runTarget(ctx context.Context, k notifyKey, timing string, from []string) error {
	r := n.r
	nr := n.planned(k, timing, from)
	if n.active[k] {
		nr = nil
	}
	if nr == nil {
		reason := fmt.Sprintf("%s; the plan did not show this run, so it was not run: run toque plan again to review it", plan.NotifiedReason(from, timing, resources.Run, ""))
		r.logger.Warn("notified run not in the plan: not running it", "resource", k.addr, "action", k.action, "timing", timing, "notifiers", strings.Join(from, ", "))
		n.rep.Notified = append(n.rep.Notified, ResourceReport{Address: k.addr, Outcome: OutcomeRefused, Reason: reason})
		return nil
	}
	if done, ok := n.earlier[nr]; ok && subset(from, done) {
		// An earlier apply of the plan ran it for these notifiers.
		return nil
	}
	n.used[nr] = true
	n.active[k] = true
	defer delete(n.active, k)
	view := r.p.NotifiedView(nr)
	view.Reason = plan.NotifiedReason(from, timing, nr.Kind, typeReason(nr))
	rr := ResourceReport{Address: k.addr, Kind: nr.Kind, Outcome: OutcomeNotStarted, Reason: view.Reason}
	var differs []string
	for _, f := range from {
		if d := n.differs[f]; d != "" {
			differs = append(differs, fmt.Sprintf("notified because %s changed, and its live state differed from the plan (%s)", f, d))
		}
	}
	idx := len(n.rep.Notified)
	n.rep.Notified = append(n.rep.Notified, rr)
	err := n.converge(ctx, nr, view, &rr, from)
	if len(differs) > 0 {
		if rr.DiffersFromPlan != "" {
			differs = append(differs, rr.DiffersFromPlan)
		}
		rr.DiffersFromPlan = strings.Join(differs, "; ")
	}
	n.rep.Notified[idx] = rr
	if err != nil {
		var je *JournalError
		if view.IgnoreFailure && !errors.As(err, &je) {
			r.logger.Warn("notified run failed; ignore_failure is set, continuing", "resource", k.addr, "error", err)
			return nil
		}
		return err
	}
	if rr.Outcome == OutcomeChanged {
		if err := n.fire(ctx, k.addr, plan.TimingImmediately); err != nil {
			return err
		}
		return n.fire(ctx, k.addr, plan.TimingDelayed)
	}
	return nil
}

// typeReason is what a notified run's reason says after "notified by …
// (TIMING)": the type's own reason, "" when none.
func typeReason(nr *plan.NotifiedRun) string {
	mark := "(" + nr.Timing + ")"
	i := strings.Index(nr.Reason, mark)
	if i < 0 {
		return ""
	}
	return strings.TrimPrefix(nr.Reason[i+len(mark):], "; ")
}

// converge runs nr for the notifiers from, recording it in the journal as
// convergeOne records a resource.
func (n *notifier) converge(ctx context.Context, nr *plan.NotifiedRun, view *plan.Resource, rr *ResourceReport, from []string) error {
	r := n.r
	if err := r.j.Err(); err != nil {
		return err
	}
	ref := stepRef{notified: true, index: n.index[nr]}
	if nr.Kind == resources.Skip {
		rr.Outcome = OutcomeSkipped
		rr.Reason = "skipped: " + nr.Reason
		return r.j.ended(ref, nr.Address, nr.Kind, rr.Outcome, from)
	}
	if nr.Kind == resources.NoOp {
		// Planned to do nothing (a reload of a service that was not
		// running): as a resource planned as a no-op, it is neither read
		// nor run again — nothing runs that the plan did not show — and
		// it notifies nothing. Its reason is the plan's.
		rr.Outcome = OutcomeUnchanged
		rr.Reason += " (as planned: not read or run again)"
		return r.j.ended(ref, nr.Address, nr.Kind, rr.Outcome, from)
	}
	t, d, err := plan.DesiredResource(r.reg, view)
	if err != nil {
		r.hooks.PreApply(view)
		return n.failed(ctx, ref, from, view, rr, err)
	}
	e := &entry{pr: view, typ: t, desired: d, planned: nr.Fingerprint}
	start := time.Now()
	var rd *plan.Reading
	err = r.doLater(ctx, d)
	if err == nil {
		rd, err = r.lc.Evaluate(ctx, decide(r.subject(e, nr.GuardSpecs)))
	}
	if rd != nil {
		rr.DecidedAtApply = decidedAtApply(rd)
	}
	if err == nil && rd.Skip {
		why := skippedNow(rd)
		rr.Outcome = OutcomeSkipped
		rr.Reason = "skipped: " + why
		if o := rd.Guards[rd.DecidedBy]; o.Spec.AtApply {
			rr.Reason = SkippedAtApply + o.Spec.Verdict(o.Condition)
		} else {
			rr.DiffersFromPlan = why
		}
		return r.j.ended(ref, nr.Address, nr.Kind, rr.Outcome, from)
	}
	if err == nil && rd.Step.Kind != resources.NoOp && n.has(view.Address, plan.TimingBefore) {
		// Before edges of a notified run: only when it is about to
		// change. Their targets may change what it reads: read again.
		if err := n.fire(ctx, view.Address, plan.TimingBefore); err != nil {
			return err
		}
		rd, err = r.lc.Evaluate(ctx, decide(r.subject(e, nil)))
	}
	if jerr := r.j.started(ref, nr.Address, nr.Kind); jerr != nil {
		return jerr
	}
	r.hooks.PreApply(view)
	if err == nil {
		err = r.convergeStep(ctx, e, e.pr, e.planned, rr, rd)
	}
	rr.DurationMS = time.Since(start).Milliseconds()
	if err != nil {
		return n.failed(ctx, ref, from, view, rr, err)
	}
	r.expectNotifiedRun(t, d, rd)
	if rr.Outcome == OutcomeChanged {
		rr.Reason = view.Reason
	}
	jerr := r.j.ended(ref, nr.Address, nr.Kind, rr.Outcome, from)
	r.hooks.PostApply(view, *rr)
	return jerr
}

func (n *notifier) failed(ctx context.Context, ref stepRef, from []string, view *plan.Resource, rr *ResourceReport, err error) error {
	err = &ResourceError{Address: view.Address, Err: err}
	rr.Error = err.Error()
	rr.Outcome = OutcomeFailed
	if view.IgnoreFailure {
		rr.Outcome = OutcomeFailedIgnored
	}
	if jerr := n.r.j.ended(ref, view.Address, view.Kind, failedOutcome(ctx, rr.Outcome), from); jerr != nil {
		err = errors.Join(err, jerr)
	}
	n.r.hooks.PostApply(view, *rr)
	return err
}

// notFired adds a "not notified" entry for every planned notified run
// that did not happen, naming its notifiers' outcomes, and "not started"
// for those the run did not reach.
func (n *notifier) notFired(rep *Report, interrupted bool) {
	outcomes := map[string]string{}
	for _, rr := range rep.Resources {
		outcomes[rr.Address] = rr.Outcome
	}
	for _, rr := range rep.Notified {
		if rr.Outcome != OutcomeNotNotified && rr.Outcome != OutcomeRefused {
			outcomes[rr.Address] = rr.Outcome
		}
	}
	for _, nr := range n.r.p.NotifiedRuns {
		if _, done := n.earlier[nr]; n.used[nr] || done {
			continue
		}
		var why []string
		reached, changed := false, false
		for _, f := range nr.Notifiers {
			o := outcomes[f]
			switch o {
			case "", OutcomeNotStarted:
				continue
			case OutcomeChanged:
				changed = true
			}
			reached = true
			why = append(why, fmt.Sprintf("%s did not change (%s)", f, o))
		}
		rr := ResourceReport{Address: nr.Address, Kind: nr.Kind, Outcome: OutcomeNotNotified}
		switch {
		case changed:
			rr.Outcome = OutcomeNotStarted
			rr.Reason = nr.Reason + "; the apply stopped before it ran"
		case !reached && interrupted:
			rr.Outcome = OutcomeNotStarted
			rr.Reason = nr.Reason + "; the apply stopped before it"
		case !reached:
			rr.Reason = nr.Reason + "; its notifiers did not run"
		default:
			rr.Reason = "not notified: " + strings.Join(why, ", ") + "; planned as " + nr.Reason
		}
		rep.Notified = append(rep.Notified, rr)
	}
}

// subset reports whether every one of xs is in of.
func subset(xs, of []string) bool {
	for _, x := range xs {
		if !contains(of, x) {
			return false
		}
	}
	return true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// preflightNotified checks every planned notified run again before
// anything changes, as pre-flight checks a resource: its guards must give
// the plan's verdict (they were evaluated at plan time on the same,
// not-yet-notified host, so another verdict means the host changed), and a
// target with work must still give the planned kind of step. Either
// difference makes the plan stale. The guards are evaluated once more
// right before the run.
func (r *run) preflightNotified(ctx context.Context) ([]StaleResource, []error) {
	var stale []StaleResource
	var errs []error
	checked := map[string]bool{}
	for i, nr := range r.p.NotifiedRuns {
		// As for resources: a run an earlier apply of the plan finished is
		// not checked; one it started and did not see end is stale.
		s := r.j.past.notified[i]
		if s.final() {
			continue
		}
		if nr.Kind == resources.Run && s.inDoubt() {
			stale = append(stale, *inDoubt(nr.Address+" (notified "+nr.Action+")", s))
			continue
		}
		key := nr.Address + "\x00" + nr.Action
		if checked[key] {
			continue
		}
		checked[key] = true
		checkGuards := len(nr.GuardSpecs) > 0 && (nr.Kind == resources.Skip || nr.HasWork())
		read := nr.HasWork() && nr.Fingerprint != ""
		if !checkGuards && !read {
			continue
		}
		view := r.p.NotifiedView(nr)
		label := nr.Address + " (notified " + nr.Action + ")"
		t, d, err := plan.DesiredResource(r.reg, view)
		if err != nil {
			errs = append(errs, &ResourceError{Address: nr.Address, Err: err})
			continue
		}
		e := &entry{pr: view, typ: t, desired: d, planned: nr.Fingerprint}
		var guards []*guard.Spec
		if checkGuards {
			guards = nr.GuardSpecs
		}
		rd, err := r.lc.Evaluate(ctx, r.subject(e, guards))
		if checkGuards && !guardsFailed(err) {
			if sr := guardsStale(view, nr.Guards, rd); sr != nil {
				sr.Address = label
				stale = append(stale, *sr)
				continue
			}
		}
		if err != nil {
			errs = append(errs, &ResourceError{Address: nr.Address, Err: err})
			continue
		}
		if rd.Skip || !read || rd.Fingerprint() == nr.Fingerprint || rd.Step.Kind == nr.Kind {
			continue
		}
		sr := StaleResource{Address: label, Planned: nr.Kind, Now: rd.Step.Kind}
		if nr.Current != nil {
			sr.Differences = plan.CompareCurrent(nr.Current, rd.Current)
		}
		stale = append(stale, sr)
	}
	return stale, errs
}

// notifyDelayed is the notifications phase after the converge loop: the
// delayed notifications queued while it ran are run (notifier.drain) even
// after a failure, as Chef's are, but not after an interruption, a
// cancelled ctx or a journal that cannot be written; then the report says
// which notifications did not fire (notifier.notFired). It returns runErr,
// the loop's error, joined with the notifications' own.
func (r *run) notifyDelayed(ctx context.Context, nt *notifier, rep *Report, runErr error, interrupted bool) error {
	if !interrupted && ctx.Err() == nil && r.j.Err() == nil {
		// Delayed notifications run even after a failure, as Chef's do;
		// the failure is reported after them.
		if err := nt.drain(ctx); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	nt.notFired(rep, interrupted)
	return runErr
}
