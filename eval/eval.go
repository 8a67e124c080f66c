package eval

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
)

// Scope is what expressions can see at plan time.
type Scope struct {
	// Node is the merged node attributes (an object).
	Node cty.Value
	// Host is the host facts (an object), or cty.DynamicVal when the host
	// must not be read (validate).
	Host cty.Value
	// Sensitive lists the paths below node of the sensitive attribute
	// leaves (["db", "password"]); an expression that reads one makes what
	// it sets sensitive.
	Sensitive [][]string
	// Data is the data blocks' answers, read as data.TYPE.NAME.result
	// (DataValue); nil reads as an empty object.
	Data cty.Value
	// SensitiveData lists the data blocks (TYPE.NAME) whose answer is
	// sensitive: an expression that reads one makes what it sets
	// sensitive.
	SensitiveData []string
	// ReleaseSyntax has Resources let go of each resource block's body as
	// soon as the block is evaluated (config.ResourceBlock.ReleaseBody):
	// the caller plans from the instances and evaluates nothing again.
	ReleaseSyntax bool
}

// Instance is a resource block evaluated against its type's schema.
type Instance struct {
	Block *config.ResourceBlock
	// Actions are the actions the recipe asked for, in the order they run
	// (one, most often); Resource.Action is the first.
	Actions       []string
	Type          resources.Type
	Resource      *resources.Resource
	Sensitive     bool
	IgnoreFailure bool
	// Guards are the resource's only_if / not_if, decoded and resolved
	// (guard.Decode), in evaluation order; none when the action is
	// "nothing".
	Guards []*guard.Spec
	// Notifies are the notification edges this resource fires when it
	// changes (its notifies blocks and the subscribes blocks naming it),
	// resolved and checked by Resources, in collection order.
	Notifies []*Notification
	// NotifiedGuards are the guards of a resource whose action is
	// "nothing", decoded as if it had an action (its type's default, or
	// its first when the default is nothing, as a service's is): they
	// decide a notified run of it (Chef evaluates guards when a notified
	// action runs).
	NotifiedGuards []*guard.Spec
	// SensitiveProps names the properties whose value the recipe made
	// sensitive: written with sensitive(), or from an expression reading a
	// sensitive node attribute (a template's content, when its variables
	// or template do). In schema order.
	SensitiveProps []string
	// Lazy holds the values known only at apply, by property: the recipe
	// wrote them as lazy(EXPR) (a template's content too, when its
	// variables or inline template are lazy). Resource holds an unknown
	// value for each; the planner evaluates those it can know at plan
	// (Resolver), and the plan carries the others to apply.
	Lazy map[string]*lazy.Expr
	// Parent is the resource whose action declares this one, a child
	// resource of a custom type (nil at the top level); ParentStep is the
	// index of that action in the parent's Actions.
	Parent     *Instance
	ParentStep int
	// Children are the child resources the actions of a resource of a
	// custom type declare, in the order they converge.
	Children []*Instance
	// nodeReads is NodePathsRead(Block), kept for a sensitive instance
	// when its block's body is released.
	nodeReads [][]string
}

// NodePathsRead is NodePathsRead of the instance's block, also once the
// block's body was released (Scope.ReleaseSyntax).
func (inst *Instance) NodePathsRead() [][]string {
	if inst.Block == nil {
		return nil
	}
	if inst.nodeReads != nil {
		return inst.nodeReads
	}
	return NodePathsRead(inst.Block)
}

// EvalContext is the plan-time evaluation context: node, host and data,
// and the function library with files resolved against baseDir.
func (s *Scope) EvalContext(baseDir string) *hcl.EvalContext {
	node, h, data := cty.EmptyObjectVal, cty.DynamicVal, cty.EmptyObjectVal
	if s != nil {
		if s.Node != cty.NilVal {
			node = s.Node
		}
		if s.Host != cty.NilVal {
			h = s.Host
		}
		if s.Data != cty.NilVal {
			data = s.Data
		}
	}
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{"node": node, "host": h, DataVar: data},
		Functions: Functions(baseDir),
	}
}

