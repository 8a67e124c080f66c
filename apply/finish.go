package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// finish is Apply's last phase, which runs however the converge loop
// ended: the deferred work still pending (finishLater), the report's
// totals (with the resources not started counted in ie, the interruption,
// when there was one), the report written to the state directory, and
// the end of the apply recorded in the journal (end). It returns rep and
// runErr joined with the errors of the first two; a journal that cannot
// record the end is a warning.
func (r *run) finish(ctx context.Context, rep *Report, runErr error, ie *InterruptedError) (*Report, error) {
	interrupted := ie != nil
	if err := r.finishLater(ctx); err != nil {
		runErr = errors.Join(runErr, err)
	}
	endErr := r.checkEnd(ctx, rep, runErr, interrupted)
	if interrupted {
		rep.Interrupted = true
		for i, e := range r.entries {
			if rep.Resources[i].Outcome == OutcomeNotStarted && e.pr.AnyWork() {
				ie.NotStarted++
			}
		}
	}
	r.settleUnreached(rep)
	rep.PlanFinished = runErr == nil
	rep.Finished = r.now()
	rep.tally()
	if err := rep.write(r.state); err != nil {
		r.logger.Error("could not write the apply report", "error", err)
		runErr = errors.Join(runErr, err)
	}
	r.end(rep, interrupted)
	if endErr != nil {
		return rep, errors.Join(runErr, endErr)
	}
	return rep, runErr
}

// settleUnreached gives the resources the converge loop did not reach
// (it stopped at a failure or an interruption) and that had nothing to do
// the outcome their turn would have given them without reading anything
// (settle): unchanged, or skipped by a guard at plan. Only work is "not
// started": a resource whose action is nothing, or a no-op, had nothing
// to start.
func (r *run) settleUnreached(rep *Report) {
	for i, e := range r.entries {
		if rr := &rep.Resources[i]; rr.Outcome == OutcomeNotStarted && !r.hasWork(e) {
			r.settle(e, rr)
		}
	}
}

// finishLater does the deferred work still pending at the end of the
// apply — also after a failure, since the resources that deferred it did
// change the host — but not once the apply is aborted.
func (r *run) finishLater(ctx context.Context) error {
	pending := r.later.Pending()
	if len(pending) == 0 || ctx.Err() != nil {
		return nil
	}
	r.syncJournal() // the last resources' progress first
	r.logger.Debug("doing deferred work at the end of the apply", "pending", strings.Join(pending, ", "))
	if err := r.later.Flush(ctx); err != nil {
		return fmt.Errorf("at the end of the apply, toque did the work earlier resources left for later, and it failed: %w", err)
	}
	return nil
}

// end records the end of this apply in the journal. A plan whose journal
// cannot say it finished is resumed, with nothing left to do, by its next
// apply, so this failing is a warning, not an error.
func (r *run) end(rep *Report, interrupted bool) {
	outcome := "complete"
	switch {
	case interrupted:
		outcome = "interrupted"
	case !rep.PlanFinished:
		outcome = "failed"
	}
	err, cleanup := r.j.finish(outcome, rep.PlanFinished, rep.Path)
	if err != nil {
		r.logger.Error("could not record the end of the apply in the journal", "error", err)
		r.hooks.Warning(err)
	}
	if cleanup != nil {
		r.logger.Warn("could not compact or prune apply journals", "error", cleanup)
		r.hooks.Warning(&JournalError{Path: r.j.dir.Path(), Err: fmt.Errorf("compacting or pruning: %w", cleanup)})
	}
}

// doneEarlier is the reason of a step an earlier apply of the plan
// finished: "changed by an earlier apply of this plan at 2025-…".
func doneEarlier(s *pastStep) string {
	return fmt.Sprintf("%s by an earlier apply of this plan at %s; not done again", s.outcome, s.at.UTC().Format(time.RFC3339))
}
