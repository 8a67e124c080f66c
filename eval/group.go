package eval

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/resources"
)

// Resource groups: the guards of a resource_group are decoded once, as
// written on no resource (the default interpreter, or the group's
// guard_interpreter; nothing inherited from a resource, so that they are
// the same guards for every resource of the group), and put before each
// resource's own guards. Each resource is then guarded by them as by its
// own: at plan, at pre-flight and right before it converges, as Ansible
// evaluates a block's when for each of its tasks. Their notifications are
// resolved with the resources' (notify.go).

// groupSet holds each group's decoded guards.
type groupSet map[*config.GroupBlock][]*guard.Spec

// groupGuards decodes the guards of c's resource groups, each in its
// directory's scope.
func groupGuards(c *config.Config, reg *resources.Registry, scope *Scope, ctxs, plain map[string]*hcl.EvalContext) (groupSet, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	out := groupSet{}
	for _, g := range c.Groups {
		if g.OnlyIf == nil && g.NotIf == nil && g.GuardInterpreter == nil {
			continue
		}
		if ctxs[g.Dir] == nil {
			ctxs[g.Dir] = scope.EvalContext(g.Dir)
			plain[g.Dir] = unmarkingContext(ctxs[g.Dir])
		}
		ev := &evaluator{ctx: ctxs[g.Dir], scope: scope}
		specs, d := decodeGroupGuards(g, ev, plain[g.Dir], reg, c.SourceText)
		explainEachCount(d)
		diags = append(diags, d...)
		if !d.HasErrors() {
			out[g] = specs
		}
	}
	return out, diags
}

// decodeGroupGuards decodes g's guards in ev's scope; plainCtx is its
// unmarking context.
func decodeGroupGuards(g *config.GroupBlock, ev *evaluator, plainCtx *hcl.EvalContext, reg *resources.Registry, source func(hcl.Range) string) ([]*guard.Spec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	onlyIf, onlyAtApply, d := guardExpr(ev.nativeOf(g.OnlyIf, source), "only_if")
	diags = append(diags, d...)
	notIf, notAtApply, d := guardExpr(ev.nativeOf(g.NotIf, source), "not_if")
	diags = append(diags, d...)
	diags = append(diags, refuseLazy(ev.nativeOf(g.GuardInterpreter, source), "guard_interpreter", "it says how the guards run, and guards are shown as they will run")...)
	if diags.HasErrors() {
		return nil, diags
	}
	specs, d := guard.Decode(guard.Input{
		OnlyIf:           onlyIf,
		NotIf:            notIf,
		OnlyIfAtApply:    onlyAtApply,
		NotIfAtApply:     notAtApply,
		GuardInterpreter: g.GuardInterpreter,
		Ctx:              plainCtx,
		Registry:         reg,
		Source:           source,
		Sensitive:        ev.marksOrReadsSensitive(onlyIf) || ev.marksOrReadsSensitive(notIf),
		Capture:          func(e hcl.Expression) (*lazy.Expr, hcl.Diagnostics) { return ev.lazyExpr(e, g.Dir, source) },
	})
	diags = append(diags, d...)
	for _, s := range specs {
		s.Group = g.Name
	}
	return specs, diags
}

// apply puts the guards of inst's group before its own: in place, or,
// for a resource whose action is nothing, on its notified runs (which
// are guarded, as its own guards are). Each resource gets copies: a
// sensitive one hides them.
func (gs groupSet) apply(inst *Instance) {
	if inst.Block == nil || inst.Block.Group == nil {
		return
	}
	specs := gs[inst.Block.Group]
	if len(specs) == 0 {
		return
	}
	own := make([]*guard.Spec, 0, len(specs))
	for _, s := range specs {
		cp := *s
		cp.Sensitive = cp.Sensitive || inst.Sensitive
		own = append(own, &cp)
	}
	if inst.Resource != nil && inst.Resource.Action == "nothing" {
		inst.NotifiedGuards = append(own, inst.NotifiedGuards...)
		return
	}
	inst.Guards = append(own, inst.Guards...)
}