// unmarkingContext is ctx whose sensitive() marks nothing, for evaluations
// whose results toque does not store as values (guards, notification
// references): their sensitivity is decided from the expressions.
func unmarkingContext(ctx *hcl.EvalContext) *hcl.EvalContext {
	fs := make(map[string]function.Function, len(ctx.Functions))
	for k, v := range ctx.Functions {
		fs[k] = v
	}
	fs["sensitive"] = identityFunc
	vars, cloned := ctx.Variables, false
	for _, name := range []string{NewResourceVar, EachVar, DataVar} {
		if v, ok := vars[name]; ok && v.ContainsMarked() {
			// A child resource's view of its parent, an instance's
			// each.value and a sensitive data block's answer mark
			// sensitive values.
			if !cloned {
				vars, cloned = maps.Clone(vars), true
			}
			vars[name], _ = v.UnmarkDeep()
		}
	}
	return &hcl.EvalContext{Variables: vars, Functions: fs}
}

var identityFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowNull: true, AllowDynamicType: true}},
	Type:   func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil },
	Impl:   func(args []cty.Value, _ cty.Type) (cty.Value, error) { return args[0], nil },
})

// ReadsSensitive reports whether expr reads a sensitive node attribute (a
// traversal of node that leads to a sensitive leaf, or to an object or
// list holding one) or a sensitive data block's answer.
func (s *Scope) ReadsSensitive(expr hcl.Expression) bool {
	if s == nil || (len(s.Sensitive) == 0 && len(s.SensitiveData) == 0) || expr == nil {
		return false
	}
	for _, tr := range expr.Variables() {
		if s.sensitiveTraversal(tr) {
			return true
		}
	}
	return false
}

func (s *Scope) sensitiveTraversal(tr hcl.Traversal) bool {
	if tr.RootName() == DataVar {
		return s.readsSensitiveData(tr)
	}
	if tr.RootName() != "node" {
		return false
	}
	var path []string
	for _, step := range tr[1:] {
		switch st := step.(type) {
		case hcl.TraverseAttr:
			path = append(path, st.Name)
		case hcl.TraverseIndex:
			if st.Key.Type() == cty.String && st.Key.IsKnown() {
				path = append(path, st.Key.AsString())
				continue
			}
			return s.prefixOfSensitive(path)
		default:
			return s.prefixOfSensitive(path)
		}
	}
	return s.prefixOfSensitive(path)
}

// Covers reports whether path (below node) is one of the scope's
// sensitive paths, or lies inside or around one.
func (s *Scope) Covers(path []string) bool {
	return s != nil && s.prefixOfSensitive(path)
}

// NodePathsRead lists the paths below node that b's expressions read
// (properties, meta-arguments, notification references, dynamic blocks,
// its group's guards and notifications): node.web.port
// is ["web", "port"]; a read of node itself is the empty path.
func NodePathsRead(b *config.ResourceBlock) [][]string {
	var out [][]string
	for _, e := range blockExprs(b) {
		out = append(out, nodePaths(e)...)
	}
	return out
}

