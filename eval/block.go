package eval

import (
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
	"github.com/zclconf/go-cty/cty"
)

// Block decodes b's body against t's schema in scope. It returns nil and
// the diagnostics when anything is wrong. Guard interpreters are resolved
// against the types of reg.
func Block(b *config.ResourceBlock, t resources.Type, scope *Scope, reg *resources.Registry) (*Instance, hcl.Diagnostics) {
	ctx := scope.EvalContext(b.Dir)
	inst, diags, _ := evaluateBlock(b, t, scope, ctx, unmarkingContext(ctx), reg, nil)
	return inst, diags
}

// evaluateBlock decodes one resource block; plainCtx is
// unmarkingContext(ctx), made once per context by the caller. It returns
// nil and every diagnostic of the block when anything is wrong, and the
// templates that failed to render, for the diagnostic writer.
//
// Its steps, each a method of blockEval: the properties, one attribute at
// a time (property), the name property's default and the required ones;
// then the meta-arguments (meta), which stop the block when one is lazy;
// then the template and what a Deriver derives; then the guards, and the
// Instance.
func evaluateBlock(b *config.ResourceBlock, t resources.Type, scope *Scope, ctx, plainCtx *hcl.EvalContext, reg *resources.Registry, source func(hcl.Range) string) (*Instance, hcl.Diagnostics, []*TemplateError) {
	be := newBlockEval(b, t, scope, ctx, source)
	for _, a := range be.attributes() {
		be.property(a)
	}
	be.defaultName()
	be.required()
	m, ok := be.meta()
	if !ok {
		explainEachCount(be.diags)
		return nil, be.diags, be.ev.templates
	}
	be.template(m.action)
	be.deriveValues()
	res := resources.NewResource(be.s, b.Name, m.action, be.values)
	res.Key = b.Key
	guards, notifiedGuards, ok := be.guards(res, m, plainCtx, reg)
	if !ok {
		explainEachCount(be.diags)
		return nil, be.diags, be.ev.templates
	}
	if m.sensitive || mayBeSensitive(b.Meta.Sensitive, ctx) {
		// Diagnostics of a sensitive resource never show the values its
		// expressions referred to.
		diag.MarkSensitive(be.diags)
	}
	explainEachCount(be.diags)
	if be.diags.HasErrors() {
		return nil, be.diags, be.ev.templates
	}
	return be.instance(res, m, guards, notifiedGuards), be.diags, be.ev.templates
}

// metaNames are the arguments every resource takes besides its type's
// properties.
var metaNames = []string{"action", "only_if", "not_if", "guard_interpreter", "ignore_failure", "sensitive", "for_each", "count", "notifies", "subscribes", "dynamic"}

// blockEval is one resource block being evaluated (evaluateBlock): the
// block, its type, and what the steps so far decoded. Each step appends
// its diagnostics to diags and goes on, so that the user sees every
// error of the block at once.
type blockEval struct {
	b      *config.ResourceBlock
	t      resources.Type
	s      *resources.Schema
	ev     *evaluator
	source func(hcl.Range) string
	// tt is t as a type that renders a template, when templated.
	tt        resources.Templated
	templated bool

	diags hcl.Diagnostics
	// byName holds the block's attributes by name.
	byName map[string]*hcl.Attribute
	// values holds the properties decoded so far, a lazy one as unknown.
	values map[string]cty.Value
	// errored names the properties that failed to decode: not reported
	// missing as well.
	errored map[string]bool
	// lazies holds the properties written lazy(…), kept for apply.
	lazies map[string]*lazy.Expr
	// sensitiveProps names the properties whose value is sensitive.
	sensitiveProps map[string]bool
}

func newBlockEval(b *config.ResourceBlock, t resources.Type, scope *Scope, ctx *hcl.EvalContext, source func(hcl.Range) string) *blockEval {
	s := t.Schema()
	be := &blockEval{
		b: b, t: t, s: s, source: source,
		ev:             &evaluator{ctx: ctx, scope: scope},
		values:         make(map[string]cty.Value, len(s.Properties)),
		errored:        map[string]bool{},
		lazies:         map[string]*lazy.Expr{},
		sensitiveProps: map[string]bool{},
	}
	be.tt, be.templated = t.(resources.Templated)
	return be
}

