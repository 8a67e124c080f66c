package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/diag"
)

// Console evaluates expressions as a resource property of the recipes
// would see them (toque console): node with the merged attributes, host
// with the facts it was given, every function, and provenance(). It
// evaluates no resource, so it runs no guard and reads no resource's
// state. Sensitive attributes (written with sensitive(), or read by a
// sensitive resource, as the plan hides them) are marked in node: what is
// computed from them is marked too, and shown as sensitive.
type Console struct {
	cfg   *config.Config
	attrs *config.Attributes
	ctx   *hcl.EvalContext
	// hidden lists the paths below node whose values are hidden.
	hidden [][]string
}

// NewConsole writes cfg's attributes (with the command line's) with host
// and makes the console's scope.
func NewConsole(cfg *config.Config, host cty.Value) (*Console, hcl.Diagnostics) {
	scope, attrs, diags := NewScope(cfg, host)
	c := &Console{cfg: cfg, attrs: attrs}
	readBySensitive := &Scope{}
	plain := unmarkingContext(scope.EvalContext(cfg.Dir))
	for _, b := range cfg.Resources {
		if b.Meta.Sensitive == nil {
			continue
		}
		v, d := b.Meta.Sensitive.Value(plain)
		if d.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.Bool || v.True() {
			readBySensitive.Sensitive = append(readBySensitive.Sensitive, NodePathsRead(b)...)
		}
	}
	node := scope.Node
	for _, l := range attrs.Leaves() {
		if l.Sensitive || readBySensitive.Covers(l.Path) {
			c.hidden = append(c.hidden, l.Path)
		}
	}
	if len(c.hidden) > 0 {
		node, _ = cty.Transform(node, func(p cty.Path, v cty.Value) (cty.Value, error) {
			if keys, ok := attributePath(p); ok && len(keys) == len(p) && slices.ContainsFunc(c.hidden, func(h []string) bool { return slices.Equal(h, keys) }) {
				return v.Mark(SensitiveMark), nil
			}
			return v, nil
		})
	}
	ctx := scope.EvalContext(cfg.Dir)
	ctx.Variables["node"] = node
	ctx.Functions["provenance"] = c.provenanceFunc()
	c.ctx = ctx
	return c, diags
}

// Eval evaluates expr. The result is marked where it holds or was computed
// from a sensitive value; diagnostics about such an expression never show
// the values it referred to.
func (c *Console) Eval(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	provenanceArgs(expr)
	v, diags := expr.Value(c.ctx)
	suggest(diags)
	for _, d := range diags {
		if d.Expression != nil && c.readsHidden(d.Expression) {
			diag.MarkSensitive(hcl.Diagnostics{d})
		}
	}
	return v, diags
}

func (c *Console) readsHidden(expr hcl.Expression) bool {
	return (&Scope{Sensitive: c.hidden}).ReadsSensitive(expr)
}

// ParsePath parses what :source is given, node.web.port or web.port, into
// a path below node.
func ParsePath(s string) ([]string, error) {
	keys, err := attrPath(s)
	if err != nil {
		return nil, err
	}
	if keys[0] == "node" {
		keys = keys[1:]
	}
	return keys, nil
}

// AttributeSource is one leaf of the merged attributes with what every
// level says about it.
type AttributeSource struct {
	// Leaf is the value that won.
	Leaf SourcedLeaf
	// Writes are every level's write of the path, lowest precedence first
	// (config.Attributes.Writes).
	Writes []SourcedLeaf
	// Hidden is set when the value is kept out of output: written with
	// sensitive(), or read by a sensitive resource.
	Hidden bool
}

// SourcedLeaf is a leaf with where it was written, worded (Leaf.Source).
type SourcedLeaf struct {
	config.Leaf
	Source string
}

// Sources lists the leaves at path or below it (the empty path: every
// leaf), sorted by path, with their writes. None means nothing is written
// there.
func (c *Console) Sources(path []string) []AttributeSource {
	writes := c.attrs.Writes(path)
	var out []AttributeSource
	for _, l := range c.attrs.Leaves() {
		if len(l.Path) < len(path) || !slices.Equal(l.Path[:len(path)], path) {
			continue
		}
		s := AttributeSource{Leaf: c.sourced(l), Hidden: c.isHidden(l.Path)}
		for _, w := range writes {
			if slices.Equal(w.Path, l.Path) {
				s.Writes = append(s.Writes, c.sourced(w))
			}
		}
		out = append(out, s)
	}
	return out
}