// blockExprs lists b's expressions: its properties, meta-arguments,
// notification references, dynamic blocks, and its group's guards,
// notifications and dynamic blocks.
func blockExprs(b *config.ResourceBlock) []hcl.Expression {
	var exprs []hcl.Expression
	if attrs, _ := b.Attributes(); attrs != nil {
		for _, a := range attrs {
			exprs = append(exprs, a.Expr)
		}
	}
	m := b.Meta
	exprs = append(exprs, m.Action, m.OnlyIf, m.NotIf, m.GuardInterpreter, m.IgnoreFailure, m.Sensitive, m.ForEach, m.Count)
	for _, nb := range append(append([]*config.NotifyBlock(nil), m.Notifies...), m.Subscribes...) {
		exprs = append(exprs, nb.Resource, nb.Timing)
	}
	exprs = append(exprs, dynamicExprs(m.Dynamic)...)
	if g := b.Group; g != nil {
		exprs = append(exprs, g.OnlyIf, g.NotIf, g.GuardInterpreter)
		for _, nb := range append(append([]*config.NotifyBlock(nil), g.Notifies...), g.Subscribes...) {
			exprs = append(exprs, nb.Resource, nb.Timing)
		}
		exprs = append(exprs, dynamicExprs(g.Dynamic)...)
	}
	out := exprs[:0]
	for _, e := range exprs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// prefixOfSensitive reports whether path leads to a sensitive leaf, or to
// something holding one, or into one.
func (s *Scope) prefixOfSensitive(path []string) bool {
	for _, leaf := range s.Sensitive {
		n := min(len(leaf), len(path))
		if slices.Equal(leaf[:n], path[:n]) {
			return true
		}
	}
	return false
}

// Resources decodes every resource block of c, in collection order,
// against its type's schema, in scope, expands the child resources of
// resources of custom types (Instance.Children; Flatten lists them all),
// and resolves the notification edges between them all. reg must hold
// c's resource types (Types). It keeps going to report every error; the
// instances returned are those that evaluated without error, so callers
// must check the diagnostics before using them.
func Resources(c *config.Config, reg *resources.Registry, scope *Scope) ([]*Instance, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var out []*Instance
	ctxs := map[string]*hcl.EvalContext{}
	plain := map[string]*hcl.EvalContext{} // unmarkingContext of each, made once
	for _, b := range c.Resources {
		if ctxs[b.Dir] == nil {
			ctxs[b.Dir] = scope.EvalContext(b.Dir)
			plain[b.Dir] = unmarkingContext(ctxs[b.Dir])
		}
	}
	// Blocks with for_each or count stand for their instances (expand.go),
	// each evaluated as a block of its own.
	ex := newExpander(scope, c.SourceText)
	todo := make([]instanceOf, 0, len(c.Resources))
	for _, b := range c.Resources {
		if !b.Meta.Expands() {
			todo = append(todo, instanceOf{block: b, ctx: ctxs[b.Dir], plain: plain[b.Dir]})
			continue
		}
		if _, ok := reg.Lookup(b.Type); !ok {
			diags = diags.Append(config.UnknownTypeDiag(b.Type, b.TypeRange, reg))
			continue
		}
		insts, d := ex.expand(b, ctxs[b.Dir], plain[b.Dir])
		explainEachCount(d)
		diags = append(diags, d...)
		todo = append(todo, insts...)
	}
	groups, d := groupGuards(c, reg, scope, ctxs, plain)
	diags = append(diags, d...)
	// Blocks are evaluated on every CPU (a third of a large plan's time was
	// spent here): evaluation reads the shared contexts and ASTs and writes
	// nothing shared. Results are merged in declaration order below.
	type result struct {
		inst      *Instance
		diags     hcl.Diagnostics
		templates []*TemplateError
	}
	results := make([]result, len(todo))
	parallelFor(len(todo), func(i int) {
		b := todo[i].block
		t, ok := reg.Lookup(b.Type)
		if !ok {
			results[i].diags = hcl.Diagnostics{config.UnknownTypeDiag(b.Type, b.TypeRange, reg)}
			return
		}
		results[i].inst, results[i].diags, results[i].templates = evaluateBlock(b, t, scope, todo[i].ctx, todo[i].plain, reg, c.SourceText)
		if inst := results[i].inst; inst != nil {
			groups.apply(inst)
			if scope != nil && scope.ReleaseSyntax {
				if inst.Sensitive {
					inst.nodeReads = append([][]string{}, NodePathsRead(b)...)
				}
				b.ReleaseBody()
			}
		}
	})
	// The contexts notification references are evaluated in, for the
	// instances of blocks with for_each or count (each or count set).
	instCtx := map[*config.ResourceBlock]*hcl.EvalContext{}
	sameDiags := seenDiags{}
	for i, r := range results {
		if todo[i].block.Meta.Expands() {
			// Instances of one block share its expressions: an error in
			// one they all read is reported once.
			r.diags = sameDiags.drop(r.diags)
		}
		diags = append(diags, r.diags...)
		addTemplates(c, r.templates)
		if r.inst != nil {
			out = append(out, r.inst)
			if todo[i].block.Meta.Expands() {
				instCtx[todo[i].block] = todo[i].plain
			}
		}
	}
	// Child resources of custom types, expanded per resource.
	x := &expansion{c: c, reg: reg, scope: scope, source: c.SourceText, ctxs: map[*config.ResourceBlock]*hcl.EvalContext{}, expander: ex}
	if len(c.Types) > 0 {
		for _, inst := range out {
			diags = append(diags, x.expand(inst, 0)...)
		}
		addTemplates(c, x.templates)
	}
	all := Flatten(out)
	diags = append(diags, duplicates(all)...)
	blocks := make([]*config.ResourceBlock, 0, len(all))
	for _, inst := range all {
		blocks = append(blocks, inst.Block)
	}
	if !diags.HasErrors() || len(x.ctxs) == 0 {
		// (Children that failed to evaluate are missing: their references
		// would be reported as unknown.)
		edges, d := notificationsOf(blocks, reg, func(b *config.ResourceBlock) *hcl.EvalContext {
			if ctx := x.ctxs[b]; ctx != nil {
				return ctx
			}
			if ctx := instCtx[b]; ctx != nil {
				return ctx
			}
			ctx := ctxs[b.Dir]
			if ctx == nil {
				ctx = scope.EvalContext(b.Dir)
				ctxs[b.Dir] = ctx
			}
			return ctx
		}, notifyScope{unexpanded: ex.unexpanded, expands: ex.expanded, groupCtx: func(g *config.GroupBlock) *hcl.EvalContext {
			if plain[g.Dir] == nil {
				plain[g.Dir] = unmarkingContext(scope.EvalContext(g.Dir))
			}
			return plain[g.Dir]
		}})
		explainEachCount(d)
		diags = append(diags, d...)
		diags = append(diags, notifiedComposites(c, edges)...)
		if !d.HasErrors() {
			attachNotifications(all, edges)
		}
	}
	return out, diags
}

// addTemplates lets the diagnostic writer show snippets of templates that
// failed.
func addTemplates(c *config.Config, templates []*TemplateError) {
	if c.Parser == nil {
		return
	}
	for _, te := range templates {
		if _, ok := c.Parser.Files()[te.Filename]; !ok {
			c.Parser.AddFile(te.Filename, &hcl.File{Body: hcl.EmptyBody(), Bytes: te.Src})
		}
	}
}

// sortedNames is m's keys, sorted.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// derive stores what a Deriver computes from the set properties in
// values; the derived values are sensitive when any set property is.
func derive(dv resources.Deriver, b *config.ResourceBlock, values map[string]cty.Value, sensitiveProps map[string]bool) hcl.Diagnostics {
	var derived map[string]cty.Value
	_, err := safeCall(func() (cty.Value, error) {
		var err error
		derived, err = dv.Derive(values)
		return cty.NilVal, err
	})
	if err != nil {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid resource",
			Detail:   fmt.Sprintf("%s: %s.", b.Address(), err),
			Subject:  b.DeclRange.Ptr(),
		}}
	}
	anySensitive := len(sensitiveProps) > 0
	for k, v := range derived {
		values[k] = v
		if anySensitive {
			sensitiveProps[k] = true
		}
	}
	return nil
}

