package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// settle decides, for insts[i] (planned as ress[i]), which of its values
// known only at apply and guards decided at apply can be known now: those
// no earlier resource with work (ress before i, and the targets their
// immediately and before notifications run) could change. Those are
// evaluated now — a failure is then a plan error, since apply would fail
// the same way — and the resource is planned again with them. changed is
// false when nothing was settled. A resource whose action is nothing runs
// only when notified, after its notifier changed: what it defers stays
// deferred.
func (p *Planner) settle(ctx context.Context, logger hclog.Logger, insts []*eval.Instance, ress []*plan.Resource, i int, salt string) (*eval.Instance, *plan.Resource, []*resources.Step, hcl.Diagnostics, bool) {
	inst := insts[i]
	if inst == nil || inst.Resource == nil || inst.Resource.Action == "nothing" || ress[i].Kind == resources.Skip {
		// A resource a plan-time guard skips never converges: its values
		// are never evaluated, as Chef evaluates none of a skipped one's.
		return nil, nil, nil, nil, false
	}
	atApply := false
	for _, g := range inst.Guards {
		atApply = atApply || (g != nil && g.AtApply)
	}
	if len(inst.Lazy) == 0 && !atApply {
		return nil, nil, nil, nil, false
	}
	earlier := earlierWork(insts, ress, i)
	known := map[string]*lazy.Expr{}
	rest := map[string]*lazy.Expr{}
	for k, e := range inst.Lazy {
		if len(plan.Writers(p.Registry, earlier, e.Reads())) == 0 {
			known[k] = e
		} else {
			rest[k] = e
		}
	}
	var diags hcl.Diagnostics
	guards := inst.Guards
	settledGuard := false
	for gi, g := range inst.Guards {
		if g == nil || !g.AtApply || len(plan.Writers(p.Registry, earlier, plan.GuardReads(g))) > 0 {
			continue
		}
		c := *g
		c.AtApply = false
		if c.Form == guard.Expression {
			v, err := p.resolver().Guard(ctx, g.Lazy)
			if err != nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Guard cannot be evaluated",
					Detail:   fmt.Sprintf("%s: %s %s, and no earlier resource of this plan could change what it reads, so it would fail at apply too.", instAddress(inst), g.Describe(), lazyReason(err)),
					Subject:  g.Range.Ptr(),
				})
				continue
			}
			c.ExprValue, c.Lazy = &v, nil
		}
		if !settledGuard {
			guards = append([]*guard.Spec(nil), inst.Guards...)
			settledGuard = true
		}
		guards[gi] = &c
	}
	if len(known) == 0 && !settledGuard && len(diags) == 0 {
		return nil, nil, nil, nil, false
	}
	if diags.HasErrors() {
		return inst, nil, nil, diags, true
	}
	resolved, err := p.resolver().Resolve(ctx, inst.Resource, known)
	if err != nil && settledGuard {
		// The guards settled now may skip it: then its values do not
		// matter.
		c := *inst
		c.Guards = guards
		if res, steps, d := p.planOne(ctx, logger, &c, salt, nil); res != nil && res.Kind == resources.Skip {
			return &c, res, steps, append(diags, d...), true
		}
	}
	if err != nil {
		d := &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Value known at apply cannot be evaluated",
			Subject:  declRange(inst),
		}
		var le *eval.LazyError
		if errors.As(err, &le) {
			d.Subject = le.Range.Ptr()
			if hidesLazy(inst, known) {
				err = le.Redacted()
			}
		}
		d.Detail = fmt.Sprintf("%s: %s. No earlier resource of this plan could change what it reads, so it would fail at apply too.", instAddress(inst), lazyReason(err))
		return inst, nil, nil, diags.Append(d), true
	}
	c := *inst
	c.Resource, c.Guards, c.Lazy = resolved, guards, rest
	if len(rest) == 0 {
		c.Lazy = nil
	}
	logger.Debug("settled values and guards deferred to apply: nothing earlier could change them", "resource", instAddress(inst), "values", len(known), "guards", settledGuard)
	res, steps, d := p.planOne(ctx, logger, &c, salt, nil)
	return &c, res, steps, append(diags, d...), true
}

// hidesLazy reports whether an evaluation error of inst's lazy values must
// not say more than where it is: inst, or a lazy property of it, is
// sensitive.
func hidesLazy(inst *eval.Instance, lazies map[string]*lazy.Expr) bool {
	if inst.Sensitive {
		return true
	}
	for _, p := range inst.SensitiveProps {
		if lazies[p] != nil {
			return true
		}
	}
	return false
}

// lazyReason words a failed evaluation for a diagnostic's detail.
func lazyReason(err error) string {
	var le *eval.LazyError
	if errors.As(err, &le) {
		return le.Error()
	}
	if strings.Contains(err.Error(), "could not be evaluated") {
		return err.Error()
	}
	return "cannot be evaluated: " + err.Error()
}

// earlierWork is the resources that converge before insts[i] and could
// have work: ress before i, and, for each of them with work, the targets
// of its immediately and before notifications (which run in its turn).
func earlierWork(insts []*eval.Instance, ress []*plan.Resource, i int) []*plan.Resource {
	byAddr := map[string]*plan.Resource{}
	for _, r := range ress {
		if r != nil {
			byAddr[r.Address] = r
		}
	}
	out := make([]*plan.Resource, 0, i)
	seen := map[string]bool{}
	for j := 0; j < i; j++ {
		r := ress[j]
		if r == nil {
			continue
		}
		out = append(out, r)
		if !r.AnyWork() || insts[j] == nil {
			continue
		}
		for _, e := range insts[j].Notifies {
			if e.Timing == plan.TimingDelayed || e.Target == nil {
				continue
			}
			t := byAddr[e.Target.Address()]
			if t == nil || seen[t.Address] || t.Address == ress[i].Address {
				continue
			}
			seen[t.Address] = true
			// Its notified run may have work: count it as a resource that
			// runs (the kind is not known yet; Writers needs work).
			v := *t
			v.Kind, v.Then = resources.Run, nil
			out = append(out, &v)
		}
	}
	return out
}