// attributes is the block's attributes in source order, also kept by name.
func (be *blockEval) attributes() []*hcl.Attribute {
	var attrs hcl.Attributes
	if be.b.Body != nil {
		var d hcl.Diagnostics
		attrs, d = be.b.Attributes()
		be.diags = append(be.diags, d...)
	}
	list := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		list = append(list, a)
	}
	slices.SortFunc(list, func(a, b *hcl.Attribute) int { return a.Range.Start.Byte - b.Range.Start.Byte })
	be.byName = make(map[string]*hcl.Attribute, len(list))
	for _, a := range list {
		be.byName[a.Name] = a
	}
	return list
}

// property decodes the attribute a: a property of the type, either
// written lazy(…) (lazyProperty) or evaluated now (valueProperty). An
// attribute that is no property, or lazy(…) where it may not be, is an
// error; a template's inline text is left to template.
func (be *blockEval) property(a *hcl.Attribute) {
	s := be.s
	native := be.ev.nativeOf(a.Expr, be.source)
	call := lazyCall(native)
	if call == nil {
		if d := misplacedLazy(native, a.Name); d.HasErrors() {
			be.diags = append(be.diags, d...)
			be.errored[a.Name] = true
			return
		}
	}
	if be.templated && a.Name == be.tt.TemplateProperties().Inline {
		return // evaluated with the template's variables (renderTemplate)
	}
	p := s.Property(a.Name)
	if p == nil {
		be.diags = be.diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unknown property",
			Detail: fmt.Sprintf("The resource type %q has no property %q.%s Its properties are %s, and every resource takes %s.",
				s.Name, a.Name, words.DidYouMean(a.Name, append(s.PropertyNames(), metaNames...)), words.Quoted(s.PropertyNames()), words.Quoted(metaNames)),
			Subject: a.NameRange.Ptr(),
		})
		return
	}
	if call != nil {
		be.lazyProperty(p, call)
		return
	}
	be.valueProperty(p, a)
}

// lazyProperty keeps the expression of p, written lazy(…) (call), for
// apply, and holds p unknown meanwhile. A property that names the
// resource, or a template's source, may not be lazy.
func (be *blockEval) lazyProperty(p *resources.Property, call *hclsyntax.FunctionCallExpr) {
	b, ev := be.b, be.ev
	inner, d := lazyInner(call)
	switch {
	case d.HasErrors():
	case p.Identity || p.NameProperty:
		d = d.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "lazy is not allowed on a property that names the resource",
			Detail:   fmt.Sprintf("The property %q names %s: a resource's identity must be known when the plan is made (it is what the plan reads, and what other resources and notifications refer to), so it cannot be lazy. Make it known at plan, and make lazy the properties that depend on what earlier resources do.", p.Name, b.Address()),
			Subject:  call.Range().Ptr(),
		})
	case be.templated && p.Name == be.tt.TemplateProperties().Source:
		d = d.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "lazy is not allowed on a template's source",
			Detail:   fmt.Sprintf("The template file of %s must be known when the plan is made: the plan carries its text, so that apply renders what was reviewed. Make variables lazy instead.", b.Address()),
			Subject:  call.Range().Ptr(),
		})
	}
	if d.HasErrors() {
		be.diags = append(be.diags, d...)
		be.errored[p.Name] = true
		return
	}
	if p.Sensitive || ev.scope.ReadsSensitive(inner) || callsSensitive(inner) || ev.readsMarkedEach(inner) {
		be.sensitiveProps[p.Name] = true
	}
	e, d := ev.lazyExpr(inner, b.Dir, be.source)
	be.diags = append(be.diags, d...)
	if d.HasErrors() {
		be.errored[p.Name] = true
		return
	}
	be.lazies[p.Name] = e
	be.values[p.Name] = p.Unknown()
}

// valueProperty evaluates a, the attribute of p, and decodes the value
// against p (type, normalisation, validation). A sensitive value's
// diagnostics never show it.
func (be *blockEval) valueProperty(p *resources.Property, a *hcl.Attribute) {
	v, d, sens := be.ev.sensitiveValue(a.Expr)
	sens = sens || p.Sensitive || sensitiveWhen(p, v)
	if sens {
		diag.MarkSensitive(d)
		be.sensitiveProps[p.Name] = true
	}
	be.diags = append(be.diags, d...)
	if d.HasErrors() {
		be.errored[p.Name] = true
		return
	}
	v, d = decodeProperty(be.s, p, v, a.Expr.Range())
	if sens {
		diag.MarkSensitive(d)
	}
	be.diags = append(be.diags, d...)
	be.errored[p.Name] = d.HasErrors()
	if !d.HasErrors() && v != cty.NilVal {
		be.values[p.Name] = v
	}
}

