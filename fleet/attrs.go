package fleet

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// attrLayer renders an inventory's attributes = { … } as an attribute file
// (the HCL of -attr-file) whose every value stands on the line of the
// inventory it was written on: toque on the host then records each leaf's
// provenance as that line. Values are evaluated here (file() reads the
// machine toque fleet runs on, relative to the inventory), so the host
// gets literals; values marked with sensitive() are written
// sensitive(…), and stay hidden in every output of the host's toque.
//
// A map written as syntax is walked key by key; anything else (a function
// call that returns a map) is evaluated whole, on its line. Two keys the
// inventory wrote on one line stay on one line inside a map; at the top
// level, where an attribute file needs a line each, the second one moves
// to the next line.
func attrLayer(a *hcl.Attribute, ctx *hcl.EvalContext) ([]byte, hcl.Diagnostics) {
	w := &lineWriter{line: 1}
	var diags hcl.Diagnostics
	bad := func(rng hcl.Range, detail string) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid attributes", Detail: detail, Subject: rng.Ptr()})
	}
	type item struct {
		key  string
		line int
		expr hcl.Expression
		val  cty.Value // when expr is nil
	}
	var items []item
	if pairs, ok := objectSyntax(a.Expr); ok {
		for _, p := range pairs {
			k, ok := evalKey(p.Key, ctx, &diags)
			if !ok {
				continue
			}
			items = append(items, item{key: k, line: p.Key.Range().Start.Line, expr: p.Value})
		}
	} else {
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return nil, diags
		}
		uv, _ := v.Unmark()
		if uv.IsNull() || !(uv.Type().IsObjectType() || uv.Type().IsMapType()) {
			bad(a.Expr.Range(), "attributes is a map of node attributes, as attributes = { nginx = { port = 8080 } }.")
			return nil, diags
		}
		line := a.Expr.Range().Start.Line
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			items = append(items, item{key: k.AsString(), line: line, val: ev})
		}
	}
	seen := map[string]bool{}
	for _, it := range items {
		if !hclsyntax.ValidIdentifier(it.key) {
			bad(a.Expr.Range(), fmt.Sprintf("The top-level keys of attributes name node attributes (node.%s), so each must be an identifier: letters, digits, '_' and '-'.", it.key))
			continue
		}
		if seen[it.key] {
			bad(a.Expr.Range(), fmt.Sprintf("attributes gives %q twice.", it.key))
			continue
		}
		seen[it.key] = true
		w.newItem(it.line, true)
		w.write(it.key + " = ")
		if it.expr != nil {
			w.value(it.expr, ctx, &diags)
		} else {
			w.write(valueText(it.val))
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	w.write("\n")
	return w.b.Bytes(), diags
}

// lineWriter writes text at given lines, never going back.
type lineWriter struct {
	b     bytes.Buffer
	line  int  // the line being written, from 1
	dirty bool // something is written on it
}

func (w *lineWriter) write(s string) {
	w.b.WriteString(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		w.line += strings.Count(s, "\n")
		w.dirty = i < len(s)-1
	} else if s != "" {
		w.dirty = true
	}
}

// newItem moves to line for the next item; own says the item needs a line
// of its own (a top-level attribute). Within a map, an item on the line of
// the one before follows it after a comma.
func (w *lineWriter) newItem(line int, own bool) {
	switch {
	case line > w.line:
		w.write(strings.Repeat("\n", line-w.line))
	case own && w.dirty:
		w.write("\n")
	case w.dirty && !own:
		w.write(", ")
	}
}

// value writes expr: a map written as syntax key by key, anything else
// evaluated.
func (w *lineWriter) value(expr hcl.Expression, ctx *hcl.EvalContext, diags *hcl.Diagnostics) {
	pairs, ok := objectSyntax(expr)
	if !ok {
		v, d := expr.Value(ctx)
		*diags = append(*diags, d...)
		if !d.HasErrors() {
			w.write(valueText(v))
		}
		return
	}
	if len(pairs) == 0 {
		w.write("{}")
		return
	}
	w.write("{")
	first := true
	for _, p := range pairs {
		k, ok := evalKey(p.Key, ctx, diags)
		if !ok {
			continue
		}
		line := p.Key.Range().Start.Line
		switch {
		case line > w.line:
			w.write(strings.Repeat("\n", line-w.line))
		case first:
			w.write(" ")
		default:
			w.write(", ")
		}
		first = false
		w.write(quoted(k) + " = ")
		w.value(p.Value, ctx, diags)
	}
	w.write(" }")
}

// objectSyntax returns the items of a map written as syntax: an HCL
// object constructor, or a JSON object.
func objectSyntax(expr hcl.Expression) ([]hcl.KeyValuePair, bool) {
	_, native := expr.(hclsyntax.Expression)
	if _, obj := expr.(*hclsyntax.ObjectConsExpr); native && !obj {
		return nil, false
	}
	pairs, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		return nil, false
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		return pairs[i].Key.Range().Start.Byte < pairs[j].Key.Range().Start.Byte
	})
	return pairs, true
}

// evalKey evaluates a map key: a bare word is itself, anything else must
// give a string.
func evalKey(e hcl.Expression, ctx *hcl.EvalContext, diags *hcl.Diagnostics) (string, bool) {
	if name := hcl.ExprAsKeyword(e); name != "" {
		return name, true
	}
	v, d := e.Value(ctx)
	*diags = append(*diags, d...)
	if d.HasErrors() {
		return "", false
	}
	if v.IsMarked() || v.IsNull() || v.Type() != cty.String {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid attribute key", Detail: "The keys of attributes are strings.", Subject: e.Range().Ptr()})
		return "", false
	}
	return v.AsString(), true
}

// quoted is s as an HCL quoted string.
func quoted(s string) string {
	return string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes())
}

// valueText is v as HCL literal syntax on one line (so that every leaf of
// a map computed by a function keeps the inventory's line), with
// sensitive(…) around what is marked sensitive: a whole list when
// anything in it is.
func valueText(v cty.Value) string {
	if v.IsMarked() {
		uv, _ := v.UnmarkDeep()
		return "sensitive(" + valueText(uv) + ")"
	}
	if !v.IsNull() && (v.Type().IsObjectType() || v.Type().IsMapType()) {
		if v.LengthInt() == 0 {
			return "{}"
		}
		var parts []string
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			parts = append(parts, quoted(k.AsString())+" = "+valueText(ev))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	if v.ContainsMarked() {
		uv, _ := v.UnmarkDeep()
		return "sensitive(" + valueText(uv) + ")"
	}
	return strings.ReplaceAll(string(hclwrite.TokensForValue(v).Bytes()), "\n", " ")
}