// duplicates reports resources that manage the same thing (their identity
// properties of one namespace hold the same value: a file and a template
// at one path; or, for a type whose identity names the thing, the same
// identity values: two ini_setting of one file and key), which would
// fight on every apply. Alternatives are allowed: a pair where one is
// guarded (only_if / not_if) or runs only when notified does not both
// converge in one run by itself.
func duplicates(insts []*Instance) hcl.Diagnostics {
	var diags hcl.Diagnostics
	type claim struct {
		inst *Instance
		prop string
	}
	first := make(map[string]claim, len(insts))
	for _, inst := range insts {
		if inst.Block == nil || alternative(inst) {
			continue
		}
		if schema := inst.Resource.Schema(); schema.Identified {
			key, what := identityKey(inst.Resource)
			if c, dup := first[key]; dup {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Two resources manage the same " + schema.Name,
					Detail: fmt.Sprintf("%s and %s (declared at %s:%d) both manage the %s of %s: they would undo each other on every apply. %s",
						inst.Address(), c.inst.Address(), c.inst.Block.DeclRange.Filename, c.inst.Block.DeclRange.Start.Line, schema.Name, what, duplicateAdvice(inst, c.inst, "")),
					Subject: inst.Block.DeclRange.Ptr(),
				})
			} else {
				first[key] = claim{inst, ""}
			}
		}
		for _, p := range inst.Resource.Schema().Properties {
			if p.Namespace == "" {
				continue
			}
			v, ok := inst.Resource.Values[p.Name]
			if !ok || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
				continue
			}
			key := p.Namespace + "\x00" + v.AsString()
			c, dup := first[key]
			if !dup {
				first[key] = claim{inst, p.Name}
				continue
			}
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Two resources manage the same " + p.Namespace,
				Detail: fmt.Sprintf("%s and %s (declared at %s:%d) both manage %s %q: they would undo each other on every apply. %s",
					inst.Address(), c.inst.Address(), c.inst.Block.DeclRange.Filename, c.inst.Block.DeclRange.Start.Line, p.Namespace, v.AsString(), duplicateAdvice(inst, c.inst, p.Name)),
				Subject: inst.Block.DeclRange.Ptr(),
			})
		}
	}
	return diags
}

