package apply

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// DefaultHeartbeat is the heartbeat interval when Applier.Heartbeat is 0.
const DefaultHeartbeat = 10 * time.Second

// Applier carries out saved plans. The zero values of the optional fields
// are usable defaults; Registry and StateDir are required.
type Applier struct {
	// Registry holds the resource types the plan's resources are rebuilt
	// with.
	Registry *resources.Registry
	// StateDir holds the apply lock, the journal, the reports and the
	// backups. It is created (0700) if missing, and refused unless it can
	// be trusted (statedir.go).
	StateDir string
	// HostLock is the host-wide apply lock file, taken before the state
	// directory's, so that two applies with different state directories
	// cannot run at once. Its directory is created and checked like the
	// state directory. "" takes no host-wide lock (the command always
	// names one).
	HostLock string
	// Logger receives traces; nil discards them.
	Logger hclog.Logger
	// Hooks receives progress; nil means NopHooks.
	Hooks Hooks
	// LockTimeout is how long to wait for a held apply lock; 0 fails at
	// once.
	LockTimeout time.Duration
	// Heartbeat is how often Hooks.Heartbeat is called while a resource
	// runs; 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// Stop is closed on the first SIGINT: the resource in hand finishes,
	// then the run stops and reports. nil never stops.
	Stop <-chan struct{}
	// Now gives the time for timestamps; nil means time.Now.
	Now func() time.Time
	// PlanDigest is the verified plan file's digest ("sha256:HEX"): the
	// key of the plan's journal, recorded in the lock file and the report.
	// "" computes it from the plan.
	PlanDigest string
	// Resolver evaluates what the plan defers to apply (values known only
	// at apply, guards decided at apply by an expression) right before
	// their resource converges. package apply does not evaluate
	// expressions: command hands it eval's. nil fails such a resource.
	Resolver plan.Resolver
}

// run is one Apply call's state.
type run struct {
	a      *Applier
	p      *plan.Plan
	digest string
	state  *StateDir
	// j is the plan's journal: what earlier applies of the plan did, and
	// where this one records what it does.
	j *journal
	// out is Applier.Hooks; hooks is out behind syncingHooks, which every
	// call but the journal's deferred reports goes through.
	out     Hooks
	hooks   Hooks
	logger  hclog.Logger
	now     func() time.Time
	heart   time.Duration
	entries []*entry
	// lc evaluates every resource action (guards, Load, Plan), as the
	// planner did.
	lc *plan.Lifecycle
	// reg holds the resource types: the Applier's, and those written in
	// HCL that the plan carries.
	reg *resources.Registry
	// tree says which child resources each resource's actions declare.
	tree *plan.Tree
	// later holds the work types defer within this apply (a daemon-reload
	// after unit files changed): done before a resource it does not batch
	// with is read to converge, and at the end (doLater, finishLater).
	later *resources.Later
}

// entry is one plan resource being applied.
type entry struct {
	pr      *plan.Resource
	typ     resources.Type
	desired *resources.Resource
	// planned is the fingerprint of the plan's reading, "" when the plan
	// read nothing.
	planned string
	// alreadyDone is set by pre-flight: planned work, but the live state
	// is already the planned one.
	alreadyDone bool
	// preloaded is pre-flight's reading from its type's batch read
	// (resources.BatchLoader), nil when it reads one by one.
	preloaded *resources.State
	// idx is the resource's index in the plan; earlier is set when the
	// journal says an earlier apply of the plan finished it.
	idx     int
	earlier *pastStep
}

