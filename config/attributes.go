package config

import (
	"math/big"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// levels lists the attribute levels in increasing precedence.
var levels = []string{LevelDefault, LevelOverride}

// Attributes holds node attribute writes, one tree per level. Writes are
// made at compile time and read (Node, Leaves) at plan time.
//
// Objects and maps merge key by key; every other value (lists and tuples
// included) is a leaf. Within a level the last writer wins, also when the
// shape changes (a map where a scalar was, or the reverse). Across levels
// override beats default whatever the order of the writes: an override
// leaf replaces the default leaf or subtree at its path.
type Attributes struct {
	trees map[string]*attrNode
}

// attrNode is a map (children non-nil) or a leaf.
type attrNode struct {
	children map[string]*attrNode
	value    cty.Value
	level    string
	rng      hcl.Range
	origin   string
	// sensitive marks a leaf written with sensitive(): its value is kept
	// out of every output.
	sensitive bool
}

// Leaf is one leaf of the merged attributes with its provenance.
type Leaf struct {
	Path  []string
	Value cty.Value
	// Level is the level whose write won: "default" or "override".
	Level string
	// Range is where the winning value was written.
	Range hcl.Range
	// Origin, when set, says where the value came from when that is more
	// than a recipe file, such as an included policy lock:
	// `include_policy "base" (revision 1a2b3c4d5e)`; Range is then the
	// place in policy.hcl that brought it in.
	Origin string
	// Sensitive is set when the winning write marked the value sensitive
	// (sensitive() in an attribute block): it is kept out of every output.
	Sensitive bool
}

// NewAttributes returns empty attributes.
func NewAttributes() *Attributes {
	return &Attributes{trees: map[string]*attrNode{}}
}

func newMapNode() *attrNode { return &attrNode{children: map[string]*attrNode{}} }

func isMapLike(v cty.Value) bool {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return false
	}
	t := v.Type()
	return t.IsObjectType() || t.IsMapType()
}

// Write sets path to v at level ("default" or "override"; other levels
// are ignored) as written at rng. Object and map values are merged key by
// key into what is there.
func (a *Attributes) Write(level string, path []string, v cty.Value, rng hcl.Range) {
	a.WriteFrom(level, path, v, rng, "")
}

// WriteFrom is Write with an origin recorded beside the range (see
// Leaf.Origin).
func (a *Attributes) WriteFrom(level string, path []string, v cty.Value, rng hcl.Range, origin string) {
	v = compactIntegers(v)
	if a.trees == nil {
		a.trees = map[string]*attrNode{}
	}
	known := false
	for _, l := range levels {
		known = known || l == level
	}
	if !known || v == cty.NilVal {
		return
	}
	root := a.trees[level]
	if root == nil {
		root = newMapNode()
		a.trees[level] = root
	}
	if len(path) == 0 {
		// The root stays an object: only maps can be written there.
		if isMapLike(v) {
			setValue(root, v, level, rng, origin)
		}
		return
	}
	n := root
	for _, k := range path[:len(path)-1] {
		c := n.children[k]
		if c == nil || c.children == nil {
			c = newMapNode()
			n.children[k] = c
		}
		n = c
	}
	last := path[len(path)-1]
	if isMapLike(v) {
		c := n.children[last]
		if c == nil || c.children == nil {
			c = newMapNode()
			n.children[last] = c
		}
		setValue(c, v, level, rng, origin)
		return
	}
	n.children[last] = &attrNode{value: v, level: level, rng: rng, origin: origin}
}

// MarkSensitive marks what level holds at path (a leaf, or every leaf of a
// subtree) as sensitive. Call it right after the write it belongs to: a
// later write replaces the nodes, and the mark with them.
func (a *Attributes) MarkSensitive(level string, path []string) {
	n := a.trees[level]
	for _, k := range path {
		if n == nil || n.children == nil {
			return
		}
		n = n.children[k]
	}
	if n == nil {
		return
	}
	var mark func(n *attrNode)
	mark = func(n *attrNode) {
		if n.children == nil {
			n.sensitive = true
			return
		}
		for _, c := range n.children {
			mark(c)
		}
	}
	mark(n)
}

// setValue merges map-like v into map node n.
func setValue(n *attrNode, v cty.Value, level string, rng hcl.Range, origin string) {
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		key := k.AsString()
		if isMapLike(ev) {
			c := n.children[key]
			if c == nil || c.children == nil {
				c = newMapNode()
				n.children[key] = c
			}
			setValue(c, ev, level, rng, origin)
			continue
		}
		n.children[key] = &attrNode{value: ev, level: level, rng: rng, origin: origin}
	}
}

// merged is the deep merge of every level, higher levels winning.
func (a *Attributes) merged() *attrNode {
	out := newMapNode()
	if a == nil {
		return out
	}
	for _, l := range levels {
		if t := a.trees[l]; t != nil {
			mergeInto(out, t)
		}
	}
	return out
}

func mergeInto(dst, src *attrNode) {
	for k, s := range src.children {
		if s.children != nil {
			d := dst.children[k]
			if d == nil || d.children == nil {
				d = newMapNode()
				dst.children[k] = d
			}
			mergeInto(d, s)
			continue
		}
		dst.children[k] = s
	}
}

// Node returns the merged attributes as an object (an empty object when
// nothing was written).
func (a *Attributes) Node() cty.Value {
	return a.merged().toValue()
}

func (n *attrNode) toValue() cty.Value {
	if n.children == nil {
		return n.value
	}
	if len(n.children) == 0 {
		return cty.EmptyObjectVal
	}
	m := make(map[string]cty.Value, len(n.children))
	for k, c := range n.children {
		m[k] = c.toValue()
	}
	return cty.ObjectVal(m)
}

// Leaves lists every leaf of Node, sorted by path, with the level and
// range of the write that won.
func (a *Attributes) Leaves() []Leaf {
	var out []Leaf
	var walk func(n *attrNode, path []string)
	walk = func(n *attrNode, path []string) {
		keys := make([]string, 0, len(n.children))
		for k := range n.children {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c := n.children[k]
			p := append(append([]string(nil), path...), k)
			if c.children != nil {
				walk(c, p)
				continue
			}
			out = append(out, Leaf{Path: p, Value: c.value, Level: c.level, Range: c.rng, Origin: c.origin, Sensitive: c.sensitive})
		}
	}
	walk(a.merged(), nil)
	return out
}

// compactIntegers re-creates every whole number in v that fits an int64 at
// int64 precision. HCL parses number literals at 512 bits, and turning such
// a number into a string (every "${node.web.port}") costs ten times more
// than for the same value at 64 bits; node attributes are read by many
// resources, so they are compacted once, when written. Values compare equal
// either way.
func compactIntegers(v cty.Value) cty.Value {
	out, err := cty.Transform(v, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if v.Type() != cty.Number || !v.IsKnown() || v.IsNull() {
			return v, nil
		}
		bf := v.AsBigFloat()
		if !bf.IsInt() {
			return v, nil
		}
		if i, acc := bf.Int64(); acc == big.Exact {
			return cty.NumberIntVal(i), nil
		}
		return v, nil
	})
	if err != nil {
		return v
	}
	return out
}
