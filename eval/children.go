package eval

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/resources"
)

// Child resources: an action of a resource type written in HCL may
// declare resources (file, template, link, other custom types…) whose
// properties are expressions of the parent's: new_resource.NAME. They are
// expanded here, at plan time, once per resource of the type and per
// action it takes, into instances of their own whose blocks are copies of
// the type's, named under the parent's address
// (web_site[blog].template[conf]). The planner plans them as resources
// of their own; apply converges each where the parent's action puts it.

// maxChildDepth bounds how deep child resources nest (typeCycles rejects
// a type that contains itself; this is a last guard).
const maxChildDepth = 32

// Flatten lists insts and their children, depth first: each resource
// followed by its children, in the order they converge.
func Flatten(insts []*Instance) []*Instance {
	var out []*Instance
	var walk func(xs []*Instance)
	walk = func(xs []*Instance) {
		for _, x := range xs {
			out = append(out, x)
			walk(x.Children)
		}
	}
	walk(insts)
	return out
}

// Address is the instance's address: TYPE[NAME], or the parent's address
// and its own for a child resource.
func (i *Instance) Address() string {
	if i.Block != nil {
		return i.Block.Address()
	}
	if i.Resource != nil {
		return i.Resource.Address()
	}
	return ""
}

// newResourceValue is what a child resource's expressions see as
// new_resource: every property of desired (its set value, else its
// default, else null) and name, the resource's name, unless a property has
// that name. Sensitive values (the property's, or what the recipe made
// sensitive) are marked, so that what reads them is sensitive too. A nil
// desired gives an unknown value of the type's shape (checkChildren).
func newResourceValue(s *resources.Schema, desired *resources.Resource, sensitive map[string]bool) cty.Value {
	attrs := map[string]cty.Type{}
	for _, p := range s.Properties {
		attrs[p.Name] = p.Type
	}
	if _, ok := attrs["name"]; !ok {
		attrs["name"] = cty.String
	}
	if desired == nil {
		return cty.UnknownVal(cty.Object(attrs))
	}
	vals := map[string]cty.Value{}
	if s.Property("name") == nil {
		vals["name"] = cty.StringVal(desired.Name)
	}
	for _, p := range s.Properties {
		v := desired.Get(p.Name)
		if v == cty.NilVal || v == cty.DynamicVal {
			v = cty.NullVal(p.Type)
		}
		if p.Sensitive || sensitive[p.Name] {
			v = v.Mark(SensitiveMark)
		}
		vals[p.Name] = v
	}
	return cty.ObjectVal(vals)
}

// childContext is ctx with new_resource: marked (values) and plain
// (guards and notification references, whose sensitivity is decided from
// the expressions).
func childContext(ctx *hcl.EvalContext, nr cty.Value) (marked, plain *hcl.EvalContext) {
	with := func(v cty.Value) *hcl.EvalContext {
		vars := maps.Clone(ctx.Variables)
		if vars == nil {
			vars = map[string]cty.Value{}
		}
		vars[NewResourceVar] = v
		return &hcl.EvalContext{Variables: vars, Functions: ctx.Functions}
	}
	pv, _ := nr.UnmarkDeep()
	return with(nr), with(pv)
}

// expansion is what expanding the children of the resources needs.
type expansion struct {
	c      *config.Config
	reg    *resources.Registry
	scope  *Scope
	source func(hcl.Range) string
	// ctxs are the plain contexts child blocks were evaluated in, for
	// their notification references.
	ctxs      map[*config.ResourceBlock]*hcl.EvalContext
	templates []*TemplateError
	// expander expands children with for_each or count.
	expander *expander
}