// Apply carries out p: it takes the apply lock, runs the pre-flight and
// converges each resource in plan order. Cancelling ctx (the second SIGINT)
// aborts at once; closing Applier.Stop (the first) stops between
// resources.
//
// It returns a nil report with a *LockHeldError, a *StaleError or another
// error when nothing was changed; once convergence has started it returns
// the report (also written to the state directory) and, when the run did not
// complete, an *InterruptedError or a *ResourceError. See the package doc for
// the exit codes.
func (a *Applier) Apply(ctx context.Context, p *plan.Plan) (*Report, error) {
	if p == nil {
		return nil, errors.New("no plan to apply")
	}
	if p.Errored {
		return nil, errors.New("the plan is marked errored: planning failed part-way, so it can be shown but never applied; fix the errors it lists and run toque plan again")
	}
	if a.Registry == nil {
		return nil, errors.New("apply: no resource type registry")
	}
	if a.StateDir == "" {
		return nil, errors.New("apply: no state directory")
	}
	r := &run{a: a, p: p, digest: a.PlanDigest, out: a.Hooks, logger: a.Logger, now: a.Now, heart: a.Heartbeat}
	if r.digest == "" {
		r.digest = p.Digest()
	}
	if r.out == nil {
		r.out = NopHooks{}
	}
	r.hooks = syncingHooks{r}
	if r.logger == nil {
		r.logger = hclog.NewNullLogger()
	}
	r.logger = r.logger.Named("apply")
	reg, err := p.TypeRegistry(a.Registry)
	if err != nil {
		return nil, err
	}
	r.reg, r.tree = reg, p.Tree()
	r.lc = &plan.Lifecycle{Registry: reg, Logger: r.logger, Resolver: a.Resolver}
	r.later = resources.NewLater()
	if r.now == nil {
		r.now = time.Now
	}
	if r.heart <= 0 {
		r.heart = DefaultHeartbeat
	}
	started := r.now()

	state, err := OpenStateDir(a.StateDir)
	if err != nil {
		return nil, err
	}
	defer state.Close()
	r.state = state
	release, err := r.lock(ctx)
	if err != nil {
		var ie *InterruptedError
		if errors.As(err, &ie) {
			ie.NotStarted = countWork(p)
		}
		return nil, err
	}
	defer release()
	// Every folder this apply writes in is checked before anything
	// changes. (Resource types write backups by path below the trusted
	// state directory.)
	for _, name := range []string{filepath.Base(resources.BackupDir(state.Path())), reportsDirName} {
		sub, err := state.Subdir(name)
		if err != nil {
			return nil, err
		}
		sub.Close()
	}

	// The journal says whether the plan was applied already (refused), or
	// which of it an unfinished apply did (not done again).
	r.j, err = openJournal(state, p, r.digest, r.now)
	if err != nil {
		return nil, err
	}
	defer r.j.close()
	if d := r.j.damage(); d != nil {
		r.logger.Warn("ignoring an unfinished last line of the apply journal", "path", d.Path, "bytes", d.Bytes)
		r.hooks.Warning(d)
	}

	if err := r.preflight(ctx); err != nil {
		return nil, err
	}
	resumed := r.j.past.applies > 0
	if err := r.j.begin(); err != nil {
		return nil, err
	}
	return r.converge(ctx, started, resumed)
}

// lock takes the host-wide apply lock (when Applier.HostLock names one),
// then the state directory's, both within one LockTimeout, always in that
// order so that two waiting applies cannot deadlock. It returns the
// function that releases them.
func (r *run) lock(ctx context.Context) (func(), error) {
	a := r.a
	start := time.Now()
	req := lockRequest{started: start, stop: a.Stop, now: r.now, digest: r.digest, stateDir: r.state.Path()}
	if a.LockTimeout > 0 {
		req.deadline = start.Add(a.LockTimeout)
	}
	var host *applyLock
	if a.HostLock != "" {
		dir, err := OpenStateDir(filepath.Dir(a.HostLock))
		if err != nil {
			return nil, fmt.Errorf("host-wide apply lock: %w", err)
		}
		hreq := req
		hreq.hostWide = true
		host, err = acquireLock(ctx, dir, filepath.Base(a.HostLock), hreq)
		dir.Close()
		if err != nil {
			return nil, err
		}
		r.logger.Debug("host-wide apply lock taken", "path", a.HostLock)
	}
	if host.sameFile(r.state, LockFileName) {
		return host.release, nil
	}
	own, err := acquireLock(ctx, r.state, LockFileName, req)
	if err != nil {
		host.release()
		return nil, err
	}
	r.logger.Debug("apply lock taken", "path", own.f.Name())
	return func() {
		own.release()
		host.release()
	}, nil
}