// duplicateAdvice says what to do about two resources that manage one
// thing; prop is the property they share ("" for an identity).
func duplicateAdvice(a, b *Instance, prop string) string {
	if !a.Block.Key.IsZero() && a.Block.BlockAddress() == b.Block.BlockAddress() {
		what := "the properties that name what it manages"
		if prop != "" {
			what = prop
		}
		via := "each.key"
		if a.Block.Key.IsIndex() {
			via = "count.index"
		}
		return fmt.Sprintf("Both are instances of %s, which gives them the same %s: set it from %s, so that each instance manages its own.", a.Block.BlockAddress(), what, via)
	}
	return "Keep one of them, or make them alternatives with only_if / not_if."
}

// sensitiveWhen reports whether the property's SensitiveWhen hides the
// value v as written (a URL with a password in it).
func sensitiveWhen(p *resources.Property, v cty.Value) bool {
	if p.SensitiveWhen == nil || v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() {
		return false
	}
	hide, err := safeCall(func() (cty.Value, error) { return cty.BoolVal(p.SensitiveWhen(v)), nil })
	return err != nil || hide.True()
}

// identityKey is the identity of r, a resource of an Identified type: its
// type and the values of its identity and name properties, and those
// values worded for a diagnostic.
func identityKey(r *resources.Resource) (key, what string) {
	var parts, words []string
	for _, p := range r.Schema().Properties {
		if !p.Identity && !p.NameProperty {
			continue
		}
		shown := "null"
		if v := r.Get(p.Name); v != cty.NilVal && v.IsWhollyKnown() {
			if b, err := ctyjson.Marshal(v, v.Type()); err == nil {
				shown = string(b)
			}
		}
		parts = append(parts, p.Name+"="+shown)
		words = append(words, p.Name+" = "+shown)
	}
	if r.Schema().NameProperty() == nil {
		// No property holds the name: the name is part of the identity.
		parts = append(parts, "name="+r.Name+r.Key.String())
		words = append(words, fmt.Sprintf("name %q", r.Name))
	}
	return "type:" + r.Type + "\x00" + strings.Join(parts, "\x00"), strings.Join(words, ", ")
}

// alternative reports whether inst runs only when something decides so:
// it, or a resource whose action declares it, is guarded or runs only
// when notified.
func alternative(inst *Instance) bool {
	for i := inst; i != nil; i = i.Parent {
		if i.Block == nil || i.Block.Meta.HasGuards() || i.Block.Group.HasGuards() || i.Resource.Action == "nothing" {
			return true
		}
	}
	return false
}

// mayBeSensitive reports whether a sensitive meta-argument is set to
// anything but a known false (an error or an unknown value counts as
// sensitive: its diagnostics must not show values either way).
func mayBeSensitive(expr hcl.Expression, ctx *hcl.EvalContext) bool {
	if expr == nil {
		return false
	}
	v, d := expr.Value(ctx)
	return d.HasErrors() || !v.IsKnown() || !v.RawEquals(cty.False)
}

