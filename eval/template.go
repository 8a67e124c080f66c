package eval

import (
	"fmt"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/resources"
)

// renderTemplate renders the template of a Templated resource into its
// content property. attrs are the block's attributes by name; values holds
// the decoded properties (variables and source among them). The inline
// template (content_template) is evaluated here, with the variables in
// scope, rather than in the generic property loop. Template files that
// fail are recorded in ev.templates so that diagnostics can show their
// snippets.
//
// When the variables, or the inline template, are lazy(…), the content is
// known only at apply: it is recorded in lazies as the template's text (the
// file's, or the inline expression's) to render then, with what it reads.
func renderTemplate(b *config.ResourceBlock, tt resources.Templated, action string, attrs map[string]*hcl.Attribute, values map[string]cty.Value, errored map[string]bool, lazies map[string]*lazy.Expr, ev *evaluator, source func(hcl.Range) string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	props := tt.TemplateProperties()
	addr := b.Address()
	if a := attrs[props.Content]; a != nil {
		delete(values, props.Content)
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "A template's content is rendered",
			Detail:   fmt.Sprintf("%s renders its %s from %s or %s; it cannot be set. Use a file resource to give the content directly, or move the text into %s.", addr, props.Content, props.Source, props.Inline, props.Inline),
			Subject:  a.NameRange.Ptr(),
		})
	}
	src, inline := attrs[props.Source], attrs[props.Inline]
	switch {
	case src != nil && inline != nil:
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Two templates given",
			Detail:   fmt.Sprintf("%s sets both %s and %s. Give one: a template file, or an inline template.", addr, props.Source, props.Inline),
			Subject:  inline.NameRange.Ptr(),
		})
	case src == nil && inline == nil:
		if action == "create" || action == "create_if_missing" {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing template",
				Detail:   fmt.Sprintf("%s needs a template to render: set %s (a template file) or %s (an inline template).", addr, props.Source, props.Inline),
				Subject:  b.DeclRange.Ptr(),
			})
		}
		return diags
	}
	if errored[props.Variables] || errored[props.Inline] || (src != nil && errored[props.Source]) {
		return diags // already reported
	}
	var inlineExpr hcl.Expression
	inlineLazy := false
	if inline != nil {
		inlineExpr = inline.Expr
		if call := lazyCall(ev.nativeOf(inline.Expr, source)); call != nil {
			inner, d := lazyInner(call)
			if d.HasErrors() {
				return append(diags, d...)
			}
			inlineExpr, inlineLazy = inner, true
		}
	}
	if lazies[props.Variables] != nil || inlineLazy {
		return append(diags, lazyTemplate(b, props, src, inlineExpr, attrs, values, lazies, ev, source)...)
	}

	// The variables, then node and host, then the functions.
	vars := map[string]cty.Value{}
	if v, ok := values[props.Variables]; ok && v != cty.NilVal && !v.IsNull() {
		if !v.IsWhollyKnown() {
			values[props.Content] = cty.UnknownVal(cty.String)
			return diags
		}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			if !hclsyntax.ValidIdentifier(k.AsString()) {
				rng := attrs[props.Variables].Expr.Range()
				return diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid template variable name",
					Detail:   fmt.Sprintf("The template variable %q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", k.AsString()),
					Subject:  rng.Ptr(),
				})
			}
			vars[k.AsString()] = ev
		}
	}

	var val cty.Value
	var rng hcl.Range
	if inline != nil {
		child := ev.ctx.NewChild()
		child.Variables = vars
		if ev.scope.ReadsSensitive(inlineExpr) {
			ev.templateReadSensitive = true
		}
		v, d := inlineExpr.Value(child)
		for _, x := range d {
			x.Expression, x.EvalContext = nil, nil
		}
		diags = append(diags, d...)
		if d.HasErrors() {
			return diags
		}
		val, rng = v, inline.Expr.Range()
	} else {
		sv := values[props.Source]
		if sv == cty.NilVal || sv.IsNull() {
			return diags
		}
		if !sv.IsKnown() {
			values[props.Content] = cty.UnknownVal(cty.String)
			return diags
		}
		rng = src.Expr.Range()
		v, d := renderFile(addr, b.Dir, sv.AsString(), vars, ev, rng)
		diags = append(diags, d...)
		if d.HasErrors() {
			return diags
		}
		val = v
	}
	if val.ContainsMarked() {
		// sensitive() inside the template: the content is sensitive.
		val, _ = val.UnmarkDeep()
		ev.templateReadSensitive = true
	}
	if !val.IsWhollyKnown() {
		values[props.Content] = cty.UnknownVal(cty.String)
		return diags
	}
	if val.IsNull() {
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Template rendered to null",
			Detail:   fmt.Sprintf("The template of %s rendered to null; a template must render text.", addr),
			Subject:  rng.Ptr(),
		})
	}
	s, err := convert.Convert(val, cty.String)
	if err != nil {
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Template did not render text",
			Detail:   fmt.Sprintf("The template of %s rendered %s, not text: %s. A template that is a single ${…} gives that value as it is; write text around it, or convert it with tostring or jsonencode.", addr, val.Type().FriendlyName(), err),
			Subject:  rng.Ptr(),
		})
	}
	values[props.Content] = s
	return diags
}