// expand evaluates the child resources of inst's actions, and theirs,
// into inst.Children.
func (x *expansion) expand(inst *Instance, depth int) hcl.Diagnostics {
	var diags hcl.Diagnostics
	tb := x.c.Type(inst.Resource.Type)
	if tb == nil || inst.Resource.Action == "nothing" {
		return nil
	}
	if depth >= maxChildDepth {
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Child resources nest too deep",
			Detail:   fmt.Sprintf("%s is %d levels of child resources deep; toque stops at %d.", inst.Address(), depth, maxChildDepth),
			Subject:  inst.Block.DeclRange.Ptr(),
		})
	}
	sensitive := map[string]bool{}
	for _, p := range inst.SensitiveProps {
		sensitive[p] = true
	}
	nr := newResourceValue(inst.Resource.Schema(), inst.Resource, sensitive)
	if inst.Sensitive {
		nr = nr.Mark(SensitiveMark)
	}
	// Which action declares each child, so that two actions of one
	// resource cannot both declare it.
	declaredBy := map[string]string{}
	for si, action := range inst.Actions {
		ab := actionBlock(tb, action)
		if ab == nil {
			continue
		}
		for _, it := range ab.Items {
			if it.Resource == nil {
				continue
			}
			cb := *it.Resource
			cb.Parent = inst.Address()
			if other, dup := declaredBy[cb.LocalAddress()]; dup {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Child resource declared by two actions",
					Detail:   fmt.Sprintf("%s runs the actions %s and %s, and both declare %s: one resource would be two. Rename the child in one of the actions of %s, or run the actions from two resources.", inst.Address(), other, action, cb.LocalAddress(), tb.Name),
					Subject:  it.Resource.DeclRange.Ptr(),
				})
				continue
			}
			declaredBy[cb.LocalAddress()] = action
			t, ok := x.reg.Lookup(cb.Type)
			if !ok {
				diags = diags.Append(config.UnknownTypeDiag(cb.Type, cb.TypeRange, x.reg))
				continue
			}
			ctx, plain := childContext(x.scope.EvalContext(cb.Dir), nr)
			insts := []instanceOf{{block: &cb, ctx: ctx, plain: plain}}
			if cb.Meta.Expands() {
				var d hcl.Diagnostics
				insts, d = x.expander.expand(&cb, ctx, plain)
				explainEachCount(d)
				diags = append(diags, inChild(d, inst)...)
			}
			seen := seenDiags{}
			for _, in := range insts {
				x.ctxs[in.block] = in.plain
				child, d, tmpl := evaluateBlock(in.block, t, x.scope, in.ctx, unmarkingContext(in.ctx), x.reg, x.source)
				x.templates = append(x.templates, tmpl...)
				diags = append(diags, seen.drop(inChild(d, inst))...)
				if child == nil {
					continue
				}
				child.Parent, child.ParentStep = inst, si
				if inst.Sensitive && !child.Sensitive {
					child.Sensitive = true
				}
				inst.Children = append(inst.Children, child)
				diags = append(diags, x.expand(child, depth+1)...)
			}
		}
	}
	return diags
}

// inChild says, in each error about a child resource, which resource it
// was expanded for: the diagnostic points into the type's file, and the
// recipe's resource is where the values came from.
func inChild(diags hcl.Diagnostics, parent *Instance) hcl.Diagnostics {
	for _, d := range diags {
		if d.Severity != hcl.DiagError || parent.Block == nil {
			continue
		}
		r := parent.Block.DeclRange
		d.Detail += fmt.Sprintf(" (In the child resources of %s, declared at %s:%d.)", parent.Address(), r.Filename, r.Start.Line)
	}
	return diags
}

// actionBlock is tb's action called name, or nil.
func actionBlock(tb *config.TypeBlock, name string) *config.ActionBlock {
	for _, ab := range tb.Actions {
		if ab.Name == name {
			return ab
		}
	}
	return nil
}

// checkChildren evaluates the child resources of tb's actions with the
// parent's properties unknown: what does not depend on them (a property
// the child's type does not have, new_resource.NAME of a property the
// type does not declare, a wrong action) is reported even when no recipe
// uses the type.
func checkChildren(c *config.Config, tb *config.TypeBlock, reg *resources.Registry) hcl.Diagnostics {
	t, ok := reg.Lookup(tb.Name)
	if !ok {
		return nil
	}
	scope := &Scope{Node: cty.DynamicVal, Host: cty.DynamicVal}
	nr := newResourceValue(t.Schema(), nil, nil)
	var diags hcl.Diagnostics
	for _, ab := range tb.Actions {
		for _, it := range ab.Items {
			if it.Resource == nil {
				continue
			}
			ct, ok := reg.Lookup(it.Resource.Type)
			if !ok {
				continue // config reported it
			}
			ctx, plain := childContext(scope.EvalContext(it.Resource.Dir), nr)
			insts := []instanceOf{{block: it.Resource, ctx: ctx, plain: plain}}
			if it.Resource.Meta.Expands() {
				var d hcl.Diagnostics
				insts, d = newExpander(scope, c.SourceText).expand(it.Resource, ctx, plain)
				explainEachCount(d)
				diags = append(diags, d...)
			}
			for _, in := range insts {
				_, d, _ := evaluateBlock(in.block, ct, scope, in.ctx, unmarkingContext(in.ctx), reg, c.SourceText)
				diags = append(diags, d...)
			}
		}
	}
	return dedupe(diags)
}

// dedupe drops diagnostics repeated with the same summary at the same place.
func dedupe(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	seen := map[string]bool{}
	for _, d := range diags {
		key := d.Summary
		if d.Subject != nil {
			key += d.Subject.String()
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, d)
	}
	return out
}

// notifiedComposites reports notifications that would run an action of a
// custom resource that declares child resources: a notified run is one
// step of one resource, which cannot carry children.
func notifiedComposites(c *config.Config, edges []*Notification) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, e := range edges {
		tb := c.Type(e.Target.Type)
		if tb == nil {
			continue
		}
		ab := actionBlock(tb, e.Action)
		if ab == nil || !slices.ContainsFunc(ab.Items, func(it *config.ActionItem) bool { return it.Resource != nil }) {
			continue
		}
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Notified action declares child resources",
			Detail: fmt.Sprintf("%s would run %s's action %s when notified, but that action of %s declares child resources, and a notified run cannot converge children. Notify an action of %s that has only converge_if_changed and converge_by steps, or notify one of the child resources.",
				e.Notifier.Address(), e.Target.Address(), e.Action, tb.Name, tb.Name),
			Subject: e.DeclRange.Ptr(),
		})
	}
	return diags
}
