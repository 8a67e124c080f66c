package config

import (
	"fmt"
	"math/big"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// levels lists the attribute levels in increasing precedence.
var levels = []string{LevelDefault, LevelNormal, LevelOverride}

// Attributes holds node attribute writes, one tree per level and
// component. Writes are made at compile time and read (Node, Leaves) at
// plan time.
//
// The levels are default, normal and override (see levels). Recipes and
// policies write default and override; normal holds what the command line
// gives (-attr, -attr-file), so it beats every default and yields to every
// override, as Chef's normal level (where chef-client -j puts its JSON)
// does.
//
// Each level has two components, as Chef's has several: the cookbooks'
// (Write: attribute blocks; Chef's default and override) and the
// policy's (WritePolicy: a policy's default_attributes and
// override_attributes; Chef's role_default and role_override, where
// Chef's policyfile loader puts them).
//
// Objects and maps merge key by key; every other value (lists and tuples
// included) is a leaf. Within a component the last writer wins, also when
// the shape changes (a map where a scalar was, or the reverse). Within a
// level the policy's component is deep-merged onto the cookbooks' as
// Chef's merge_defaults and merge_overrides do (deep_merge!): where both
// hold a list at one path, the result is their union, the cookbooks'
// elements first (Ruby's Array#|: each value once, first occurrence
// kept); any other pair is replaced by the policy's value. Across levels
// override beats default whatever the order of the writes: an override
// leaf replaces the default leaf or subtree at its path (Chef's
// hash_only_merge!, which never merges arrays).
type Attributes struct {
	trees  map[string]*attrNode // the cookbooks' component, by level
	policy map[string]*attrNode // the policy's component, by level
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
	// mergedFrom: see Leaf.MergedFrom.
	mergedFrom []hcl.Range
}

// Leaf is one leaf of the merged attributes with its provenance.
type Leaf struct {
	Path  []string
	Value cty.Value
	// Level is the level whose write won: "default", "normal" or
	// "override".
	Level string
	// Range is where the winning value was written.
	Range hcl.Range
	// Origin, when set, says where the value came from when that is more
	// than a recipe file, such as an included policy lock:
	// `include_policy "base" (revision 1a2b3c4d5e)`; Range is then the
	// place in policy.hcl that brought it in. For a merged list (see
	// MergedFrom) it names the cookbook's write as well. A value from the
	// command line has OriginAttr or OriginAttrFile (see Source).
	Origin string
	// Sensitive is set when the winning write marked the value sensitive
	// (sensitive() in an attribute block): it is kept out of every output.
	Sensitive bool
	// MergedFrom, for a list that is the union of a cookbook's list and
	// the policy's at one level, is where the cookbook's list (whose
	// elements come first) was written; Range is the policy's.
	MergedFrom []hcl.Range
}

// Origins of the values the command line gives (Leaf.Origin). A value from
// an attribute file has OriginAttrFile and a Range in that file, named as
// the command line named it; a value from -attr has OriginAttr and a
// Range in a one-line source named "-attr PATH" holding the argument.
const (
	OriginAttr     = "-attr"
	OriginAttrFile = "-attr-file"
)

// Source says where the leaf's value was written, in the one form toque
// uses wherever it says so (the plan's attribute sources, show -json, the
// console): FILE:LINE, the file named by name (Config.DisplayPath; nil
// names it as it is), after the value's origin when it has one.
//
//	default.hcl:7                                                 a recipe
//	include_policy "base" (revision 1a2b3c4d5e) at policy.hcl:12  an included policy
//	-attr-file prod.json:3                                        an attribute file
//	-attr web.port                                                an -attr
//
// An attribute file is named as the command line named it.
func (l Leaf) Source(name func(file string) string) string {
	file := l.Range.Filename
	switch {
	case l.Origin == OriginAttr:
		return file
	case l.Origin == OriginAttrFile:
		return fmt.Sprintf("%s %s:%d", l.Origin, file, l.Range.Start.Line)
	case name != nil:
		file = name(file)
	}
	at := fmt.Sprintf("%s:%d", file, l.Range.Start.Line)
	if l.Origin == "" {
		return at
	}
	return l.Origin + " at " + at
}

// NewAttributes returns empty attributes.
func NewAttributes() *Attributes {
	return &Attributes{trees: map[string]*attrNode{}}
}

func newMapNode() *attrNode { return &attrNode{children: map[string]*attrNode{}} }

// IsMapLike reports whether v is a known, non-null object or map: a node
// of the attribute tree rather than a leaf.
func IsMapLike(v cty.Value) bool {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return false
	}
	t := v.Type()
	return t.IsObjectType() || t.IsMapType()
}

