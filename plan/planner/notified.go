package planner

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// notifyKey is one action of one target.
type notifyKey struct{ addr, action string }

// planNotifications records the notification edges of every planned
// resource (outgoing and incoming) and plans the notified runs: starting
// from the resources planned to change, it follows their edges as apply
// will — before edges ahead of the notifier, immediately ones right after,
// delayed ones queued, de-duplicated and run at the end, each notified run
// that changes something firing its own target's edges in turn — and plans
// each target's action from a fresh reading. ress is aligned with insts
// (nil where planning failed).
//
// Its steps: recordEdges, the walk of the edges (edgeWalk.walk), which
// plans the runs, then each run's reason and markNotNotified.
func (p *Planner) planNotifications(ctx context.Context, logger hclog.Logger, insts []*eval.Instance, ress []*plan.Resource, pl *plan.Plan, salt string) hcl.Diagnostics {
	if !anyNotification(insts) {
		// (No index of N resources for a plan with no notification.)
		markNotNotified(pl, nil)
		return nil
	}
	w := &edgeWalk{
		p: p, ctx: ctx, logger: logger, salt: salt,
		protos: map[notifyKey]*plan.NotifiedRun{},
		failed: map[notifyKey]bool{},
		queued: map[notifyKey]*plan.NotifiedRun{},
		active: map[notifyKey]bool{},
	}
	w.instBy, w.resBy = recordEdges(insts, ress, pl)
	w.walk(pl)
	pl.NotifiedRuns = w.out
	for _, nr := range w.out {
		nr.Reason = pl.WhyNotified(nr)
	}
	planned := map[string]bool{}
	for _, nr := range w.out {
		planned[nr.Address] = true
	}
	markNotNotified(pl, planned)
	return w.diags
}

// anyNotification reports whether any instance notifies or subscribes.
func anyNotification(insts []*eval.Instance) bool {
	for _, inst := range insts {
		if inst != nil && len(inst.Notifies) > 0 {
			return true
		}
	}
	return false
}

// markNotNotified gives every resource whose action is nothing and which
// has no planned notified run (planned, by address) the reason that it is
// not notified.
func markNotNotified(pl *plan.Plan, planned map[string]bool) {
	for _, r := range pl.Resources {
		if r.Action == "nothing" && !planned[r.Address] {
			r.Reason = plan.ReasonNotNotified
		}
	}
}

// recordEdges records each planned resource's notification edges on it
// (Notifications) and on its target (NotifiedBy), and returns the
// instances and the plan's resources by address. Instances that failed to
// plan (a nil entry in ress) record nothing.
func recordEdges(insts []*eval.Instance, ress []*plan.Resource, pl *plan.Plan) (map[string]*eval.Instance, map[string]*plan.Resource) {
	instBy := map[string]*eval.Instance{}
	resBy := map[string]*plan.Resource{}
	for _, r := range pl.Resources {
		resBy[r.Address] = r
	}
	for i, inst := range insts {
		if inst == nil || inst.Resource == nil || ress[i] == nil {
			continue
		}
		instBy[ress[i].Address] = inst
		for _, e := range inst.Notifies {
			n := plan.Notification{Target: e.Target.Address(), Action: e.Action, Timing: e.Timing, Subscribe: e.Subscribe}
			ress[i].Notifications = append(ress[i].Notifications, n)
			if t := resBy[n.Target]; t != nil {
				t.NotifiedBy = append(t.NotifiedBy, plan.Trigger{Notifier: ress[i].Address, Action: n.Action, Timing: n.Timing, Subscribe: n.Subscribe})
			}
		}
	}
	return instBy, resBy
}

// runAt is where a notified run happens: in the turn of the action step
// of the resource at slot, before or after it converges.
type runAt struct {
	slot, step int
	before     bool
}

// edgeWalk follows the notification edges as apply will, planning each
// notified run (planNotifications).
type edgeWalk struct {
	p      *Planner
	ctx    context.Context
	logger hclog.Logger
	salt   string
	instBy map[string]*eval.Instance
	resBy  map[string]*plan.Resource
	diags  hcl.Diagnostics
	// protos holds each target action planned so far, failed those that
	// could not be planned (their diagnostics say why).
	protos map[notifyKey]*plan.NotifiedRun
	failed map[notifyKey]bool
	// queued holds the delayed runs, de-duplicated, queue their order.
	queued map[notifyKey]*plan.NotifiedRun
	queue  []notifyKey
	// active holds the runs being planned: a cycle stops there.
	active map[notifyKey]bool
	// out is the notified runs, in the order apply runs them.
	out []*plan.NotifiedRun
}

// walk fires, for each action step that changes something, the edges of
// its resource, as Chef's run_all_actions does: a resource whose two
// actions both change runs an immediately target twice (delayed ones
// still once). A resource whose child resources change is changed too.
// Then the delayed queue runs, in order, including what is queued while
// it runs.
func (w *edgeWalk) walk(pl *plan.Plan) {
	tree := pl.Tree()
	for i, r := range pl.Resources {
		for si := 0; si < r.Steps(); si++ {
			if !tree.StepWork(i, si) {
				continue
			}
			w.fire(r.Address, plan.TimingBefore, runAt{i, si, true})
			w.fire(r.Address, plan.TimingImmediately, runAt{i, si, false})
			w.fire(r.Address, plan.TimingDelayed, runAt{i, si, false})
		}
	}
	for i := 0; i < len(w.queue); i++ {
		k := w.queue[i]
		q := w.queued[k]
		w.run(k, plan.TimingDelayed, q.Notifiers, runAt{len(pl.Resources), 0, false}, q)
	}
}

