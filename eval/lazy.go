package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/internal/typedvalue"
)

// This file reads lazy(EXPR): a property value, or a guard, known only at
// apply (design §14). The expression is not evaluated with the others:
// eval keeps its source text, with what it reads that is fixed at plan
// time (lazy.Scope), and the planner decides whether it can be evaluated
// at plan or must wait until right before its resource converges; Resolver
// evaluates it then.

// lazyFunc is lazy() where it does not belong: anywhere but the whole
// value of a resource property, only_if or not_if (there, eval reads the
// call itself and never evaluates it).
var lazyFunc = function.New(&function.Spec{
	Description: "Marks a value known only at apply; it must be the whole value of a resource property, only_if or not_if.",
	VarParam: &function.Parameter{
		Name: "expression", Type: cty.DynamicPseudoType,
		AllowUnknown: true, AllowNull: true, AllowMarked: true, AllowDynamicType: true,
	},
	Type: func([]cty.Value) (cty.Type, error) {
		return cty.NilType, errors.New(lazyPlacement)
	},
	Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
		return cty.NilVal, errors.New(lazyPlacement)
	},
})

const lazyPlacement = "lazy(…) marks a value known only at apply, and must be the whole value of a resource property, only_if or not_if: content = lazy(file(\"/srv/keys/api.key\"))"

// lazyCall returns the lazy(…) call that is the whole of expr (inside
// parentheses, or a "${…}" template of nothing else), or nil.
func lazyCall(expr hcl.Expression) *hclsyntax.FunctionCallExpr {
	for {
		switch e := expr.(type) {
		case *hclsyntax.ParenthesesExpr:
			expr = e.Expression
		case *hclsyntax.TemplateWrapExpr:
			expr = e.Wrapped
		case *hclsyntax.FunctionCallExpr:
			if e.Name == lazy.FuncName {
				return e
			}
			return nil
		default:
			return nil
		}
	}
}

// lazyInner checks a lazy(…) call (one argument, no lazy inside it) and
// returns its argument.
func lazyInner(call *hclsyntax.FunctionCallExpr) (hcl.Expression, hcl.Diagnostics) {
	rng := call.Range()
	bad := func(summary, detail string, subject hcl.Range) (hcl.Expression, hcl.Diagnostics) {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: subject.Ptr()}}
	}
	switch {
	case len(call.Args) != 1:
		return bad("Wrong number of arguments to lazy",
			fmt.Sprintf("lazy takes one argument, the expression to evaluate at apply, not %d: content = lazy(file(\"/srv/keys/api.key\")).", len(call.Args)), rng)
	case call.ExpandFinal:
		return bad("Invalid argument to lazy", "lazy takes one expression, not a list expanded with \"...\".", rng)
	}
	if inner := lazy.FindCalls(call.Args[0], lazy.FuncName); len(inner) > 0 {
		return bad("lazy inside lazy",
			"A value known at apply is evaluated once, right before its resource converges: lazy(…) inside lazy(…) means nothing more. Remove the inner lazy.", inner[0].Range())
	}
	return call.Args[0], nil
}

// misplacedLazy reports every lazy(…) inside expr, which is not a lazy
// call itself: lazy must be a whole value.
func misplacedLazy(expr hcl.Expression, what string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, c := range lazy.FindCalls(expr, lazy.FuncName) {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "lazy must be the whole value",
			Detail:   fmt.Sprintf("lazy(…) appears inside the value of %s. A value known only at apply is a whole value: write %s = lazy(EXPR), with the whole expression inside.", what, what),
			Subject:  c.Range().Ptr(),
		})
	}
	return diags
}

// refuseLazy reports lazy(…) on a meta-argument that must be known at
// plan (action, guard_interpreter, notifications…), or inside one.
func refuseLazy(expr hcl.Expression, what, why string) hcl.Diagnostics {
	if expr == nil {
		return nil
	}
	calls := lazy.FindCalls(expr, lazy.FuncName)
	if len(calls) == 0 {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "lazy is not allowed on " + what,
		Detail:   fmt.Sprintf("%s must be known when the plan is made: %s. lazy(…) is for resource properties (other than those that name the resource), only_if and not_if.", what, why),
		Subject:  calls[0].Range().Ptr(),
	}}
}

// callsSensitive reports whether expr calls sensitive().
func callsSensitive(expr hcl.Expression) bool {
	return len(lazy.FindCalls(expr, "sensitive")) > 0
}

