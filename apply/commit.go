package apply

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"time"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// Group commit: apply converges resources one at a time, in plan order,
// and waits for the disk after each (the file written, its directory, the
// journal's line): three flushes per file, so that creating 10,000 files
// took 20 s, however fast toque itself was. A run of planned creates that
// cannot see each other is instead staged, then committed as a group:
//
//  1. each resource is read again and its step decided exactly as
//     convergeOne does, then staged (resources.Stager): the new file is
//     written under its temporary name, not synced;
//  2. resources.SyncStaged makes all the staged data durable (one syncfs
//     per file system);
//  3. each is committed in plan order (the rename that makes it visible);
//  4. resources.SyncCommitted makes the renames durable (one fsync per
//     directory);
//  5. the journal records each outcome, then is synced once;
//  6. the progress of each (PreApply, then PostApply) is reported, in plan
//     order, as it would have been one at a time.
//
// So the crash guarantee is the one of one-at-a-time: whenever toque is
// killed or the host loses power, each file is its old content (absent,
// for a create) or its new content, never empty or partial, as no rename
// reaches the disk before its data; and the journal never says done what
// is not durably done (an outcome is recorded after its rename is synced,
// and reported after it is recorded). What a crash can leave is a
// temporary file, which the next write of that path removes.
//
// Resources are staged only when nothing that happens between them could
// see the difference: a planned create of one action, of a type that
// stages it, with no guards (they run again right before converging), no
// notification edges either way, without ignore_failure, with no value
// known only at apply (the recipe's lazy values or its type's awaited
// ones: evaluated or read right before converging), not a
// child resource, with no work left for later by an earlier resource
// pending (it is done before the next resource), and whose path
// is neither a staged path, nor under one, nor above one. Anything else
// commits the group first, then runs as before. A group is also committed
// when it holds commitGroupMax resources, before apply stops on the first
// Ctrl-C (the group is the work in hand), and at the end.

// commitGroupMax is how many resources a group holds at most: it bounds
// the descriptors held (two per staged file) and how long progress waits.
// A variable for tests, as is groupCommit, which turns groups off (each
// resource then converges on its own, as before groups).
var (
	commitGroupMax = 128
	groupCommit    = true
)

// group is the resources staged and not yet committed, in plan order.
type group struct {
	items []*groupItem
	// paths are the staged paths, and above every directory holding one,
	// for the independence check.
	paths, dirs map[string]bool
}

// groupItem is one resource of a group: staged (staged set), or found
// already done or unchanged (nothing to commit), or failed while being
// read or staged (err set; it ends the group).
type groupItem struct {
	e           *entry
	rr          *ResourceReport
	view        *plan.Resource
	staged      resources.Staged
	alreadyDone bool
	outcome     string
	reason      string
	differs     string
	err         error
	start       time.Time
}

func (g *group) add(it *groupItem, path string) {
	if g.paths == nil {
		g.paths, g.dirs = map[string]bool{}, map[string]bool{}
	}
	g.items = append(g.items, it)
	g.paths[path] = true
	for d := filepath.Dir(path); !g.dirs[d]; d = filepath.Dir(d) {
		g.dirs[d] = true
		if d == "/" || d == "." {
			break
		}
	}
}

// independent reports whether path can join the group: it is no staged
// path, and no staged path is above or below it.
func (g *group) independent(path string) bool {
	if len(g.items) == 0 {
		return true
	}
	if g.paths[path] || g.dirs[path] {
		return false
	}
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if g.paths[d] {
			return false
		}
		if d == "/" || d == "." {
			return true
		}
	}
}

// abort removes what the group staged: none of it happened.
func (g *group) abort() {
	for _, it := range g.items {
		if it.staged != nil {
			it.staged.Abort()
		}
	}
	*g = group{}
}

// stager returns e's type as a resources.Stager, and the path e's step
// would change, when e may join g (see above).
func (r *run) stager(e *entry, g *group, nt *notifier) (resources.Stager, string, bool) {
	pr := e.pr
	if !groupCommit || e.typ == nil || e.desired == nil || e.earlier != nil || pr.Kind != resources.Create || pr.Steps() != 1 ||
		len(pr.GuardSpecs) > 0 || len(pr.Notifications) > 0 || len(pr.NotifiedBy) > 0 || len(nt.edges[pr.Address]) > 0 || pr.IgnoreFailure ||
		len(pr.Lazy) > 0 || len(pr.Awaits) > 0 || pr.Parent != "" || len(r.later.Pending()) > 0 {
		return nil, "", false
	}
	st, ok := e.typ.(resources.Stager)
	if !ok {
		return nil, "", false
	}
	path := st.StagePath(e.desired)
	if path == "" || !filepath.IsAbs(path) || !g.independent(path) {
		return nil, "", false
	}
	return st, path, true
}