// fire follows from's edges of timing: a delayed one is queued, the
// others run where.
func (w *edgeWalk) fire(from string, timing string, where runAt) {
	r := w.resBy[from]
	if r == nil {
		return
	}
	for _, e := range r.Notifications {
		if e.Timing != timing {
			continue
		}
		k := notifyKey{e.Target, e.Action}
		if timing == plan.TimingDelayed {
			w.enqueue(k, from)
			continue
		}
		w.run(k, timing, []string{from}, where, nil)
	}
}

// enqueue queues the delayed run k for from, or adds from to its
// notifiers when it is queued already.
func (w *edgeWalk) enqueue(k notifyKey, from string) {
	if nr := w.queued[k]; nr != nil {
		if !containsString(nr.Notifiers, from) {
			nr.Notifiers = append(nr.Notifiers, from)
		}
		return
	}
	w.queued[k] = &plan.NotifiedRun{Address: k.addr, Action: k.action, Timing: plan.TimingDelayed, Notifiers: []string{from}}
	w.queue = append(w.queue, k)
}

// run adds the notified run k at where (into dst, a queued delayed run,
// when not nil) to the output, with its target's edges around it when it
// has work: before edges first, immediately and delayed ones after. A
// target that failed to plan, or a run already being planned (a cycle
// config rejects), adds nothing.
func (w *edgeWalk) run(k notifyKey, timing string, notifiers []string, where runAt, dst *plan.NotifiedRun) {
	if w.resBy[k.addr] == nil || w.active[k] {
		// The target failed to plan (its diagnostics say why), or a
		// cycle config rejects: never recurse forever.
		return
	}
	w.active[k] = true
	defer delete(w.active, k)
	proto := w.proto(k)
	if proto == nil {
		return
	}
	work := proto.Kind.IsWork()
	if work {
		w.fire(k.addr, plan.TimingBefore, where)
	}
	nr := dst
	if nr == nil {
		nr = &plan.NotifiedRun{}
	}
	*nr = plan.NotifiedRun{
		Address: k.addr, Action: k.action, Timing: timing, Notifiers: notifiers, Slot: where.slot, Step: where.step, Before: where.before,
		Kind: proto.Kind, StepReason: proto.StepReason, Changes: proto.Changes, Groups: proto.Groups,
		Guards: proto.Guards, GuardSpecs: proto.GuardSpecs, Current: proto.Current, Fingerprint: proto.Fingerprint,
	}
	w.out = append(w.out, nr)
	if work {
		w.fire(k.addr, plan.TimingImmediately, where)
		w.fire(k.addr, plan.TimingDelayed, where)
	}
}

// proto is target action k planned from a fresh reading (planNotified),
// once: nil when it could not be planned.
func (w *edgeWalk) proto(k notifyKey) *plan.NotifiedRun {
	if nr, ok := w.protos[k]; ok || w.failed[k] {
		return nr
	}
	nr, d := w.p.planNotified(w.ctx, w.logger, w.instBy[k.addr], k.action, w.salt)
	w.diags = append(w.diags, d...)
	if nr == nil {
		w.failed[k] = true
		return nil
	}
	w.protos[k] = nr
	return nr
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// planNotified plans inst's action as a notified run: guards (the
// resource's own; for a resource whose action is nothing, those decoded
// for its notified runs), then Load and Plan with that action. The
// returned run has no notifiers or slot yet, and no Reason: the caller
// composes it (Plan.WhyNotified).
func (p *Planner) planNotified(ctx context.Context, logger hclog.Logger, inst *eval.Instance, action, salt string) (*plan.NotifiedRun, hcl.Diagnostics) {
	if inst == nil || inst.Resource == nil || inst.Type == nil {
		return nil, nil
	}
	addr := instAddress(inst)
	src := inst.Resource
	desired := src.WithAction(action)
	specs := inst.Guards
	if src.Action == "nothing" {
		specs = inst.NotifiedGuards
	}
	nr := &plan.NotifiedRun{Address: addr, Action: action, GuardSpecs: specs}
	sensProps := sensitivity(inst)
	rd, err := p.lifecycle(logger.With("notified_action", action)).Evaluate(ctx, &plan.Subject{
		Address: addr, Type: inst.Type, Desired: desired, Guards: specs,
		Sensitive: inst.Sensitive, SensitiveProps: sensProps, Salt: salt,
		Lazy: inst.Lazy, Deferred: plan.DeferredShow,
	})
	if err != nil {
		return nil, lifecycleDiags(inst, rd, fmt.Errorf("the notified action %s: %w", action, err))
	}
	nr.Guards = GuardResults(rd.Guards, rd.DecidedBy)
	if rd.Skip {
		nr.Kind = resources.Skip
		return nr, nil
	}
	step := rd.Step
	if n := step.AwaitedNeeds(); len(n) > 0 && step.Kind.IsWork() {
		// Only a resource's own action waits for an earlier one at apply.
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Missing " + n[0].What,
			Detail:   fmt.Sprintf("%s\n\nThe notified action %s of %s cannot wait for that at apply: only a resource's own action can. Give %s its own action, declared after what adds the repository.", n[0].Missing, action, addr, addr),
			Subject:  declRange(inst),
		}}
	}
	nr.Kind, nr.StepReason, nr.Groups = step.Kind, step.Reason, step.Groups
	nr.Current = rd.Current
	nr.Fingerprint = rd.Fingerprint()
	nr.Changes = changesOf(desired, step.Changes)
	logger.Debug("planned notified run", "resource", addr, "action", action, "kind", nr.Kind, "reason", nr.Reason)
	return nr, nil
}
