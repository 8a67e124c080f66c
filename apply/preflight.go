package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// preflight reads every resource again before anything changes. It fills
// r.entries, marks resources already in their planned state, and returns a
// *StaleError when any other resource changed since the plan was made.
func (r *run) preflight(ctx context.Context) error {
	var errs []error
	var stale []StaleResource
	for i, pr := range r.p.Resources {
		e := &entry{pr: pr, idx: i, planned: plannedFingerprint(pr)}
		if s := r.j.past.resources[i]; s.final() {
			e.earlier = s
		}
		r.entries = append(r.entries, e)
	}
	r.preload(ctx)
	// The data blocks are read again beside the resources (data.go).
	dataChecked := r.preflightData(ctx)
	// Every check only reads (Load, guards), and checks are independent:
	// they run like the planner's reads, PreflightParallelism at a time;
	// their results are taken in plan order.
	// The files of a directory are read through one descriptor of it, as
	// the planner reads them (resources.Reads): nothing is changed
	// before every check is done.
	results := make([]preflightResult, len(r.entries))
	reads := resources.NewReads()
	r.preflightAll(resources.WithReads(ctx, reads), results)
	reads.Close()
	dataStale, dataErrs := dataChecked()
	if err := ctx.Err(); err != nil {
		return &InterruptedError{Aborted: true, NotStarted: countWork(r.p), Err: err}
	}
	stale, errs = append(stale, dataStale...), append(errs, dataErrs...)
	for _, res := range results {
		if res.err != nil {
			errs = append(errs, res.err)
		}
		if res.stale != nil {
			stale = append(stale, *res.stale)
		}
	}
	ns, nerrs := r.preflightNotified(r.withForesight(ctx))
	stale, errs = append(stale, ns...), append(errs, nerrs...)
	if len(errs) > 0 {
		return fmt.Errorf("pre-flight: could not check %d resource%s against the plan; nothing was changed: %w", len(errs), plural(len(errs)), errors.Join(errs...))
	}
	if len(stale) > 0 {
		return &StaleError{Resources: stale}
	}
	return nil
}

// preload reads, one batch per type that reads in batches, every entry
// pre-flight will read (see resources.BatchLoader).
func (r *run) preload(ctx context.Context) {
	var subjects []*plan.Subject
	of := map[*plan.Subject]*entry{}
	for _, e := range r.entries {
		pr := e.pr
		if e.earlier != nil || (pr.Action == "nothing" && pr.Kind == resources.NoOp) || pr.Kind == resources.Skip {
			continue
		}
		t, d, err := plan.DesiredResource(r.reg, pr)
		if err != nil {
			continue // preflightOne reports it
		}
		if _, ok := t.(resources.BatchLoader); !ok {
			continue
		}
		if _, ok := t.(resources.BatchSharer); ok && !guard.PassAtPlan(pr.GuardSpecs) {
			// The planner read it on its own (planner.preload): so
			// does pre-flight, or it would compare it with a reading
			// composed with others that it was not planned on.
			continue
		}
		s := &plan.Subject{Address: pr.Address, Type: t, Desired: d}
		subjects = append(subjects, s)
		of[s] = e
	}
	for s, st := range r.lc.Preload(ctx, subjects) {
		of[s].preloaded = st
	}
}

// PreflightParallelism is how many resources pre-flight checks at once.
const PreflightParallelism = 10

// preflightResult is one resource's pre-flight verdict.
type preflightResult struct {
	stale *StaleResource
	err   error
	// provides is what the resource's step, planned again, provides
	// (with predictions: preflightAll).
	provides []resources.Need
}