// defaultName gives the name property, when the block did not set it, the
// block's label.
func (be *blockEval) defaultName() {
	np := be.s.NameProperty()
	if np == nil || be.errored[np.Name] {
		return
	}
	if v, ok := be.values[np.Name]; !ok || v.IsNull() {
		v, d := decodeProperty(be.s, np, cty.StringVal(be.b.Name), be.b.LabelRange)
		be.diags = append(be.diags, d...)
		be.errored[np.Name] = be.errored[np.Name] || d.HasErrors()
		if !d.HasErrors() && v != cty.NilVal {
			be.values[np.Name] = v
		}
	}
}

// required reports every required property the block does not set (one
// that failed to decode is reported already).
func (be *blockEval) required() {
	for _, p := range be.s.Properties {
		if !p.Required {
			continue
		}
		if _, ok := be.values[p.Name]; !ok && !be.errored[p.Name] {
			be.diags = be.diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing required property",
				Detail:   fmt.Sprintf("The resource type %q requires the property %q. Set it in %s.", be.s.Name, p.Name, be.b.Address()),
				Subject:  be.b.DeclRange.Ptr(),
			})
		}
	}
}

// blockMeta is what a block's meta-arguments say, but its guards.
type blockMeta struct {
	actions           []string
	action            string // the first action, or the type's default
	sensitive, ignore bool
}

// meta evaluates the block's meta-arguments but its guards and
// notifications. It reports false, and the block is not evaluated
// further, when one of them is written lazy(…): each says something the
// plan shows.
func (be *blockEval) meta() (blockMeta, bool) {
	b, ev, source := be.b, be.ev, be.source
	metaDiags := refuseLazy(ev.nativeOf(b.Meta.Action, source), "action", "the plan shows what each action does")
	metaDiags = append(metaDiags, refuseLazy(ev.nativeOf(b.Meta.GuardInterpreter, source), "guard_interpreter", "it says how the guards run, and guards are shown as they will run")...)
	metaDiags = append(metaDiags, refuseLazy(ev.nativeOf(b.Meta.IgnoreFailure, source), "ignore_failure", "the plan says what a failure stops")...)
	metaDiags = append(metaDiags, refuseLazy(ev.nativeOf(b.Meta.Sensitive, source), "sensitive", "the plan hides a sensitive resource's values")...)
	be.diags = append(be.diags, metaDiags...)
	if metaDiags.HasErrors() {
		return blockMeta{}, false
	}
	var m blockMeta
	var d hcl.Diagnostics
	m.actions, d = ev.actions(b.Meta.Action, be.s)
	be.diags = append(be.diags, d...)
	m.action = be.s.DefaultAction
	if len(m.actions) > 0 {
		m.action = m.actions[0]
	}
	m.sensitive, d = ev.boolean(b.Meta.Sensitive, "sensitive")
	be.diags = append(be.diags, d...)
	m.ignore, d = ev.boolean(b.Meta.IgnoreFailure, "ignore_failure")
	be.diags = append(be.diags, d...)
	return m, true
}

// template renders the template of a type that takes one, for action; the
// content is sensitive when its variables are, or the template read a
// sensitive attribute.
func (be *blockEval) template(action string) {
	if !be.templated {
		return
	}
	be.diags = append(be.diags, renderTemplate(be.b, be.tt, action, be.byName, be.values, be.errored, be.lazies, be.ev, be.source)...)
	props := be.tt.TemplateProperties()
	if be.sensitiveProps[props.Variables] || be.ev.templateReadSensitive {
		be.sensitiveProps[props.Content] = true
	}
}