// stage reads e again and stages its step, as convergeOne would converge
// it: the same reading, the same decisions, the same errors. It returns
// nil when e's step is not one its type stages: e then goes the usual way.
func (r *run) stage(ctx context.Context, e *entry, rr *ResourceReport, st resources.Stager) *groupItem {
	view := e.pr.StepView(0)
	it := &groupItem{e: e, rr: rr, view: view, start: time.Now()}
	rd, err := r.lc.Evaluate(ctx, r.stepSubject(e, 0, e.pr.GuardSpecs))
	switch {
	case err != nil:
		it.err = err
		return it
	case rd.Skip:
		return nil // not guarded, so never; convergeOne words it
	case e.alreadyDone && rd.Step.Kind == resources.NoOp:
		it.alreadyDone = true
		return it
	}
	if e.planned != "" && rd.Fingerprint() != e.planned {
		it.differs = describeDifferences(e.typ, e.pr, rd.Current)
		r.logger.Info("live state differs from the plan because of an earlier change in this run", "resource", e.pr.Address, "differences", it.differs)
	}
	step := rd.Step
	if step.Kind == resources.NoOp {
		it.outcome, it.reason = OutcomeUnchanged, "already in the planned state"
		if it.differs != "" {
			it.reason += ": an earlier resource in this run brought it there"
		}
		return it
	}
	if err := allowed(view, step); err != nil {
		it.err = err
		return it
	}
	if step.Reason != "" && step.Reason != view.Reason {
		it.reason = step.Reason
	}
	env := &resources.Env{StateDir: r.a.StateDir, Logger: r.logger.Named(e.pr.Address), Sensitive: e.pr.Sensitive}
	var staged resources.Staged
	err = r.protect(e, "Stage", func() error {
		var err error
		staged, err = st.Stage(ctx, env, e.desired.WithAction(view.Action), rd.State, step)
		return err
	})
	switch {
	case err != nil:
		it.err = err
	case staged == nil:
		return nil
	default:
		it.staged, it.outcome = staged, OutcomeChanged
	}
	return it
}

// commit commits g (see above) and empties it. It returns the address of
// the last resource it finished or failed ("" for an empty group), and
// the error that stops the apply: the failure of a resource (which ends
// the group: resources staged after it are removed, as never started), or
// of the journal.
func (r *run) commit(ctx context.Context, g *group) (last string, err error) {
	items := g.items
	*g = group{}
	if len(items) == 0 {
		return "", nil
	}
	failAt, failErr := -1, error(nil)
	for k, it := range items {
		if it.err != nil {
			failAt, failErr = k, it.err
			break
		}
	}
	end := len(items)
	if failAt >= 0 {
		end = failAt
	}
	var staged []resources.Staged
	for _, it := range items[:end] {
		if it.staged != nil {
			staged = append(staged, it.staged)
		}
	}
	// What was recorded before the group (a run's end) is made durable
	// before the group changes anything, as one at a time it would be.
	r.syncJournal()
	if err := resources.SyncStaged(staged); err != nil {
		// Nothing is committed: the first staged resource fails with it.
		for k, it := range items[:end] {
			if it.staged != nil {
				failAt, failErr, end = k, err, k
				break
			}
		}
	}
	var committed []resources.Staged
	var committedAt []int
	for k, it := range items[:end] {
		if it.staged == nil {
			continue
		}
		if err := it.staged.Commit(); err != nil {
			failAt, failErr, end = k, err, k
			break
		}
		committed = append(committed, it.staged)
		committedAt = append(committedAt, k)
	}
	if i, err := resources.SyncCommitted(committed); err != nil {
		// Renamed, but not known durable: that resource fails, and those
		// after it are reported as not started (the next apply finds them
		// done).
		failAt, failErr, end = committedAt[i], err, committedAt[i]
	}
	for _, it := range items {
		if it.staged != nil {
			it.staged.Close()
		}
	}
	for _, it := range items[end:] {
		if it.staged != nil && !slices.Contains(committed, it.staged) {
			it.staged.Abort()
		}
	}

	n := end
	if failAt >= 0 {
		n = failAt + 1
	}
	for k, it := range items[:n] {
		recorded := r.settleStaged(ctx, it, k == failAt, failErr)
		if jerr := r.j.endedUnsynced(stepRef{index: it.e.idx}, it.e.pr.Address, it.e.pr.Kind, recorded); jerr != nil && err == nil {
			err = jerr
		}
		pr, view, rep := it.e.pr, it.view, *it.rr
		if it.alreadyDone {
			r.j.afterSync(func() { r.out.AlreadyDone(pr) })
			continue
		}
		r.j.afterSync(func() {
			r.out.PreApply(view)
			r.out.PostApply(view, rep)
		})
	}
	if jerr := r.j.sync(); jerr != nil && err == nil {
		err = jerr
	}
	last = items[n-1].e.pr.Address
	if failAt >= 0 {
		return last, errors.Join(&ResourceError{Address: items[failAt].e.pr.Address, Err: failErr}, err)
	}
	return last, err
}

// settleStaged fills the report of a finished group item, as convergeOne fills
// it, and returns the outcome the journal records.
func (r *run) settleStaged(ctx context.Context, it *groupItem, failed bool, failErr error) string {
	e, rr := it.e, it.rr
	rr.DurationMS = time.Since(it.start).Milliseconds()
	switch {
	case failed:
		err := &ResourceError{Address: e.pr.Address, Err: failErr}
		rr.Error, rr.Outcome = err.Error(), OutcomeFailed
		rr.DiffersFromPlan = it.differs
		return failedOutcome(ctx, rr.Outcome)
	case it.alreadyDone:
		rr.Outcome = OutcomeAlreadyDone
		rr.Reason = "already in the planned state (" + e.pr.Reason + " at plan time)"
		return rr.Outcome
	}
	rr.Outcome, rr.DiffersFromPlan = it.outcome, it.differs
	if it.reason != "" {
		rr.Reason = it.reason
	}
	return rr.Outcome
}
