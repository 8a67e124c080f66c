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
func (p *Planner) planNotifications(ctx context.Context, logger hclog.Logger, insts []*eval.Instance, ress []*plan.Resource, pl *plan.Plan, salt string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	anyEdge := false
	for _, inst := range insts {
		if inst != nil && len(inst.Notifies) > 0 {
			anyEdge = true
			break
		}
	}
	if !anyEdge {
		// (No index of N resources for a plan with no notification.)
		for _, r := range pl.Resources {
			if r.Action == "nothing" {
				r.Reason = plan.ReasonNotNotified
			}
		}
		return nil
	}
	instBy := map[string]*eval.Instance{}
	resBy := map[string]*plan.Resource{}
	slotOf := map[string]int{}
	for i, r := range pl.Resources {
		slotOf[r.Address] = i
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
	protos := map[notifyKey]*plan.NotifiedRun{}
	failed := map[notifyKey]bool{}
	planKey := func(k notifyKey) *plan.NotifiedRun {
		if nr, ok := protos[k]; ok || failed[k] {
			return nr
		}
		nr, d := p.planNotified(ctx, logger, instBy[k.addr], k.action, salt)
		diags = append(diags, d...)
		if nr == nil {
			failed[k] = true
			return nil
		}
		protos[k] = nr
		return nr
	}

	var out []*plan.NotifiedRun
	queued := map[notifyKey]*plan.NotifiedRun{}
	var queue []notifyKey
	enqueue := func(k notifyKey, from string) {
		if nr := queued[k]; nr != nil {
			if !containsString(nr.Notifiers, from) {
				nr.Notifiers = append(nr.Notifiers, from)
			}
			return
		}
		queued[k] = &plan.NotifiedRun{Address: k.addr, Action: k.action, Timing: plan.TimingDelayed, Notifiers: []string{from}}
		queue = append(queue, k)
	}
	// at is where a notified run happens: in the turn of the action step
	// of the resource at slot, before or after it converges.
	type at struct {
		slot, step int
		before     bool
	}
	var fire func(from string, timing string, where at)
	var run func(k notifyKey, timing string, notifiers []string, where at, dst *plan.NotifiedRun)
	active := map[notifyKey]bool{}
	run = func(k notifyKey, timing string, notifiers []string, where at, dst *plan.NotifiedRun) {
		if resBy[k.addr] == nil || active[k] {
			// The target failed to plan (its diagnostics say why), or a
			// cycle config rejects: never recurse forever.
			return
		}
		active[k] = true
		defer delete(active, k)
		proto := planKey(k)
		if proto == nil {
			return
		}
		work := proto.Kind.IsWork()
		if work {
			fire(k.addr, plan.TimingBefore, where)
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
		out = append(out, nr)
		if work {
			fire(k.addr, plan.TimingImmediately, where)
			fire(k.addr, plan.TimingDelayed, where)
		}
	}
	fire = func(from string, timing string, where at) {
		r := resBy[from]
		if r == nil {
			return
		}
		for _, e := range r.Notifications {
			if e.Timing != timing {
				continue
			}
			k := notifyKey{e.Target, e.Action}
			if timing == plan.TimingDelayed {
				enqueue(k, from)
				continue
			}
			run(k, timing, []string{from}, where, nil)
		}
	}
	// Edges fire for each action that changes something, as Chef's
	// run_all_actions does: a resource whose two actions both change
	// runs an immediately target twice (delayed ones still once).
	// A resource whose child resources change is changed too.
	tree := pl.Tree()
	for i, r := range pl.Resources {
		for si := 0; si < r.Steps(); si++ {
			if !tree.StepWork(i, si) {
				continue
			}
			fire(r.Address, plan.TimingBefore, at{i, si, true})
			fire(r.Address, plan.TimingImmediately, at{i, si, false})
			fire(r.Address, plan.TimingDelayed, at{i, si, false})
		}
	}
	for i := 0; i < len(queue); i++ {
		k := queue[i]
		q := queued[k]
		run(k, plan.TimingDelayed, q.Notifiers, at{len(pl.Resources), 0, false}, q)
	}
	pl.NotifiedRuns = out
	for _, nr := range out {
		nr.Reason = pl.WhyNotified(nr)
	}

	planned := map[string]bool{}
	for _, nr := range out {
		planned[nr.Address] = true
	}
	for _, r := range pl.Resources {
		if r.Action == "nothing" && !planned[r.Address] {
			r.Reason = plan.ReasonNotNotified
		}
	}
	return diags
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