// decodeProperty converts v to p's type, then normalises and validates it
// when it is known. A null v is returned as cty.NilVal: not set.
func decodeProperty(s *resources.Schema, p *resources.Property, v cty.Value, rng hcl.Range) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	if v.IsNull() {
		return cty.NilVal, nil
	}
	if p.Type != cty.NilType && p.Type != cty.DynamicPseudoType {
		cv, err := convert.Convert(v, p.Type)
		if err != nil {
			return cty.NilVal, diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Wrong type for property",
				Detail:   fmt.Sprintf("The property %q of %s must be %s: %s.", p.Name, s.Name, p.Type.FriendlyName(), err),
				Subject:  rng.Ptr(),
			})
		}
		v = cv
	}
	if !v.IsWhollyKnown() {
		return v, nil
	}
	if p.Warn != nil {
		if w, _ := safeCall(func() (cty.Value, error) { return cty.StringVal(p.Warn(v)), nil }); w != cty.NilVal && w.AsString() != "" {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Value probably not what was meant",
				Detail:   fmt.Sprintf("The property %q of %s: %s", p.Name, s.Name, w.AsString()),
				Subject:  rng.Ptr(),
			})
		}
	}
	if p.Normalize != nil {
		nv, err := safeCall(func() (cty.Value, error) { return p.Normalize(v) })
		if err != nil {
			return cty.NilVal, diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid value for property",
				Detail:   fmt.Sprintf("The property %q of %s: %s.", p.Name, s.Name, err),
				Subject:  rng.Ptr(),
			})
		}
		v = nv
	}
	if p.Validate != nil {
		_, err := safeCall(func() (cty.Value, error) { return cty.NilVal, p.Validate(v) })
		if err != nil {
			return cty.NilVal, diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid value for property",
				Detail:   fmt.Sprintf("The property %q of %s: %s.", p.Name, s.Name, err),
				Subject:  rng.Ptr(),
			})
		}
	}
	return v, diags
}

// safeCall runs a type's Normalize or Validate, turning a panic into an
// error: a broken type must not take toque down.
func safeCall(f func() (cty.Value, error)) (v cty.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = cty.NilVal, fmt.Errorf("internal error in the resource type: %v", r)
		}
	}()
	return f()
}

// evaluator evaluates expressions and collects template errors.
type evaluator struct {
	ctx       *hcl.EvalContext
	scope     *Scope
	templates []*TemplateError
	// jsonStrings are the JSON-syntax strings read as native templates
	// to find lazy(…) in them (nativeOf).
	jsonStrings []jsonString
	// templateReadSensitive is set when a rendered template (inline or
	// file) reads a sensitive node attribute.
	templateReadSensitive bool
}

// sensitiveValue is value, also saying whether the value is sensitive:
// marked by sensitive(), or computed from a sensitive node attribute. The
// value returned carries no marks.
func (ev *evaluator) sensitiveValue(expr hcl.Expression) (cty.Value, hcl.Diagnostics, bool) {
	v, diags := ev.raw(expr)
	sens := ev.scope.ReadsSensitive(expr)
	if v != cty.NilVal && v.ContainsMarked() {
		var marked []cty.Path
		v, marked = unmarkSensitive(v)
		sens = sens || len(marked) > 0
	}
	return v, diags, sens
}

// marksOrReadsSensitive reports whether expr reads a sensitive node
// attribute or calls sensitive() (nil: false). Its diagnostics are left to
// whoever evaluates expr for real.
func (ev *evaluator) marksOrReadsSensitive(expr hcl.Expression) bool {
	if expr == nil {
		return false
	}
	if ev.scope.ReadsSensitive(expr) {
		return true
	}
	v, _ := expr.Value(ev.ctx)
	return v != cty.NilVal && v.ContainsMarked()
}

// value evaluates expr, replacing a templatefile failure with the
// template's own diagnostics (which point into the template file).
func (ev *evaluator) value(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	v, diags := ev.raw(expr)
	if v != cty.NilVal && v.ContainsMarked() {
		v, _ = v.UnmarkDeep()
	}
	return v, diags
}

// raw is value with sensitive() marks kept.
// stringLiteral is the value of a quoted string with no interpolation
// ("0644", most contents), which is the value of its one literal part:
// what TemplateExpr.Value returns, without building the string again.
func stringLiteral(expr hcl.Expression) (cty.Value, bool) {
	t, ok := expr.(*hclsyntax.TemplateExpr)
	if !ok || len(t.Parts) != 1 {
		return cty.NilVal, false
	}
	lit, ok := t.Parts[0].(*hclsyntax.LiteralValueExpr)
	if !ok || lit.Val.Type() != cty.String || !lit.Val.IsKnown() || lit.Val.IsNull() || lit.Val.IsMarked() {
		return cty.NilVal, false
	}
	return lit.Val, true
}

