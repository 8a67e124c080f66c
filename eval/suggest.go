package eval

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/words"
)

// suggest adds a "Did you mean" to diagnostics about a mistyped node
// attribute, host fact or variable (node.svc.prot, host.hostnme, nod.web):
// it walks each traversal of the failing expression in its evaluation
// context and, at the first name that is not there, names the closest one
// that is. Diagnostics are changed in place.
func suggest(diags hcl.Diagnostics) {
	for _, d := range diags {
		if d.Expression == nil || d.EvalContext == nil || strings.Contains(d.Detail, "Did you mean") {
			continue
		}
		switch d.Summary {
		case "Unsupported attribute", "Unknown variable":
		default:
			continue
		}
		if undeclaredDataRef(d) {
			continue
		}
		for _, tr := range d.Expression.Variables() {
			if hint := traversalHint(tr, d.EvalContext); hint != "" {
				d.Detail = strings.TrimSpace(d.Detail) + hint
				break
			}
		}
	}
}

// traversalHint walks tr and returns " Did you mean "x"?" for its first
// missing name, or "".
func traversalHint(tr hcl.Traversal, ctx *hcl.EvalContext) string {
	if len(tr) == 0 {
		return ""
	}
	root := tr.RootName()
	// A for expression's or a dynamic block's context is a child of the
	// block's: node and host are in its parents.
	var v cty.Value
	ok := false
	seen := map[string]bool{}
	var names []string
	for c := ctx; c != nil && !ok; c = c.Parent() {
		v, ok = c.Variables[root]
		for n := range c.Variables {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	if !ok {
		sort.Strings(names)
		if s := words.Closest(root, names); s != "" {
			return fmt.Sprintf(" Did you mean %s?", s)
		}
		return ""
	}
	path := root
	for _, step := range tr[1:] {
		attr, ok := step.(hcl.TraverseAttr)
		if !ok {
			return "" // an index: the hint would be a guess
		}
		if v == cty.NilVal || v.IsNull() {
			return ""
		}
		ty := v.Type() // an unknown object (validate's host) still has its attribute names
		switch {
		case ty.IsObjectType():
			if ty.HasAttribute(attr.Name) {
				v = v.GetAttr(attr.Name)
				path += "." + attr.Name
				continue
			}
			names := make([]string, 0, len(ty.AttributeTypes()))
			for n := range ty.AttributeTypes() {
				names = append(names, n)
			}
			sort.Strings(names)
			if s := words.Closest(attr.Name, names); s != "" {
				return fmt.Sprintf(" Did you mean %s.%s?", path, s)
			}
			return ""
		case ty.IsMapType() && v.IsKnown():
			key := cty.StringVal(attr.Name)
			if v.HasIndex(key).True() {
				v = v.Index(key)
				path += "." + attr.Name
				continue
			}
			var names []string
			for it := v.ElementIterator(); it.Next(); {
				k, _ := it.Element()
				names = append(names, k.AsString())
			}
			if s := words.Closest(attr.Name, names); s != "" {
				return fmt.Sprintf(" Did you mean %s.%s?", path, s)
			}
			return ""
		default:
			return ""
		}
	}
	return ""
}

// undeclaredDataRef rewords d, hcl's "Unsupported attribute", when it is
// a reference to a data block that is not declared (data.exec.nope): it
// names the data blocks there are. It reports whether it did.
func undeclaredDataRef(d *hcl.Diagnostic) bool {
	if d.Summary != "Unsupported attribute" {
		return false
	}
	data, ok := d.EvalContext.Variables[DataVar]
	if !ok || data == cty.NilVal || !data.Type().IsObjectType() {
		return false
	}
	declared := map[string]*config.DataBlock{}
	for typ, blocks := range data.Type().AttributeTypes() {
		if !blocks.IsObjectType() {
			continue
		}
		for name := range blocks.AttributeTypes() {
			declared[typ+"."+name] = &config.DataBlock{Type: typ, Name: name}
		}
	}
	for _, tr := range d.Expression.Variables() {
		if tr.RootName() != DataVar || len(tr) < 3 {
			continue
		}
		typ, ok1 := tr[1].(hcl.TraverseAttr)
		name, ok2 := tr[2].(hcl.TraverseAttr)
		if !ok1 || !ok2 || declared[typ.Name+"."+name.Name] != nil {
			continue
		}
		u := undeclaredData(typ.Name, name.Name, tr.SourceRange(), declared)
		d.Summary, d.Detail = u.Summary, u.Detail
		r := tr.SourceRange()
		d.Subject = &r
		return true
	}
	return false
}