// preflightOne checks one resource against the plan: its guards' verdict,
// then its live state. It marks e already done when the host is in its
// planned state, and returns a stale entry for any other difference. A
// resource an earlier apply of the plan finished is not checked: it is
// not done again, whatever it looks like now. A run an earlier apply
// started but did not see end may or may not have happened: stale.
func (r *run) preflightOne(ctx context.Context, e *entry) preflightResult {
	pr := e.pr
	if e.earlier != nil {
		return preflightResult{}
	}
	if s := r.j.past.resources[e.idx]; pr.Kind == resources.Run && s.inDoubt() {
		return preflightResult{stale: inDoubt(pr.Address, s)}
	}
	switch pr.Kind {
	case resources.Skip, resources.NoOp, resources.Create, resources.Update, resources.Delete, resources.Run:
	default:
		return preflightResult{err: &ResourceError{Address: pr.Address, Err: fmt.Errorf("the plan holds an unknown kind of step %q", pr.Kind)}}
	}
	if pr.Action == "nothing" && pr.Kind == resources.NoOp {
		// Not read at plan time: nothing to compare. Its notified runs are
		// checked by preflightNotified.
		return preflightResult{}
	}
	// The guards again when they decided something: a different verdict
	// makes the plan stale.
	checkGuards := len(pr.GuardSpecs) > 0 && (pr.Kind == resources.Skip || pr.AnyWork())
	if pr.Kind == resources.Skip && !checkGuards {
		return preflightResult{}
	}
	t, d, err := plan.DesiredResource(r.reg, pr)
	if err != nil {
		return preflightResult{err: &ResourceError{Address: pr.Address, Err: err}}
	}
	e.typ, e.desired = t, d
	var guards []*guard.Spec
	if checkGuards {
		guards = pr.GuardSpecs
	}
	subj := r.subject(e, guards)
	subj.State = e.preloaded
	rd, err := r.lc.Evaluate(ctx, subj)
	if checkGuards && !guardsFailed(err) {
		if sr := guardsStale(pr, pr.Guards, rd); sr != nil {
			return preflightResult{stale: sr}
		}
	}
	if err != nil {
		return preflightResult{err: &ResourceError{Address: pr.Address, Err: err}}
	}
	if rd.Skip {
		// Skipped by a guard at plan time, and still: not read.
		return preflightResult{}
	}
	r.expectFrom(e, 0, rd.State)
	res := r.compareReading(ctx, e, rd)
	if rd.Step != nil && rd.Step.Kind.IsWork() {
		res.provides = rd.Step.Provides
	}
	return res
}

// compareReading is pre-flight's verdict on rd, a fresh reading of e (not
// skipped by its guards), against the plan's: the same fingerprint is
// fine; planned work that would now take no step marks e already done; a
// planned no-op that still takes none is fine, whatever else moved; any
// other difference is a stale entry that names what differs. A resource of
// several actions is checked action by action (preflightActions).
func (r *run) compareReading(ctx context.Context, e *entry, rd *plan.Reading) preflightResult {
	pr := e.pr
	if e.planned != "" && rd.Fingerprint() == e.planned {
		return preflightResult{}
	}
	if pr.Steps() > 1 {
		return r.preflightActions(ctx, e, rd)
	}
	step := rd.Step
	switch {
	case step.Kind == resources.NoOp && pr.Kind.IsWork():
		r.logger.Debug("already in the planned state", "resource", pr.Address)
		e.alreadyDone = true
		return preflightResult{}
	case step.Kind == resources.NoOp:
		// Planned no-op and still nothing to do: what changed is state the
		// recipe does not manage.
		return preflightResult{}
	case e.planned == "" && step.Kind == pr.Kind:
		return preflightResult{}
	}
	sr := &StaleResource{Address: pr.Address, Planned: pr.Kind, Now: step.Kind}
	if pr.Current != nil {
		sr.Differences = exactDifferences(e.typ, pr, pr.Current, rd.Current)
		if len(pr.Awaits) > 0 && len(sr.Differences) == 0 && step.Kind == pr.Kind {
			// Only what its values known at apply are known from moved
			// (the repositories offer it already): they are unknown to
			// this plan, whatever they are now.
			return preflightResult{}
		}
		if len(sr.Differences) == 0 {
			sr.Differences = []plan.Difference{{Property: "fingerprint", Then: e.planned, Now: rd.Fingerprint()}}
		}
	}
	return preflightResult{stale: sr}
}

// plannedFingerprint is the fingerprint of the plan's reading of r.
func plannedFingerprint(r *plan.Resource) string {
	if r.Fingerprint != "" {
		return r.Fingerprint
	}
	if r.Current != nil {
		return r.Current.Fingerprint()
	}
	return ""
}

// exactDifferences is how now differs from then, the plan's reading of
// pr, leaving out the facts pr's values known only at apply by its type
// are known from (resources.Awaiter): the plan treats those values as
// unknown, so what they come from may move; and the live value of a
// property the recipe wrote lazy(…) that the plan did not read (Load is
// given a value known only at apply once it is known, and may read more
// with it: a file's content).
func exactDifferences(t resources.Type, pr *plan.Resource, then, now *plan.Current) []plan.Difference {
	ds := plan.CompareCurrent(then, now)
	if u := then.Extra[resources.ExtraUnknownAtPlan]; u != "" {
		// Read from a prediction: what it could not know is set aside
		// (nor is the mark itself a difference), here as for Awaits.
		unknown := strings.Split(u, ",")
		ds = slices.DeleteFunc(ds, func(d plan.Difference) bool {
			_, had := then.Extra[d.Property]
			return d.Property == resources.ExtraUnknownAtPlan || !had && slices.Contains(unknown, d.Property)
		})
	}
	if len(pr.Awaits) == 0 && len(pr.Lazy) == 0 {
		return ds
	}
	out := ds[:0]
	for _, d := range ds {
		_, read := then.Values[d.Property]
		aside := pr.Lazy[d.Property] != nil && !read
		for _, a := range pr.Awaits {
			aside = aside || resources.KnownFrom(t, a.Property, d.Property)
		}
		if !aside {
			out = append(out, d)
		}
	}
	return out
}