func (ev *evaluator) raw(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	if v, ok := stringLiteral(expr); ok {
		return v, nil
	}
	v, diags := expr.Value(ev.ctx)
	if ev.scope.ReadsSensitive(expr) {
		diag.MarkSensitive(diags)
	}
	if !diags.HasErrors() {
		return v, diags
	}
	suggest(diags)
	out := make(hcl.Diagnostics, 0, len(diags))
	for _, d := range diags {
		extra, ok := hcl.DiagnosticExtra[hclsyntax.FunctionCallDiagExtra](d)
		var te *TemplateError
		if !ok || !errors.As(extra.FunctionCallError(), &te) {
			out = append(out, d)
			continue
		}
		ev.templates = append(ev.templates, te)
		call := ""
		if d.Subject != nil {
			call = fmt.Sprintf(" The template was rendered by templatefile at %s:%d.", d.Subject.Filename, d.Subject.Start.Line)
		}
		for _, td := range te.Diags {
			c := *td
			c.Detail = strings.TrimSpace(c.Detail + call)
			c.Expression, c.EvalContext = nil, nil
			out = append(out, &c)
		}
	}
	return v, out
}

// actions evaluates the action meta-argument: a string, or a list of
// strings run in order (action = ["enable", "start"]). "nothing" stands
// alone. Without the host (validate), an unknown value is the default.
func (ev *evaluator) actions(expr hcl.Expression, s *resources.Schema) ([]string, hcl.Diagnostics) {
	def := []string{s.DefaultAction}
	if expr == nil {
		return def, nil
	}
	v, diags := ev.value(expr)
	if diags.HasErrors() {
		return nil, diags
	}
	rng := expr.Range()
	bad := func(summary, detail string) ([]string, hcl.Diagnostics) {
		return nil, diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()})
	}
	if v.IsNull() || !v.IsKnown() {
		return def, diags
	}
	var elems []cty.Value
	t := v.Type()
	switch {
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		if v.LengthInt() == 0 {
			return bad("No action given", "The action list is empty. Give one action or several, in the order they run, or leave action out to use the type's default ("+s.DefaultAction+").")
		}
		elems = v.AsValueSlice()
	default:
		elems = []cty.Value{v}
	}
	valid := append(append([]string(nil), s.Actions...), "nothing")
	var out []string
	for _, e := range elems {
		if e.IsNull() || !e.IsKnown() {
			return def, diags // validate: decided with the host
		}
		if e.Type() != cty.String {
			return bad("Wrong type for action", fmt.Sprintf("The action must be a string, or a list of strings run in order, not %s.", e.Type().FriendlyName()))
		}
		a := e.AsString()
		if !s.HasAction(a) {
			return bad("Unsupported action", fmt.Sprintf("The resource type %q has no action %q.%s Its actions are %s.", s.Name, a, words.DidYouMean(a, valid), words.Quoted(valid)))
		}
		out = append(out, a)
	}
	if len(out) > 1 && slices.Contains(out, "nothing") {
		return bad("Action nothing stands alone", `"nothing" means the resource runs only when notified; it cannot be one of several actions. Write action = "nothing", and name the actions to run in the notifies block.`)
	}
	return out, diags
}

// boolean evaluates a bool meta-argument (absent, null or unknown: false).
func (ev *evaluator) boolean(expr hcl.Expression, name string) (bool, hcl.Diagnostics) {
	if expr == nil {
		return false, nil
	}
	v, diags := ev.value(expr)
	if diags.HasErrors() || v.IsNull() || !v.IsKnown() {
		return false, diags
	}
	bv, err := convert.Convert(v, cty.Bool)
	if err != nil {
		rng := expr.Range()
		return false, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Wrong type for " + name,
			Detail:   fmt.Sprintf("%s must be true or false, not %s.", name, v.Type().FriendlyName()),
			Subject:  rng.Ptr(),
		})
	}
	if !bv.IsKnown() || bv.IsNull() {
		return false, diags
	}
	return bv.True(), diags
}

// parallelFor calls f(0) … f(n-1) on every CPU and returns when all are
// done. Small inputs run on the calling goroutine.
func parallelFor(n int, f func(int)) {
	parallel.For(n, min(runtime.GOMAXPROCS(0), n/64+1), f)
}