func (c *Console) isHidden(path []string) bool {
	return slices.ContainsFunc(c.hidden, func(h []string) bool { return slices.Equal(h, path) })
}

func (c *Console) sourced(l config.Leaf) SourcedLeaf {
	return SourcedLeaf{Leaf: l, Source: l.Source(c.cfg.DisplayPath)}
}

// provenanceFunc is provenance(node.web.port): where the value at a path
// was written, as {level, source}; for a map, an object of those by the
// dotted paths of its leaves. It is given the path, not the value:
// provenanceArgs turns provenance(node.x.y) into provenance(["x", "y"])
// before evaluation; provenance("web.port") works too.
func (c *Console) provenanceFunc() function.Function {
	return function.New(&function.Spec{
		Description: "Where a node attribute was written: provenance(node.web.port).",
		Params:      []function.Parameter{{Name: "path", Type: cty.DynamicPseudoType}},
		Type:        function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			path, err := pathArg(args[0])
			if err != nil {
				return cty.NilVal, function.NewArgError(0, err)
			}
			srcs := c.Sources(path)
			if len(srcs) == 0 {
				return cty.NilVal, function.NewArgErrorf(0, "%s is not set by any recipe, policy or command-line attribute", pathString(path))
			}
			one := func(s AttributeSource) cty.Value {
				return cty.ObjectVal(map[string]cty.Value{
					"level":  cty.StringVal(s.Leaf.Level),
					"source": cty.StringVal(s.Leaf.Source),
				})
			}
			if len(srcs) == 1 && len(srcs[0].Leaf.Path) == len(path) {
				return one(srcs[0]), nil
			}
			m := map[string]cty.Value{}
			for _, s := range srcs {
				m[strings.Join(s.Leaf.Path[len(path):], ".")] = one(s)
			}
			return cty.ObjectVal(m), nil
		},
	})
}

// pathArg reads provenance's argument: a list of keys, or a path string.
func pathArg(v cty.Value) ([]string, error) {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil, fmt.Errorf("the path must be known")
	}
	v, _ = v.UnmarkDeep()
	t := v.Type()
	switch {
	case t == cty.String:
		return ParsePath(v.AsString())
	case t.IsListType() || t.IsTupleType():
		var keys []string
		for it := v.ElementIterator(); it.Next(); {
			_, k := it.Element()
			if k.Type() != cty.String {
				return nil, fmt.Errorf("a path's keys are strings")
			}
			keys = append(keys, k.AsString())
		}
		return keys, nil
	}
	return nil, fmt.Errorf("give the attribute itself, provenance(node.web.port), or its path as a string, provenance(\"web.port\")")
}

// provenanceArgs rewrites, in place, every provenance(node.…) call of
// expr to pass the path (as a list of keys) instead of the value.
func provenanceArgs(expr hcl.Expression) {
	se, ok := expr.(hclsyntax.Expression)
	if !ok {
		return
	}
	hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		call, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok || call.Name != "provenance" || len(call.Args) != 1 {
			return nil
		}
		tr, ok := call.Args[0].(*hclsyntax.ScopeTraversalExpr)
		if !ok || tr.Traversal.RootName() != "node" {
			return nil
		}
		keys := nodePaths(tr)
		if len(keys) != 1 || len(keys[0]) != len(tr.Traversal)-1 {
			return nil // an index that is not a key: evaluate as written
		}
		vals := make([]cty.Value, len(keys[0]))
		for i, k := range keys[0] {
			vals[i] = cty.StringVal(k)
		}
		list := cty.EmptyTupleVal
		if len(vals) > 0 {
			list = cty.TupleVal(vals)
		}
		call.Args[0] = &hclsyntax.LiteralValueExpr{Val: list, SrcRange: tr.SrcRange}
		return nil
	})
}