// Write sets path to v at level ("default", "normal" or "override";
// other levels are ignored) as written at rng. Object and map values are merged key by
// key into what is there.
func (a *Attributes) Write(level string, path []string, v cty.Value, rng hcl.Range) {
	a.WriteFrom(level, path, v, rng, "")
}

// WriteFrom is Write with an origin recorded beside the range (see
// Leaf.Origin).
func (a *Attributes) WriteFrom(level string, path []string, v cty.Value, rng hcl.Range, origin string) {
	if a.trees == nil {
		a.trees = map[string]*attrNode{}
	}
	writeTree(a.trees, level, path, v, rng, origin)
}

// WritePolicy is WriteFrom into the policy's component of level: after
// the cookbooks' at the same level, with lists merged (see Attributes).
func (a *Attributes) WritePolicy(level string, path []string, v cty.Value, rng hcl.Range, origin string) {
	if a.policy == nil {
		a.policy = map[string]*attrNode{}
	}
	writeTree(a.policy, level, path, v, rng, origin)
}

// writeTree writes into trees[level].
func writeTree(trees map[string]*attrNode, level string, path []string, v cty.Value, rng hcl.Range, origin string) {
	v = compactIntegers(v)
	known := false
	for _, l := range levels {
		known = known || l == level
	}
	if !known || v == cty.NilVal {
		return
	}
	root := trees[level]
	if root == nil {
		root = newMapNode()
		trees[level] = root
	}
	if len(path) == 0 {
		// The root stays an object: only maps can be written there.
		if IsMapLike(v) {
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
	if IsMapLike(v) {
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
		if IsMapLike(ev) {
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

// merged is the deep merge of every level, higher levels winning; each
// level is its cookbooks' component with the policy's merged onto it.
func (a *Attributes) merged() *attrNode {
	out := newMapNode()
	if a == nil {
		return out
	}
	for _, l := range levels {
		t := a.trees[l]
		if p := a.policy[l]; p != nil {
			t = a.mergeComponents(t, p)
		}
		if t != nil {
			mergeInto(out, t)
		}
	}
	return out
}

// mergeComponents deep-merges map node over onto map node base (nil when
// the level has no cookbook writes) as Chef's deep_merge! does: maps key
// by key, two lists into their union, anything else replaced by over's.
// Neither input is changed; the result shares their untouched subtrees.
func (a *Attributes) mergeComponents(base, over *attrNode) *attrNode {
	if base == nil {
		return over
	}
	out := newMapNode()
	for k, b := range base.children {
		out.children[k] = b
	}
	for k, o := range over.children {
		b := out.children[k]
		switch {
		case b == nil:
			out.children[k] = o
		case b.children != nil && o.children != nil:
			out.children[k] = a.mergeComponents(b, o)
		case b.children == nil && o.children == nil && isListLike(b.value) && isListLike(o.value):
			out.children[k] = &attrNode{
				value:      listUnion(b.value, o.value),
				level:      o.level,
				rng:        o.rng,
				origin:     a.mergedOrigin(b, o),
				mergedFrom: append(append([]hcl.Range(nil), b.mergedFrom...), b.rng),
				// A merged list holds the cookbook's elements too.
				sensitive: b.sensitive || o.sensitive,
			}
		default:
			out.children[k] = o
		}
	}
	return out
}

// isListLike reports whether v is a known list or tuple (Chef's Array).
func isListLike(v cty.Value) bool {
	if v == cty.NilVal || v.IsNull() || v.ContainsMarked() {
		return false
	}
	t := v.Type()
	return t.IsListType() || t.IsTupleType()
}

// listUnion is Ruby's a | b: the elements of a then b, each once, first
// occurrence kept. An unknown list gives an unknown result.
func listUnion(a, b cty.Value) cty.Value {
	if !a.IsKnown() || !b.IsKnown() {
		return cty.DynamicVal
	}
	var out []cty.Value
	for _, list := range []cty.Value{a, b} {
		for it := list.ElementIterator(); it.Next(); {
			_, e := it.Element()
			dup := false
			for _, seen := range out {
				if sameValue(seen, e) {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, e)
			}
		}
	}
	if len(out) == 0 {
		return cty.EmptyTupleVal
	}
	if a.Type().IsListType() && a.Type().Equals(b.Type()) {
		return cty.ListVal(out)
	}
	return cty.TupleVal(out)
}

func sameValue(x, y cty.Value) bool {
	if !x.Type().Equals(y.Type()) {
		return false
	}
	if x.IsWhollyKnown() && y.IsWhollyKnown() {
		return x.Equals(y).True()
	}
	return x.RawEquals(y)
}

// mergedOrigin names both writes of a merged list: the cookbook's, and the
// policy's origin (or "the policy's list") — the policy's range follows.
// The cookbook's file is named relative to the policy's directory (where
// its policy.hcl or lock is) when it is below it.
func (a *Attributes) mergedOrigin(b, o *attrNode) string {
	file := b.rng.Filename
	if o.rng.Filename != "" && filepath.IsAbs(o.rng.Filename) {
		if rel, err := filepath.Rel(filepath.Dir(o.rng.Filename), file); err == nil && !strings.HasPrefix(rel, "..") {
			file = filepath.ToSlash(rel)
		}
	}
	from := fmt.Sprintf("%s:%d", file, b.rng.Start.Line)
	if b.origin != "" {
		from = b.origin + " at " + from
	}
	policy := "the policy's list"
	if o.origin != "" {
		policy = "the list of " + o.origin
	}
	return fmt.Sprintf("list merged from %s and %s", from, policy)
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
	return leavesOf(a.merged())
}

// leavesOf lists the leaves below map node root, sorted by path.
func leavesOf(root *attrNode) []Leaf {
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
			out = append(out, Leaf{Path: p, Value: c.value, Level: c.level, Range: c.rng, Origin: c.origin, Sensitive: c.sensitive, MergedFrom: c.mergedFrom})
		}
	}
	walk(root, nil)
	return out
}

// Writes lists every write still held at path or below it, level by level
// in increasing precedence (within a level, the cookbooks' component
// before the policy's), each sorted by path: what each level says, as
// Chef's debug_value does. The leaf of the merged attributes (Leaves) is
// the last one of each path, except for a list the policy's component
// merged with a cookbook's. Earlier writes of a path within one component
// are not kept: the last writer replaced them.
func (a *Attributes) Writes(path []string) []Leaf {
	var out []Leaf
	if a == nil {
		return out
	}
	for _, l := range levels {
		for _, tree := range []map[string]*attrNode{a.trees, a.policy} {
			n := tree[l]
			for _, k := range path {
				if n == nil || n.children == nil {
					n = nil
					break
				}
				n = n.children[k]
			}
			if n == nil {
				continue
			}
			root := newMapNode()
			if len(path) == 0 {
				root = n
			} else {
				// Wrap n so that the walk names it by its full path.
				p := root
				for _, k := range path[:len(path)-1] {
					c := newMapNode()
					p.children[k] = c
					p = c
				}
				p.children[path[len(path)-1]] = n
			}
			out = append(out, leavesOf(root)...)
		}
	}
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
