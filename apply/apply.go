package apply

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/guard"
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
	// PlanFile is the path of the plan file applied ("" for a plan made
	// by the same command): the journal records it, so that a later plan
	// can say which plan file to apply again to finish an apply that
	// stopped (Unfinished).
	PlanFile string
	// Resolver evaluates what the plan defers to apply (values known only
	// at apply, guards decided at apply by an expression) right before
	// their resource converges. package apply does not evaluate
	// expressions: command hands it eval's. nil fails such a resource.
	Resolver plan.Resolver
	// SkipVerify turns off the end-state check (endstate.go): by default,
	// once the plan is carried out, apply reads every resource again and
	// reports those that did not end as the plan predicted.
	SkipVerify bool
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
	// foresight is what pre-flight found the steps with work will bring
	// (a package's files and units: preflightAll), nil when nothing.
	foresight *resources.Foresight
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
	// foreseenBatch says preloaded was read through the plan's predicted
	// host, with the others of its batch (preloadForeseen).
	foreseenBatch bool
	// idx is the resource's index in the plan; earlier is set when the
	// journal says an earlier apply of the plan finished it.
	idx     int
	earlier *pastStep
	// expect is the state the plan's steps predict the resource ends in
	// (endstate.go), nil when it is not checked; lastRun is set when its
	// last step is a run.
	expect  *resources.State
	lastRun bool
	// checked are the properties the check compares (managed); notified
	// is set when a notified run changed the resource.
	checked  map[string]bool
	notified bool
	// provided are the things (namespace and value) its steps provide,
	// but paths; factsSuperseded is set when a later resource acting on
	// one of its things changed it (endstate.go): its facts and its
	// content are that resource's to check.
	provided        []string
	factsSuperseded bool
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
//
// Apply is the sequence of the phases of design §8, each a function of its
// own: verify (verify.go), lock (lock.go; checkWriteDirs, statedir.go),
// readJournal (journal.go), preflight (preflight.go), the converge loop
// (converge.go), the delayed notifications (notifyDelayed, notify.go) and
// finish: deferred work, the report and the journal's end (finish.go).
func (a *Applier) Apply(ctx context.Context, p *plan.Plan) (*Report, error) {
	if err := a.verify(p); err != nil {
		return nil, err
	}
	r, err := a.newRun(p)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	defer release()
	if err := r.checkWriteDirs(); err != nil {
		return nil, err
	}

	if err := r.readJournal(); err != nil {
		return nil, err
	}
	defer r.j.close()

	if err := r.preflight(ctx); err != nil {
		return nil, err
	}
	resumed := r.j.past.applies > 0
	if err := r.j.begin(); err != nil {
		return nil, err
	}

	rep := r.newReport(started, resumed)
	nt := newNotifier(r, rep)
	err = r.converge(ctx, rep, nt)
	stop := interruption(err)
	err = r.notifyDelayed(ctx, nt, rep, err, stop != nil)
	return r.finish(ctx, rep, err, stop)
}

// newRun makes the state of one Apply of p: the hooks (behind
// syncingHooks), the logger, the clock and heartbeat defaults, and the
// registry with the types written in HCL that p carries, which is the one
// way it fails. It touches nothing on disk.
func (a *Applier) newRun(p *plan.Plan) (*run, error) {
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
	return r, nil
}

// countWork is how many of p's resources have planned work.
func countWork(p *plan.Plan) int {
	n := 0
	for _, r := range p.Resources {
		if r.AnyWork() {
			n++
		}
	}
	return n
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

// stepSubject is the lifecycle subject of e's si-th action.
func (r *run) stepSubject(e *entry, si int, guards []*guard.Spec) *plan.Subject {
	s := r.subject(e, guards)
	s.Desired = e.desired.WithAction(e.pr.StepView(si).Action)
	return s
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