// deriveValues stores what a type that derives what it manages from its
// properties (resources.Deriver) derives, when the block has no error so
// far. Such a type takes no lazy property: the plan shows (and diffs)
// exactly what it derives.
func (be *blockEval) deriveValues() {
	dv, ok := be.t.(resources.Deriver)
	if ok && len(be.lazies) > 0 {
		for _, name := range sortedNames(be.lazies) {
			be.diags = be.diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "lazy is not allowed on " + be.s.Name,
				Detail:   fmt.Sprintf("%s derives what it manages from its properties when the plan is made, so that the plan shows exactly what it writes; %q cannot be known only at apply. Make it known at plan.", be.b.Address(), name),
				Subject:  be.byName[name].Expr.Range().Ptr(),
			})
		}
	} else if ok && !be.diags.HasErrors() {
		be.diags = append(be.diags, derive(dv, be.b, be.values, be.sensitiveProps)...)
	}
}

// guards decodes the block's guards for res, the resource they guard, and,
// for a resource whose action is nothing, those of its notified runs
// (guarded there, not in place). It reports false, before decoding them,
// when the block has an error so far. Guards that read a sensitive
// attribute (or use sensitive()) hide their command, output and
// environment like a sensitive resource's.
func (be *blockEval) guards(res *resources.Resource, m blockMeta, plainCtx *hcl.EvalContext, reg *resources.Registry) (guards, notifiedGuards []*guard.Spec, ok bool) {
	b, ev, source := be.b, be.ev, be.source
	onlyIf, onlyAtApply, d := guardExpr(ev.nativeOf(b.Meta.OnlyIf, source), "only_if")
	be.diags = append(be.diags, d...)
	notIf, notAtApply, d := guardExpr(ev.nativeOf(b.Meta.NotIf, source), "not_if")
	be.diags = append(be.diags, d...)
	if be.diags.HasErrors() {
		return nil, nil, false
	}
	guardsSensitive := m.sensitive || ev.marksOrReadsSensitive(onlyIf) || ev.marksOrReadsSensitive(notIf)
	var lazyProps map[string]bool
	for k := range be.lazies {
		if lazyProps == nil {
			lazyProps = map[string]bool{}
		}
		lazyProps[k] = true
	}
	in := guard.Input{
		OnlyIf:           onlyIf,
		NotIf:            notIf,
		OnlyIfAtApply:    onlyAtApply,
		NotIfAtApply:     notAtApply,
		GuardInterpreter: b.Meta.GuardInterpreter,
		Parent:           res,
		Ctx:              plainCtx,
		Registry:         reg,
		Source:           source,
		Sensitive:        guardsSensitive,
		Capture:          func(e hcl.Expression) (*lazy.Expr, hcl.Diagnostics) { return ev.lazyExpr(e, b.Dir, source) },
		LazyProps:        lazyProps,
	}
	guards, d = guard.Decode(in)
	be.diags = append(be.diags, d...)
	if m.action == "nothing" && b.Meta.HasGuards() && !d.HasErrors() {
		// Not guarded in place, but a notified run of it is.
		nin := in
		nin.Parent = resources.NewResource(be.s, b.Name, notifiedAction(be.s), be.values)
		nin.Parent.Key = b.Key
		nin.Sensitive = false
		notifiedGuards, _ = guard.Decode(nin)
	}
	return guards, notifiedGuards, true
}

// notifiedAction is the action the guards of a notified run are decoded
// for: the type's default, or its first action when the default is
// nothing (a service used as a handler). Guards depend on the action only
// in that one whose action is nothing is not guarded, so any action a
// notification may name will do.
func notifiedAction(s *resources.Schema) string {
	if s.DefaultAction != "nothing" || len(s.Actions) == 0 {
		return s.DefaultAction
	}
	for _, a := range s.Actions {
		if a != "nothing" {
			return a
		}
	}
	return s.DefaultAction
}

// instance is the evaluated block: res, what its meta-arguments say, its
// guards, its lazy and sensitive properties.
func (be *blockEval) instance(res *resources.Resource, m blockMeta, guards, notifiedGuards []*guard.Spec) *Instance {
	var sensList []string
	for _, p := range be.s.Properties {
		if be.sensitiveProps[p.Name] {
			sensList = append(sensList, p.Name)
		}
	}
	lazies := be.lazies
	if len(lazies) == 0 {
		lazies = nil
	}
	return &Instance{
		Lazy:           lazies,
		Actions:        m.actions,
		SensitiveProps: sensList,
		NotifiedGuards: notifiedGuards,
		Block:          be.b,
		Type:           be.t,
		Resource:       res,
		Sensitive:      m.sensitive,
		IgnoreFailure:  m.ignore,
		Guards:         guards,
	}
}
