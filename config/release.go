package config

import (
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// ReleaseSyntax lets go of the syntax trees of c's files and resource
// blocks once every block is evaluated: they were the largest part of a
// large plan's memory (2.3 KB of the 5 KB each resource held at 100,000),
// and planning reads nothing of them but ranges. Afterwards:
//
//   - a resource block keeps its type, name, directory and ranges, and the
//     ranges of its attributes' values (AttributeRange); its Body and Meta
//     are nil, so nothing may evaluate it again;
//   - a file keeps its bytes, for diagnostics' snippets, and its Nav (which
//     diagnostics ask which block an offset is in) parses them again when
//     first asked, an error path (ReleaseFiles).
//
// Attribute blocks are kept whole. The planner calls it when its caller
// asks (planner.Planner.ReleaseSyntax), between evaluating and planning;
// evaluation itself releases each block's body as soon as it is done with
// it (ReleaseBody), so that the trees of all blocks are never all alive
// beside all their evaluations.
func (c *Config) ReleaseSyntax() {
	if c == nil {
		return
	}
	for _, b := range c.Resources {
		b.ReleaseBody()
		b.Meta = Meta{}
	}
	c.ReleaseFiles()
}

// ReleaseFiles lets go of the files' own syntax trees (what the blocks
// do not hold): each file keeps its bytes, and a Nav that parses them
// again when asked. Loading is done with them once the blocks are
// collected.
func (c *Config) ReleaseFiles() {
	if c == nil || c.Parser == nil {
		return
	}
	for name, f := range c.Parser.Files() {
		if f == nil || f.Nav == nil {
			continue
		}
		if _, lazy := f.Nav.(*lazyNav); lazy {
			continue
		}
		f.Body = hcl.EmptyBody()
		f.Nav = &lazyNav{src: f.Bytes, filename: name}
	}
}

// ReleaseBody keeps the ranges of b's attributes' values (AttributeRange),
// then lets go of its body: b's properties are evaluated, and nothing
// reads them again. Meta stays (notifications are resolved after every
// block is evaluated).
func (b *ResourceBlock) ReleaseBody() {
	if b.released {
		return
	}
	if sb, ok := b.Body.(*hclsyntax.Body); ok {
		// The type-specific attributes, as Attributes reads them (without
		// making hcl.Attribute copies of every one).
		isMeta := metaNames()
		b.attrRanges = make([]attrRange, 0, len(sb.Attributes))
		for name, a := range sb.Attributes {
			if !isMeta[name] {
				b.attrRanges = append(b.attrRanges, attrRange{name: name, rng: a.Expr.Range()})
			}
		}
	} else if b.Body != nil {
		if attrs, d := b.Attributes(); !d.HasErrors() {
			b.attrRanges = make([]attrRange, 0, len(attrs))
			for name, a := range attrs {
				b.attrRanges = append(b.attrRanges, attrRange{name: name, rng: a.Expr.Range()})
			}
		}
	}
	b.Body, b.released = nil, true
}

// attrRange is where one attribute's value is written.
type attrRange struct {
	name string
	rng  hcl.Range
}

// AttributeRange is the range of the value of b's attribute name (a
// type-specific attribute, not a meta-argument), before or after
// ReleaseSyntax; ok is false when b has no such attribute.
func (b *ResourceBlock) AttributeRange(name string) (hcl.Range, bool) {
	if b.released {
		for _, a := range b.attrRanges {
			if a.name == name {
				return a.rng, true
			}
		}
		return hcl.Range{}, false
	}
	if b.Body == nil {
		return hcl.Range{}, false
	}
	attrs, d := b.Attributes()
	if d.HasErrors() {
		return hcl.Range{}, false
	}
	if a, ok := attrs[name]; ok {
		return a.Expr.Range(), true
	}
	return hcl.Range{}, false
}

// lazyNav is a released file's navigation: it parses the file again the
// first time it is asked.
type lazyNav struct {
	src      []byte
	filename string
	once     sync.Once
	nav      any
}

func (n *lazyNav) get() any {
	n.once.Do(func() {
		if f, _ := Parse(n.src, n.filename); f != nil {
			n.nav = f.Nav
		}
	})
	return n.nav
}

// ContextString is the navigation's (hcled.ContextString).
func (n *lazyNav) ContextString(offset int) string {
	if nav, ok := n.get().(interface{ ContextString(int) string }); ok {
		return nav.ContextString(offset)
	}
	return ""
}

// ContextDefRange is the navigation's (hcled.ContextDefRange).
func (n *lazyNav) ContextDefRange(offset int) hcl.Range {
	if nav, ok := n.get().(interface{ ContextDefRange(int) hcl.Range }); ok {
		return nav.ContextDefRange(offset)
	}
	return hcl.Range{}
}