// renderFile reads, parses and evaluates the template file name (named
// as paths.go says, for a recipe of recipeDir) with vars, node and host.
// Problems inside the file are diagnostics pointing into it; a file that
// cannot be read is one on rng (the source attribute).
func renderFile(addr, recipeDir, name string, vars map[string]cty.Value, ev *evaluator, rng hcl.Range) (cty.Value, hcl.Diagnostics) {
	rd := newHostReader(recipeDir)
	src, full, err := rd.readTemplate(recipeDir, name)
	if err != nil {
		return cty.NilVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read the template",
			Detail:   fmt.Sprintf("The template of %s could not be read: %s. Templates are looked up in %s.", addr, err, rd.root.templatesDir()),
			Subject:  rng.Ptr(),
		}}
	}
	call := fmt.Sprintf(" The template was rendered for %s (%s:%d).", addr, rng.Filename, rng.Start.Line)
	fail := func(d hcl.Diagnostics) (cty.Value, hcl.Diagnostics) {
		ev.templates = append(ev.templates, &TemplateError{Filename: full, Src: src, Diags: d})
		out := make(hcl.Diagnostics, 0, len(d))
		for _, x := range d {
			c := *x
			if c.Severity == hcl.DiagError {
				c.Detail += call
			}
			c.Expression, c.EvalContext = nil, nil
			out = append(out, &c)
		}
		return cty.NilVal, out
	}
	if d := config.CheckSource(src, full, true); d != nil {
		return fail(hcl.Diagnostics{d})
	}
	expr, d := hclsyntax.ParseTemplate(src, full, hcl.Pos{Line: 1, Column: 1, Byte: 0})
	if d.HasErrors() {
		return fail(d)
	}
	if ev.scope.ReadsSensitive(expr) {
		ev.templateReadSensitive = true
	}
	scope := make(map[string]cty.Value, len(vars)+2)
	for k, v := range vars {
		scope[k] = v
	}
	for _, k := range []string{"node", "host"} {
		if v, ok := ev.ctx.Variables[k]; ok {
			scope[k] = v
		}
	}
	v, d := expr.Value(&hcl.EvalContext{Variables: scope, Functions: baseFunctionsWith(filepath.Dir(full), rd)})
	if d.HasErrors() {
		return fail(d)
	}
	return v, d
}

// lazyTemplate records the content of a template whose variables or inline
// template are known only at apply: the inline template's expression, or
// the template file's text (read now, so that apply renders the text that
// was reviewed), rendered at apply with the variables.
func lazyTemplate(b *config.ResourceBlock, props resources.TemplateProps, src *hcl.Attribute, inlineExpr hcl.Expression, attrs map[string]*hcl.Attribute, values map[string]cty.Value, lazies map[string]*lazy.Expr, ev *evaluator, source func(hcl.Range) string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	values[props.Content] = cty.UnknownVal(cty.String)
	var e *lazy.Expr
	if inlineExpr != nil {
		if ev.scope.ReadsSensitive(inlineExpr) || callsSensitive(inlineExpr) || ev.readsMarkedEach(inlineExpr) {
			ev.templateReadSensitive = true
		}
		var d hcl.Diagnostics
		e, d = ev.lazyExpr(inlineExpr, b.Dir, source)
		if d.HasErrors() {
			return d
		}
		e.Template = lazy.TemplateInline
	} else {
		sv := values[props.Source]
		if sv == cty.NilVal || sv.IsNull() || !sv.IsKnown() {
			return diags
		}
		rng := src.Expr.Range()
		rd := newHostReader(b.Dir)
		text, full, err := rd.readTemplate(b.Dir, sv.AsString())
		if err != nil {
			return diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read the template",
				Detail:   fmt.Sprintf("The template of %s could not be read: %s. Templates are looked up in %s.", b.Address(), err, rd.root.templatesDir()),
				Subject:  rng.Ptr(),
			})
		}
		start := hcl.Pos{Line: 1, Column: 1, Byte: 0}
		fail := func(d hcl.Diagnostics) hcl.Diagnostics {
			ev.templates = append(ev.templates, &TemplateError{Filename: full, Src: text, Diags: d})
			return d
		}
		if d := config.CheckSource(text, full, true); d != nil {
			return fail(hcl.Diagnostics{d})
		}
		expr, d := hclsyntax.ParseTemplate(text, full, start)
		if d.HasErrors() {
			return fail(d)
		}
		if ev.scope.ReadsSensitive(expr) || callsSensitive(expr) {
			ev.templateReadSensitive = true
		}
		e = &lazy.Expr{Source: string(text), Range: hcl.Range{Filename: full, Start: start, End: start}, Template: lazy.TemplateFile}
		e.Scope = ev.capture(expr, filepath.Dir(full), rd)
	}
	if attrs[props.Variables] != nil {
		e.Variables = props.Variables
	}
	lazies[props.Content] = e
	return diags
}