// lazyExpr records inner (the argument of a lazy call, or a template's
// text) with what it reads that is fixed now. source returns recipe text.
func (ev *evaluator) lazyExpr(inner hcl.Expression, dir string, source func(hcl.Range) string) (*lazy.Expr, hcl.Diagnostics) {
	rng := inner.Range()
	text := ev.jsonText(rng)
	if text == "" {
		text = sourceOf(source, rng)
	}
	if text == "" {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read the expression of lazy",
			Detail:   "toque could not read the source text of this lazy(…) expression, which the plan must carry. This is a bug in toque.",
			Subject:  rng.Ptr(),
		}}
	}
	if ev.scope != nil && len(ev.scope.SensitiveData) > 0 {
		for _, tr := range inner.Variables() {
			if tr.RootName() == DataVar && ev.scope.readsSensitiveData(tr) {
				return nil, hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "lazy reads a sensitive data block",
					Detail:   "A value known at apply is evaluated from what the plan carries, and the plan does not carry a sensitive data block's answer (only its digest). Read it outside lazy(…).",
					Subject:  tr.SourceRange().Ptr(),
				}}
			}
		}
	}
	e := &lazy.Expr{Source: text, Range: rng}
	e.Scope = ev.capture(inner, dir, nil)
	return e, nil
}

// sourceOf is the recipe text of rng: from source when it knows it, else
// from the file.
func sourceOf(source func(hcl.Range) string, rng hcl.Range) string {
	if source != nil {
		if s := source(rng); s != "" {
			return s
		}
	}
	b, err := os.ReadFile(rng.Filename)
	if err != nil || rng.End.Byte > len(b) || rng.Start.Byte > rng.End.Byte {
		return ""
	}
	return string(rng.SliceBytes(b))
}

// capture records what expr reads that is fixed at plan time: the parts
// of node and host it reads, the environment variables env() reads and
// the recipe files and listings the file functions read (templatefile's
// template included, and what it reads by literal paths), through rd (nil:
// the recipes of dir). Without the host (validate), nothing is captured:
// no plan is made.
func (ev *evaluator) capture(expr hcl.Expression, dir string, rd *reader) lazy.Scope {
	sc := lazy.Scope{Dir: dir}
	if ev.scope == nil || ev.scope.Host == cty.NilVal || !ev.scope.Host.IsWhollyKnown() {
		return sc
	}
	if v, ok := subtree(ev.scope.Node, rootPaths(expr, "node")); ok {
		sc.Node = &typedvalue.Value{Value: v}
	}
	if v, ok := subtree(ev.scope.Host, rootPaths(expr, "host")); ok {
		sc.Host = &typedvalue.Value{Value: v}
	}
	if ev.scope.Data != cty.NilVal {
		if v, ok := subtree(ev.scope.Data, rootPaths(expr, DataVar)); ok {
			v, _ = v.UnmarkDeep()
			if v.IsWhollyKnown() {
				sc.Data = &typedvalue.Value{Value: v}
			}
		}
	}
	// An instance's each and count, whole: they are small, and name it.
	for _, tr := range lazy.Traversals(expr) {
		var dst **typedvalue.Value
		switch tr.RootName() {
		case EachVar:
			dst = &sc.Each
		case CountVar:
			dst = &sc.Count
		default:
			continue
		}
		if v, ok := ev.ctx.Variables[tr.RootName()]; ok && *dst == nil {
			v, _ = v.UnmarkDeep()
			if v.IsWhollyKnown() {
				*dst = &typedvalue.Value{Value: v}
			}
		}
	}
	plain := unmarkingContext(ev.ctx)
	for _, c := range lazy.FindCalls(expr, "env") {
		if len(c.Args) == 0 {
			continue
		}
		if name, ok := knownString(c.Args[0], plain); ok {
			if sc.Env == nil {
				sc.Env = map[string]*string{}
			}
			if v, set := os.LookupEnv(name); set {
				sc.Env[name] = &v
			} else {
				sc.Env[name] = nil
			}
		}
	}
	if rd == nil {
		rd = newHostReader(dir)
	}
	sc.TemplateDir = rd.templatesDirOf(dir)
	captureFiles(&sc, rd, expr, dir, plain, 0)
	return sc
}