// inDoubt is the stale entry of a run an earlier apply of the plan started
// and did not see end.
func inDoubt(addr string, s *pastStep) *StaleResource {
	return &StaleResource{Address: addr, Planned: resources.Run, StartedEarlier: s.started, Differences: []plan.Difference{{
		Property: "run",
		Then:     "not run",
		Now:      "started at " + s.started.UTC().Format(time.RFC3339) + " by an earlier apply of this plan that did not record its end: it may or may not have run",
	}}}
}

// preflightActions checks a resource of several actions whose live reading
// is not the plan's: each action is planned again from it (the later ones
// from the state the earlier ones are predicted to leave). All of them
// taking no step is "already done". Otherwise each action is held to a
// single action's rule: taking no step is fine (someone, or an earlier
// apply of this plan, did it); taking the planned kind of step is fine
// only from the state the plan showed it starting from — the whole live
// state for the first action (unless the plan recorded no fingerprint),
// the properties the plan predicted for the later ones; anything else
// makes the plan stale.
func (r *run) preflightActions(ctx context.Context, e *entry, first *plan.Reading) preflightResult {
	pr := e.pr
	actions := make([]string, pr.Steps())
	for i := range actions {
		actions[i] = pr.StepView(i).Action
	}
	readings, err := r.lc.EvaluateActions(ctx, r.subject(e, nil), actions)
	if err != nil {
		return preflightResult{err: &ResourceError{Address: pr.Address, Err: err}}
	}
	allDone := true
	for _, rd := range readings {
		if rd.Step.Kind != resources.NoOp {
			allDone = false
		}
	}
	if allDone {
		if pr.AnyWork() {
			r.logger.Debug("already in the planned state", "resource", pr.Address)
			e.alreadyDone = true
		}
		return preflightResult{}
	}
	for i, rd := range readings {
		step, now := pr.StepView(i), rd.Step.Kind
		if now == resources.NoOp {
			continue
		}
		var diffs []plan.Difference
		switch {
		case step.Current == nil || rd.Current == nil:
		case i == 0:
			diffs = plan.CompareCurrent(step.Current, rd.Current)
			if len(diffs) == 0 && e.planned != "" {
				diffs = []plan.Difference{{Property: "fingerprint", Then: e.planned, Now: rd.Fingerprint()}}
			}
		default:
			diffs = comparePredicted(step.Current, rd.Current)
		}
		if now == step.Kind && len(diffs) == 0 {
			continue
		}
		return preflightResult{stale: &StaleResource{Address: fmt.Sprintf("%s (action %s)", pr.Address, actions[i]), Planned: step.Kind, Now: now, Differences: diffs}}
	}
	return preflightResult{}
}

// comparePredicted is CompareCurrent limited to what a predicted state
// says: whether the thing exists, and the properties it predicts.
func comparePredicted(then, now *plan.Current) []plan.Difference {
	var out []plan.Difference
	for _, d := range plan.CompareCurrent(then, now) {
		if _, predicted := then.Values[d.Property]; predicted || d.Property == "exists" {
			out = append(out, d)
		}
	}
	return out
}

// guardsFailed reports whether err is a guard that could not run (there is
// no verdict to compare then).
func guardsFailed(err error) bool {
	var le *plan.LifecycleError
	return err != nil && (!errors.As(err, &le) || le.Phase == plan.PhaseGuards)
}

// guardsStale compares the guards' verdict in rd with the plan's (kind
// planned, results planned). It returns the stale entry when the verdict
// (skip or not) is not the plan's.
func guardsStale(pr *plan.Resource, planned []plan.GuardResult, rd *plan.Reading) *StaleResource {
	plannedSkip := pr.Kind == resources.Skip
	if rd.Skip == plannedSkip {
		return nil
	}
	sr := &StaleResource{Address: pr.Address, Planned: pr.Kind}
	if rd.Skip {
		sr.Now = resources.Skip
	}
	for i, o := range rd.Guards {
		if o.Deferred || (o.Spec != nil && o.Spec.AtApply) {
			continue // decided at apply, not at plan
		}
		then := "not evaluated"
		if i < len(planned) {
			if planned[i].Passed == o.Condition {
				continue
			}
			then = conditionWord(o.Spec, planned[i].Passed, false)
		}
		sr.Differences = append(sr.Differences, plan.Difference{
			Property: "guard " + o.Spec.Describe(),
			Then:     then,
			Now:      conditionWord(o.Spec, o.Condition, true),
		})
	}
	return sr
}