func countWork(p *plan.Plan) int {
	n := 0
	for _, r := range p.Resources {
		if r.AnyWork() {
			n++
		}
	}
	return n
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
	// Every check only reads (Load, guards), and checks are independent:
	// they run like the planner's reads, PreflightParallelism at a time;
	// their results are taken in plan order.
	// The files of a directory are read through one descriptor of it, as
	// the planner reads them (resources.Reads): nothing is changed
	// before every check is done.
	results := make([]preflightResult, len(r.entries))
	reads := resources.NewReads()
	rctx := resources.WithReads(ctx, reads)
	parallel.For(len(r.entries), PreflightParallelism, func(i int) {
		if ctx.Err() == nil {
			results[i] = r.preflightOne(rctx, r.entries[i])
		}
	})
	reads.Close()
	if err := ctx.Err(); err != nil {
		return &InterruptedError{Aborted: true, NotStarted: countWork(r.p), Err: err}
	}
	for _, res := range results {
		if res.err != nil {
			errs = append(errs, res.err)
		}
		if res.stale != nil {
			stale = append(stale, *res.stale)
		}
	}
	ns, nerrs := r.preflightNotified(ctx)
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

// exactDifferences is how now differs from then, the plan's reading of
// pr, leaving out the facts pr's values known only at apply by its type
// are known from (resources.Awaiter): the plan treats those values as
// unknown, so what they come from may move.
func exactDifferences(t resources.Type, pr *plan.Resource, then, now *plan.Current) []plan.Difference {
	ds := plan.CompareCurrent(then, now)
	if len(pr.Awaits) == 0 {
		return ds
	}
	out := ds[:0]
	for _, d := range ds {
		aside := false
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

// subject is the lifecycle subject of e, with guards (nil: not guarded).
// Its values known at apply stay unknown, and its guards decided at apply
// are not run, unless it is made to decide (decide).
func (r *run) subject(e *entry, guards []*guard.Spec) *plan.Subject {
	return &plan.Subject{
		Address: e.pr.Address, Type: e.typ, Desired: e.desired, Guards: guards,
		Sensitive: e.pr.Sensitive, SensitiveProps: e.pr.SensitiveProperties, Salt: r.p.Salt,
		Lazy: e.pr.Lazy,
	}
}

// decide makes s the evaluation right before its resource converges: its
// values known at apply are evaluated, its guards decided at apply decide.
func decide(s *plan.Subject) *plan.Subject {
	s.Deferred = plan.DeferredDecide
	return s
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

// guardsFailed reports whether err is a guard that could not run (there is
// no verdict to compare then).
func guardsFailed(err error) bool {
	var le *plan.LifecycleError
	return err != nil && (!errors.As(err, &le) || le.Phase == plan.PhaseGuards)
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

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// converge runs every resource with planned work in plan order and writes
// the report. resumed is set when an earlier apply of the plan did part of
// it: what the journal says it finished is reported, not done again, and
// the notifications its changes fired run if they had not.
func (r *run) converge(ctx context.Context, started time.Time, resumed bool) (*Report, error) {
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
	last := ""
	nt := newNotifier(r, rep)
	runErr := nt.resume(ctx)
	// grp is the group commit in hand (commit.go): resources staged, not
	// yet committed. commitGroup commits it.
	var grp group
	commitGroup := func() error {
		l, err := r.commit(ctx, &grp)
		if l != "" {
			last = l
		}
		return err
	}
	for i, e := range r.entries {
		if runErr != nil {
			break
		}
		rr := &rep.Resources[i]
		switch {
		case e.earlier != nil:
			continue
		case e.pr.Parent != "":
			// Converged by its parent, in the place its action gives it.
			if rr.Outcome == OutcomeNotStarted {
				r.settle(e, rr)
			}
			continue
		case r.settle(e, rr):
			continue
		}
		if err := ctx.Err(); err != nil {
			grp.abort()
			runErr = &InterruptedError{After: last, Aborted: true, Err: err}
			break
		}
		if stopped(r.a.Stop) {
			// The group is the work in hand: it is finished first.
			if err := commitGroup(); err != nil {
				runErr = err
				break
			}
			r.logger.Info("stop requested: not starting further resources", "next", e.pr.Address)
			runErr = &InterruptedError{After: last}
			break
		}
		if st, path, ok := r.stager(e, &grp, nt); ok {
			if it := r.stage(ctx, e, rr, st); it != nil {
				grp.add(it, path)
				if it.err != nil || len(grp.items) >= commitGroupMax {
					runErr = commitGroup()
				}
				continue
			}
		}
		if err := commitGroup(); err != nil {
			runErr = err
			break
		}
		last = e.pr.Address
		// Notifications (apply/notify.go): "before" ones run their
		// target first when the resource is about to change;
		// "immediately" ones right after it changed; "delayed" ones are
		// queued and run after this loop. Their runs go to rep.Notified.
		err := r.convergeResource(ctx, e, rr, nt)
		if err == nil {
			err = r.j.Err() // nothing more runs unrecorded
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			runErr = &InterruptedError{After: last, Aborted: true, Err: err}
			break
		}
		if e.pr.IgnoreFailure && ownFailure(err, e.pr.Address) {
			r.logger.Warn("resource failed; ignore_failure is set, continuing", "resource", e.pr.Address, "error", err)
			continue
		}
		runErr = err
		break
	}
	if runErr == nil {
		runErr = commitGroup()
	} else {
		grp.abort() // (empty unless the loop broke on ctx)
	}
	var ie *InterruptedError
	interrupted := errors.As(runErr, &ie)
	if !interrupted && ctx.Err() == nil && r.j.Err() == nil {
		// Delayed notifications run even after a failure, as Chef's do;
		// the failure is reported after them.
		if err := nt.drain(ctx); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	nt.notFired(rep, interrupted)
	if err := r.finishLater(ctx); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if interrupted {
		rep.Interrupted = true
		for i, e := range r.entries {
			if rep.Resources[i].Outcome == OutcomeNotStarted && e.pr.AnyWork() {
				ie.NotStarted++
			}
		}
	}
	rep.PlanFinished = runErr == nil
	rep.Finished = r.now()
	rep.tally()
	if err := rep.write(r.state); err != nil {
		r.logger.Error("could not write the apply report", "error", err)
		runErr = errors.Join(runErr, err)
	}
	r.end(rep, interrupted)
	return rep, runErr
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

// convergeResource converges e's actions in order, each with its
// notifications: "before" edges fire when the action is about to change,
// "immediately" and "delayed" ones after each action that changed (as
// Chef's run_all_actions). A resource of one action is converged as
// itself; one of several is journaled as one resource and reported with a
// report per action.
func (r *run) convergeResource(ctx context.Context, e *entry, rr *ResourceReport, nt *notifier) error {
	if e.pr.Steps() == 1 {
		err := nt.before(ctx, e, 0)
		if err == nil {
			err = r.convergeOne(ctx, e, 0, rr, true, nt)
			if err == nil {
				err = nt.after(ctx, e, rr)
			}
		}
		return err
	}
	if err := r.j.Err(); err != nil {
		return err
	}
	ref := stepRef{index: e.idx}
	if e.alreadyDone && !r.tree.ChildWork(e.idx) {
		// Every action already in its planned state (pre-flight), unless an
		// earlier resource of this run undid one: each is read again.
		allDone := true
		for si := 0; si < e.pr.Steps() && allDone; si++ {
			rd, err := r.lc.Evaluate(ctx, r.stepSubject(e, si, nil))
			allDone = err == nil && !rd.Skip && rd.Step.Kind == resources.NoOp
		}
		if allDone {
			rr.Outcome = OutcomeAlreadyDone
			rr.Reason = "already in the planned state (" + e.pr.Reason + " at plan time)"
			jerr := r.j.ended(ref, e.pr.Address, e.pr.Kind, rr.Outcome, nil)
			r.hooks.AlreadyDone(e.pr)
			return jerr
		}
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
		rr.Actions = append(rr.Actions, ActionReport{Action: view.Action, Kind: srr.Kind, Outcome: srr.Outcome, Reason: srr.Reason, DiffersFromPlan: srr.DiffersFromPlan, Error: srr.Error, DurationMS: srr.DurationMS})
		rr.DurationMS += srr.DurationMS
		if len(srr.KnownAtApply) > 0 {
			rr.KnownAtApply = srr.KnownAtApply
		}
		rr.DecidedAtApply = append(rr.DecidedAtApply, srr.DecidedAtApply...)
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

// stepSubject is the lifecycle subject of e's si-th action.
func (r *run) stepSubject(e *entry, si int, guards []*guard.Spec) *plan.Subject {
	s := r.subject(e, guards)
	s.Desired = e.desired.WithAction(e.pr.StepView(si).Action)
	return s
}

// convergeOne reads e again and converges its si-th action toward the live
// reading within what the plan showed. It fills rr and returns the
// resource's error; record journals the resource's start and end (a
// resource of several actions is journaled around all of them).
func (r *run) convergeOne(ctx context.Context, e *entry, si int, rr *ResourceReport, record bool, nt *notifier) error {
	if err := r.j.Err(); err != nil {
		return err
	}
	if seq := r.sequence(e, si); seq != nil {
		return r.convergeComposite(ctx, e, si, seq, rr, record, nt)
	}
	view := e.pr.StepView(si)
	// The guards once more, right before converging: an earlier change of
	// this run may have flipped one. A resource that would now be skipped
	// is skipped; the opposite cannot happen here, as a resource skipped at
	// plan time is never converged.
	//
	// Every outcome is recorded in the journal before the hooks hear of
	// it, and a run is recorded as started before it starts: whatever is
	// printed as done is on disk as done.
	start := time.Now()
	ref := stepRef{index: e.idx}
	// reported records the outcome and has report print it once that
	// record is durable: at the next sync of the journal, which comes
	// before anything else is printed (syncingHooks), started or changed
	// (a run's start record, a group commit). One sync then serves the
	// end of a run and the start of the next.
	reported := func(outcome string, report func()) error {
		if !record {
			r.syncJournal()
			report()
			return nil
		}
		jerr := r.j.endedUnsynced(ref, e.pr.Address, e.pr.Kind, outcome)
		r.j.afterSync(report)
		return jerr
	}
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
	switch {
	case err == nil && rd.Skip && rd.Guards[rd.DecidedBy].Spec.AtApply:
		// A guard decided at apply, as the plan said it would be.
		r.hooks.PreApply(view)
		rr.Outcome = OutcomeSkipped
		o := rd.Guards[rd.DecidedBy]
		rr.Reason = SkippedAtApply + o.Spec.Verdict(o.Condition)
		r.logger.Info("skipped by a guard decided at apply", "resource", e.pr.Address, "guard", rr.Reason)
		rep := *rr
		return reported(rr.Outcome, func() { r.out.PostApply(view, rep) })
	case err == nil && rd.Skip:
		r.hooks.PreApply(view)
		why := skippedNow(rd)
		rr.Outcome = OutcomeSkipped
		rr.Reason = "skipped: " + why
		rr.DiffersFromPlan = why
		r.logger.Info("guard flipped by an earlier change in this run: skipping", "resource", e.pr.Address, "guard", why)
		rep := *rr
		return reported(rr.Outcome, func() { r.out.PostApply(view, rep) })
	case err == nil && record && e.alreadyDone && rd.Step.Kind == resources.NoOp:
		// Read again: an earlier resource in this run may have undone it.
		rr.Outcome = OutcomeAlreadyDone
		rr.Reason = "already in the planned state (" + e.pr.Reason + " at plan time)"
		return reported(rr.Outcome, func() { r.out.AlreadyDone(e.pr) })
	}
	if record {
		if jerr := r.j.started(ref, e.pr.Address, e.pr.Kind); jerr != nil {
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
	if jerr := reported(recorded, func() { r.out.PostApply(view, rep) }); jerr != nil {
		err = errors.Join(err, jerr)
	}
	return err
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
		if rr.DiffersFromPlan != "" {
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

// skippedNow words the guard that now decides to skip a resource the plan
// runs: "not_if `test -f x` now true".
func skippedNow(rd *plan.Reading) string {
	o := rd.Guards[rd.DecidedBy]
	return o.Spec.Describe() + " now " + conditionWord(o.Spec, o.Condition, true)
}

// conditionWord words a guard's condition: "passed"/"failed" for an
// only_if script ("passes"/"fails" now), "true"/"false" otherwise.
func conditionWord(s *guard.Spec, c, now bool) string {
	if s.Kind == guard.OnlyIf && s.Form == guard.Script {
		switch {
		case c && now:
			return "passes"
		case c:
			return "passed"
		case now:
			return "fails"
		}
		return "failed"
	}
	if c {
		return "true"
	}
	return "false"
}

// allowed checks that step, planned from a reading taken in this run, does
// no more than the plan showed: the same kind of step (or an update instead
// of a planned create), changing only properties the plan listed, to the
// values the plan showed for those the type computes from the host
// (samePlanned). Every path that converges a resource asks it: one at a
// time, a staged group, a child resource.
func allowed(pr *plan.Resource, step *resources.Step) error {
	if err := withinKinds(pr, step); err != nil {
		return err
	}
	return samePlanned(pr, step)
}

// withinKinds is allowed's check of the step's kind and properties.
func withinKinds(pr *plan.Resource, step *resources.Step) error {
	planned, now := pr.Kind, step.Kind
	if planned != now && !(planned == resources.Create && now == resources.Update) {
		return fmt.Errorf("refused to %s: the plan showed %s, and an earlier change in this run means the resource now needs %s, which nobody reviewed; run toque plan again", now, planned, now)
	}
	if now != resources.Create && now != resources.Update {
		return nil
	}
	shown := map[string]bool{}
	for _, c := range pr.Changes {
		shown[c.Property] = true
	}
	var extra []string
	for _, c := range step.Changes {
		if !shown[c.Property] {
			extra = append(extra, c.Property)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("refused to %s: after an earlier change in this run it would also change %s, which the plan did not show as changing; run toque plan again", now, strings.Join(extra, ", "))
	}
	return nil
}

// samePlanned checks that step, planned from a reading taken in this run,
// gives each property whose value the type computes from the host (the
// version apt would install, the sha256 of what a URL serves: a change's
// Planned value) the value the plan showed. The host may move after
// pre-flight — an earlier resource of the run updates apt's lists — and
// apply must not then carry out a value nobody reviewed.
func samePlanned(pr *plan.Resource, step *resources.Step) error {
	planned := map[string]*plan.Value{}
	for _, c := range pr.Changes {
		if c.Planned != nil {
			planned[c.Property] = c.Planned
		}
	}
	for _, c := range step.Changes {
		want, ok := planned[c.Property]
		if !ok || c.After == cty.NilVal {
			continue
		}
		if !want.Value.RawEquals(c.After) {
			shown := func(v cty.Value) string {
				if pr.Sensitive || slices.Contains(pr.SensitiveProperties, c.Property) {
					return plan.Sensitive
				}
				return plan.DisplayValue(v)
			}
			return fmt.Errorf("refused to %s: %s would now become %s, but the plan showed %s (the host changed during this apply); run toque plan again", step.Kind, c.Property, shown(c.After), shown(want.Value))
		}
	}
	return nil
}

// describeDifferences says how now, a reading of pr (of type t), differs
// from the plan's; "" when only what its values known at apply by its
// type are known from moved (exactDifferences).
func describeDifferences(t resources.Type, pr *plan.Resource, now *plan.Current) string {
	then := pr.Current
	if then == nil {
		return "not read at plan time"
	}
	ds := exactDifferences(t, pr, then, now)
	switch {
	case len(ds) == 0 && len(pr.Awaits) > 0:
		return ""
	case len(ds) == 0:
		return "the live state's fingerprint differs from the plan's"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s: %s at plan time, now %s", d.Property, orNone(d.Then), orNone(d.Now))
	}
	return strings.Join(parts, "; ")
}
