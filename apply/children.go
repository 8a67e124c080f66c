package apply

import (
	"context"
	"errors"
	"time"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// Child resources (declared in an action of a resource type written in
// HCL) are resources of the plan of their own, read at pre-flight and
// journaled like any other; but they are converged by their parent, in
// the place its action gives them (resources.Composite.Sequence), in
// between the parent's own converge groups. A child that changed marks
// its parent changed, so the parent's notifications fire, as Chef's
// resources inside actions do. A parent skipped by a guard skips its
// children with it.

// sequence is the composite type of e and the order e's step si
// converges in, when that action declares child resources the plan holds;
// nil otherwise.
func (r *run) sequence(e *entry, si int) []resources.SequenceItem {
	if e.typ == nil || len(r.tree.Children(e.idx, si)) == 0 {
		return nil
	}
	c, ok := e.typ.(resources.Composite)
	if !ok {
		return nil
	}
	return c.Sequence(e.pr.StepView(si).Action)
}

// children are e's children of step si declared by the block at the
// local address local (TYPE[NAME]): that child, or the instances of a
// child with for_each or count, in plan order; none when the plan holds
// none.
func (r *run) children(e *entry, si int, local string) []*entry {
	var out []*entry
	for _, ci := range r.tree.Children(e.idx, si) {
		c := r.entries[ci]
		if resources.Address(c.pr.Type, c.pr.Name) == local {
			out = append(out, c)
		}
	}
	return out
}

// settle reports whether e has nothing to converge (skipped by a guard
// at plan time, or no work, its children's included), recording that
// outcome in rr.
func (r *run) settle(e *entry, rr *ResourceReport) bool {
	switch {
	case e.pr.Kind == resources.Skip:
		rr.Outcome = OutcomeSkipped
	case !r.hasWork(e):
		rr.Outcome = OutcomeUnchanged
	default:
		return false
	}
	return true
}

// hasWork reports whether e, or a child resource of it, has planned work.
func (r *run) hasWork(e *entry) bool {
	return e.pr.AnyWork() || r.tree.ChildWork(e.idx)
}

// convergeComposite converges e's step si, whose action declares child
// resources: it reads e again (guards first), then walks the action's
// sequence: each of e's own converge groups that the fresh step runs, and
// each child resource, converged as the main loop converges a resource
// (its own guards, reading, notifications and journal). It fills rr;
// record journals e's start and end (false when a resource of several
// actions is journaled around all of them).
func (r *run) convergeComposite(ctx context.Context, e *entry, si int, seq []resources.SequenceItem, rr *ResourceReport, record bool, nt *notifier) error {
	view := e.pr.StepView(si)
	start := time.Now()
	ref := stepRef{index: e.idx}
	rd, err := r.readToConverge(ctx, e, si, view, rr)
	if rd != nil && len(rd.Resolved) > 0 {
		rr.KnownAtApply = rd.Resolved
	}
	if err == nil && rd.Skip {
		r.hooks.PreApply(view)
		why := skippedNow(rd)
		rr.Outcome, rr.Reason, rr.DiffersFromPlan = OutcomeSkipped, "skipped: "+why, why
		if o := rd.Guards[rd.DecidedBy]; o.Spec.AtApply {
			verdict := o.Spec.Verdict(o.Condition)
			why = "decided at apply: " + verdict
			rr.Reason, rr.DiffersFromPlan = SkippedAtApply+verdict, ""
		}
		r.skipChildren(e, si, nt.rep, "skipped with "+e.pr.Address+": "+why)
		var jerr error
		if record {
			jerr = r.j.ended(ref, e.pr.Address, e.pr.Kind, rr.Outcome, nil)
		}
		r.hooks.PostApply(view, *rr)
		return jerr
	}
	if record {
		if jerr := r.j.started(ref, e.pr.Address, e.pr.Kind); jerr != nil {
			return jerr
		}
	}
	r.hooks.PreApply(view)
	own, children := false, false
	if err == nil {
		own, children, err = r.walk(ctx, e, si, seq, view, rd, rr, nt)
	}
	rr.DurationMS = time.Since(start).Milliseconds()
	switch {
	case err != nil:
		var re *ResourceError
		if !errors.As(err, &re) {
			err = &ResourceError{Address: e.pr.Address, Err: err}
		}
		rr.Error = err.Error()
		rr.Outcome = OutcomeFailed
		if e.pr.IgnoreFailure {
			rr.Outcome = OutcomeFailedIgnored
		}
	case own || children:
		rr.Outcome = OutcomeChanged
		if !own {
			rr.Reason = "its child resources changed"
		}
	default:
		rr.Outcome = OutcomeUnchanged
		rr.Reason = "already in the planned state"
	}
	recorded := rr.Outcome
	if err != nil {
		recorded = failedOutcome(ctx, rr.Outcome)
	}
	if record {
		if jerr := r.j.ended(ref, e.pr.Address, e.pr.Kind, recorded, nil); jerr != nil {
			err = errors.Join(err, jerr)
		}
	}
	r.hooks.PostApply(view, *rr)
	return err
}

// walk carries out the sequence of e's step si from the fresh reading
// rd, reporting whether e's own groups ran and whether a child changed.
func (r *run) walk(ctx context.Context, e *entry, si int, seq []resources.SequenceItem, view *plan.Resource, rd *plan.Reading, rr *ResourceReport, nt *notifier) (own, children bool, err error) {
	step := rd.Step
	planned := e.planned
	if si > 0 {
		planned = "" // a later action starts from a predicted state
	}
	if planned != "" && rd.Fingerprint() != planned {
		rr.DiffersFromPlan = describeDifferences(e.typ, e.pr, rd.Current)
	}
	if step.Kind != resources.NoOp {
		if err := allowed(view, step); err != nil {
			return false, false, err
		}
		if step.Reason != "" && step.Reason != view.Reason {
			rr.Reason = step.Reason
		}
	}
	for _, it := range seq {
		if err := ctx.Err(); err != nil {
			return own, children, err
		}
		if it.Group != "" {
			if !step.Kind.IsWork() || !step.HasGroup(it.Group) {
				continue
			}
			one := *step
			one.Groups = []string{it.Group}
			if err := r.runConverge(ctx, e, view, rd, rd.State, &one); err != nil {
				return own, children, err
			}
			own = true
			continue
		}
		for _, c := range r.children(e, si, it.Child) {
			crr := &nt.rep.Resources[c.idx]
			if c.earlier != nil {
				children = children || c.earlier.outcome == OutcomeChanged
				continue
			}
			if r.settle(c, crr) {
				continue
			}
			if err := r.convergeResource(ctx, c, crr, nt); err != nil {
				if c.pr.IgnoreFailure && ownFailure(err, c.pr.Address) {
					r.logger.Warn("child resource failed; ignore_failure is set, continuing", "resource", c.pr.Address, "error", err)
					continue
				}
				return own, children, err
			}
			if err := r.j.Err(); err != nil {
				return own, children, err
			}
			children = children || crr.Outcome == OutcomeChanged
		}
	}
	return own, children, nil
}

// skipChildren reports e's children of step si (and theirs) skipped with
// it.
func (r *run) skipChildren(e *entry, si int, rep *Report, why string) {
	for _, ci := range r.tree.Children(e.idx, si) {
		c := r.entries[ci]
		if c.earlier != nil {
			continue
		}
		rep.Resources[ci].Outcome, rep.Resources[ci].Reason = OutcomeSkipped, why
		r.skipChildren(c, -1, rep, why)
	}
}

// aboutToChange reports whether e's step si is about to change the host:
// a fresh reading of e, or of a child resource it declares, needs work.
// It decides e's before notifications.
func (r *run) aboutToChange(ctx context.Context, e *entry, si int) bool {
	rd, err := r.lc.Evaluate(ctx, decide(r.stepSubject(e, si, e.pr.GuardSpecs)))
	if err != nil || rd.Skip {
		return false // converging evaluates again and reports
	}
	if rd.Step.Kind != resources.NoOp {
		return true
	}
	for _, ci := range r.tree.Children(e.idx, si) {
		c := r.entries[ci]
		if c.earlier != nil || c.typ == nil || !r.hasWork(c) {
			continue
		}
		for csi := 0; csi < c.pr.Steps(); csi++ {
			if r.aboutToChange(ctx, c, csi) {
				return true
			}
		}
	}
	return false
}