// knownString evaluates expr to a known string, or says it cannot.
func knownString(expr hcl.Expression, ctx *hcl.EvalContext) (string, bool) {
	v, d := expr.Value(ctx)
	if d.HasErrors() || v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() {
		return "", false
	}
	v, _ = v.UnmarkDeep()
	if v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// subtree is the part of root (node or host) that paths below it select
// (rootPaths): an object holding each subtree read, whole when a path is
// empty (root itself is read). ok is false when there is no path.
func subtree(root cty.Value, paths [][]string) (cty.Value, bool) {
	if len(paths) == 0 || root == cty.NilVal {
		return cty.NilVal, false
	}
	tree := &pick{}
	for _, p := range paths {
		tree.add(p)
	}
	return tree.from(root), true
}

// pick is a set of paths below a value, as a tree; a leaf takes the whole
// value there.
type pick struct {
	whole    bool
	children map[string]*pick
}

func (t *pick) add(path []string) {
	if t.whole {
		return
	}
	if len(path) == 0 {
		t.whole, t.children = true, nil
		return
	}
	if t.children == nil {
		t.children = map[string]*pick{}
	}
	c := t.children[path[0]]
	if c == nil {
		c = &pick{}
		t.children[path[0]] = c
	}
	c.add(path[1:])
}

// from is the part of v t selects: an object of the selected attributes
// (of an object or a map) that v has; a key v lacks is left out, so that
// evaluating the expression at apply fails as it would now.
func (t *pick) from(v cty.Value) cty.Value {
	if t.whole || v.IsNull() || !v.IsKnown() {
		return v
	}
	ty := v.Type()
	if !ty.IsObjectType() && !ty.IsMapType() {
		return v
	}
	keys := make([]string, 0, len(t.children))
	for k := range t.children {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]cty.Value{}
	for _, k := range keys {
		var e cty.Value
		switch {
		case ty.IsObjectType() && ty.HasAttribute(k):
			e = v.GetAttr(k)
		case ty.IsMapType() && v.HasIndex(cty.StringVal(k)).True():
			e = v.Index(cty.StringVal(k))
		default:
			continue
		}
		out[k] = t.children[k].from(e)
	}
	return cty.ObjectVal(out)
}

// LazyError is a value known at apply that failed to evaluate, pointing at
// its expression.
type LazyError struct {
	// Property is the property it is the value of ("" for a guard).
	Property string
	Range    hcl.Range
	Diags    hcl.Diagnostics
	Err      error
}

func (e *LazyError) Error() string {
	return e.message(false)
}

// Redacted is the error without what the evaluation said beyond its
// summaries (a detail may quote the values it read), for a sensitive
// value: it still names the property and points at the expression.
func (e *LazyError) Redacted() error {
	return errors.New(e.message(true))
}

func (e *LazyError) message(redact bool) string {
	where := fmt.Sprintf("%s:%d:%d", e.Range.Filename, e.Range.Start.Line, e.Range.Start.Column)
	what := "lazy(…)"
	if e.Property != "" {
		what = e.Property + " = lazy(…)"
	}
	var msgs []string
	for _, d := range e.Diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		m := d.Summary
		if d.Detail != "" && !redact {
			m += ": " + strings.TrimSuffix(d.Detail, ".")
		}
		if d.Subject != nil && (d.Subject.Start.Line != e.Range.Start.Line || d.Subject.Start.Column != e.Range.Start.Column || d.Subject.Filename != e.Range.Filename) {
			m = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, m)
		}
		msgs = append(msgs, m)
	}
	if e.Err != nil && !redact {
		msgs = append(msgs, e.Err.Error())
	}
	if redact {
		msgs = append(msgs, "(the rest is hidden: the value is sensitive)")
	}
	return fmt.Sprintf("%s: %s could not be evaluated: %s", where, what, strings.Join(msgs, "; "))
}

// guardExpr reads only_if or not_if: for lazy(GUARD), a run-time guard,
// it returns GUARD and true; otherwise the expression as it is, refusing a
// lazy(…) inside it.
func guardExpr(expr hcl.Expression, kind string) (hcl.Expression, bool, hcl.Diagnostics) {
	if expr == nil {
		return nil, false, nil
	}
	call := lazyCall(expr)
	if call == nil {
		return expr, false, misplacedLazy(expr, kind)
	}
	inner, d := lazyInner(call)
	if d.HasErrors() {
		return nil, false, d
	}
	return inner, true, nil
}

// jsonString is a string of HCL's JSON syntax that nativeOf parsed as the
// template it is: its text (unescaped) starts at byte base of filename.
type jsonString struct {
	filename string
	base     int
	text     []byte
}

// nativeOf is expr in native syntax when it is a string of HCL's JSON
// syntax holding lazy(…) ("content": "${lazy(file(\"/k\"))}"): a JSON
// string is a template, parsed here at the string's place (lines and
// columns are the string's, as hcl's own JSON reading gives them), so that
// lazy reads alike in both syntaxes. Anything else is returned as it is.
func (ev *evaluator) nativeOf(expr hcl.Expression, source func(hcl.Range) string) hcl.Expression {
	if expr == nil {
		return nil
	}
	if _, native := expr.(hclsyntax.Expression); native {
		return expr
	}
	rng := expr.Range()
	raw := sourceOf(source, rng)
	if !strings.HasPrefix(raw, `"`) || !strings.Contains(raw, lazyName) {
		return expr
	}
	var text string
	if err := json.Unmarshal([]byte(raw), &text); err != nil {
		return expr
	}
	start := hcl.Pos{Line: rng.Start.Line, Column: rng.Start.Column + 1, Byte: rng.Start.Byte + 1}
	t, diags := hclsyntax.ParseTemplate([]byte(text), rng.Filename, start)
	if diags.HasErrors() || len(lazy.FindCalls(t, lazyName)) == 0 {
		return expr
	}
	ev.jsonStrings = append(ev.jsonStrings, jsonString{filename: rng.Filename, base: start.Byte, text: []byte(text)})
	return t
}

// jsonText is the text of rng inside a JSON string nativeOf parsed, "" when
// rng is not inside one.
func (ev *evaluator) jsonText(rng hcl.Range) string {
	for _, js := range ev.jsonStrings {
		lo, hi := rng.Start.Byte-js.base, rng.End.Byte-js.base
		if rng.Filename == js.filename && lo >= 0 && lo <= hi && hi <= len(js.text) {
			return string(js.text[lo:hi])
		}
	}
	return ""
}
