package eval

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
)

// Attributes evaluates cfg's attribute blocks in load order and writes
// them, then the policy's writes, then the command line's: the merged node
// attributes with provenance. Expressions see host (cty.DynamicVal, or host.Unknown(), when
// the host must not be read: validate) and the function library, not node.
func Attributes(cfg *config.Config, host cty.Value) (*config.Attributes, hcl.Diagnostics) {
	attrs, diags := compileAttributes(cfg.AttributeBlocks, host)
	for _, w := range cfg.PolicyWrites {
		if config.ValueTooDeep(w.Value) {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Attribute nested too deep",
				Detail:   fmt.Sprintf("The policy attribute %s nests more than %d levels deep.", strings.Join(w.Path, "."), config.MaxNestingDepth),
				Subject:  w.Range.Ptr(),
			})
			continue
		}
		attrs.WritePolicy(w.Level, w.Path, w.Value, w.Range, w.Origin)
	}
	// The command line's values (CommandLineAttributes made them, checked
	// already), at their own level.
	for _, w := range cfg.CommandLine {
		attrs.WriteFrom(w.Level, w.Path, w.Value, w.Range, w.Origin)
		if w.Sensitive {
			attrs.MarkSensitive(w.Level, w.Path)
		}
	}
	return attrs, diags
}

// NewScope writes cfg's attributes with host (see Attributes) and returns
// the scope resource properties, guards and notifications are evaluated
// in, with the attributes it was made from (recorded in plans).
func NewScope(cfg *config.Config, host cty.Value) (*Scope, *config.Attributes, hcl.Diagnostics) {
	attrs, diags := Attributes(cfg, host)
	if host == cty.NilVal {
		host = cty.DynamicVal
	}
	// The data blocks' answers are not known yet: the planner reads them
	// (Scope.WithData); validate, graph and the console never do.
	scope := &Scope{Node: attrs.Node(), Host: host, Data: DataValue(cfg.Data, nil)}
	for _, l := range attrs.Leaves() {
		if l.Sensitive {
			scope.Sensitive = append(scope.Sensitive, l.Path)
		}
	}
	return scope, attrs, diags
}

// Unhosted is cfg's scope written without the host facts (NewScope with
// host unknown: what validate evaluates in, and what the commands write
// first, to stop on a bad attribute before the host is read), for
// WithHost.
type Unhosted struct {
	Scope *Scope
	Attrs *config.Attributes
	Diags hcl.Diagnostics
}

// WithHost is NewScope(cfg, host). When no attribute block of cfg reads
// host, the attributes u wrote without it are the ones host would write,
// and they are not written again (a role's large map of attributes is
// merged through the levels once); otherwise, or without u, they are.
func WithHost(cfg *config.Config, u *Unhosted, host cty.Value) (*Scope, *config.Attributes, hcl.Diagnostics) {
	if u == nil || u.Scope == nil || u.Attrs == nil || attributesReadHost(cfg) {
		return NewScope(cfg, host)
	}
	if host == cty.NilVal {
		host = cty.DynamicVal
	}
	s := *u.Scope
	s.Host = host
	s.Sensitive = slices.Clone(s.Sensitive)
	return &s, u.Attrs, u.Diags
}

// attributesReadHost reports whether an expression of cfg's attribute
// blocks names host. (templatefile sees only the variables it is given.)
func attributesReadHost(cfg *config.Config) bool {
	for _, b := range cfg.AttributeBlocks {
		as, _ := b.Body.JustAttributes()
		for _, a := range as {
			for _, tr := range a.Expr.Variables() {
				if tr.RootName() == "host" {
					return true
				}
			}
		}
	}
	return false
}

func compileAttributes(blocks []*config.AttributeBlock, host cty.Value) (*config.Attributes, hcl.Diagnostics) {
	attrs := config.NewAttributes()
	var diags hcl.Diagnostics
	if host == cty.NilVal {
		host = cty.DynamicVal
	}
	ctxs := map[string]*hcl.EvalContext{}
	for _, b := range blocks {
		ctx := ctxs[b.Dir]
		if ctx == nil {
			ctx = &hcl.EvalContext{
				Variables: map[string]cty.Value{"host": host},
				Functions: Functions(b.Dir),
			}
			ctxs[b.Dir] = ctx
		}
		as, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		list := make([]*hcl.Attribute, 0, len(as))
		for _, a := range as {
			list = append(list, a)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Range.Start.Byte < list[j].Range.Start.Byte })
		for _, a := range list {
			if d := nodeReferences(a.Expr); len(d) > 0 {
				diags = append(diags, d...)
				continue
			}
			if d := refuseLazy(a.Expr, "a node attribute", "node attributes are written when the recipes are compiled, before anything is planned"); d.HasErrors() {
				diags = append(diags, d...)
				continue
			}
			v, d := a.Expr.Value(ctx)
			suggest(d)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			v, marked := unmarkSensitive(v)
			path := []string{b.Name, a.Name}
			attrs.Write(b.Level, path, v, a.Range)
			for _, p := range marked {
				if sub, ok := attributePath(p); ok {
					attrs.MarkSensitive(b.Level, append(append([]string(nil), path...), sub...))
				}
			}
		}
	}
	return attrs, diags
}

// nodeReferences reports every reference to node in an attribute block.
func nodeReferences(expr hcl.Expression) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		if tr.RootName() != "node" {
			continue
		}
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Node attributes cannot be read here",
			Detail: "Attribute blocks are written at compile time, and node attributes are read at plan time, once every recipe has written them. " +
				"Set a literal value or one computed from host.… here, and read node.… in resource properties and guards instead.",
			Subject: tr.SourceRange().Ptr(),
		})
	}
	return diags
}

// unmarkSensitive strips every mark from v and returns the paths within v
// that were marked sensitive.
func unmarkSensitive(v cty.Value) (cty.Value, []cty.Path) {
	if !v.ContainsMarked() {
		return v, nil
	}
	out, pms := v.UnmarkDeepWithPaths()
	var paths []cty.Path
	for _, pm := range pms {
		if _, ok := pm.Marks[SensitiveMark]; ok {
			paths = append(paths, pm.Path)
		}
	}
	return out, paths
}

// attributePath turns a cty path into attribute keys; ok is false for a
// path through a list or set (a sensitive element marks the whole list,
// which is a leaf).
func attributePath(p cty.Path) ([]string, bool) {
	var out []string
	for _, step := range p {
		switch s := step.(type) {
		case cty.GetAttrStep:
			out = append(out, s.Name)
		case cty.IndexStep:
			if s.Key.Type() != cty.String {
				return out, true // inside a list: the list is the leaf
			}
			out = append(out, s.Key.AsString())
		default:
			return out, true
		}
	}
	return out, true
}
