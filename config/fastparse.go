package config

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// fastParse builds, for the common shape of recipes, the very AST that
// hclsyntax.ParseConfig builds, without its token slice and in one pass
// over the bytes: hclsyntax spends most of its time lexing (and counting
// grapheme clusters for columns), and parsing was a third of a no-op
// plan's time even in parallel. It takes, of a piece of a file
// (chunked.go):
//
//   - blank lines and whole-line comments (# or //);
//   - blocks: an identifier, quoted labels, "{" then a newline, a body,
//     and "}" on a line of its own, followed by a newline (or the end);
//   - in a body: the same comments, nested blocks, and attributes
//     NAME = VALUE on one line (a # or // comment may end it), VALUE being
//     a quoted template of ASCII literal text (with the escapes \n \t \r
//     \" \\) and ${ root.attr } interpolations, a traversal root.attr, an
//     unsigned integer, true or false.
//
// A top-level block with anything else — a heredoc, a list, a function
// call, a duplicate attribute, a non-ASCII character in a string — is left
// as a hole, from the start of its line to the next line that is exactly
// "}", for hclsyntax to parse (and if hclsyntax finds anything wrong
// there, the whole file is parsed by hclsyntax: chunked.go). What it takes
// it parses exactly as hclsyntax does (same nodes, same values, same
// ranges), which fastparse_test.go checks on every recipe of the
// repository and FuzzFastParse on arbitrary input. Within the ASCII that
// it takes, a column is the byte offset in the line plus one, which is
// what hclsyntax's grapheme counting gives; a comment ends its line, so
// what it holds does not move any column.
//
// It returns the piece's segments in order, and the position of its end.
//
// hclsyntax with an ASCII fast path in its column counting was measured
// as its replacement (issue 20), and still cost 0.3 to 0.4 s more CPU on
// the 10,000-resource no-op plan, where 0.1 s would have retired
// fastParse: docs/design.md (the Load step) has the figures.
func fastParse(src []byte, filename string, off, end, line int) (segs []segment, eof hcl.Pos) {
	p := &fastParser{src: src[:end], filename: filename, pos: off, line: line, lineStart: off}
	var blocks hclsyntax.Blocks
	for {
		lineStart, lineNo := p.lineStart, p.line
		ok := p.skipLines()
		if ok && p.pos == len(p.src) {
			break
		}
		var b *hclsyntax.Block
		if ok {
			lineStart, lineNo = p.lineStart, p.line
			b, ok = p.safeBlock()
		}
		if ok {
			blocks = append(blocks, b)
			continue
		}
		// A hole, from the start of the line where the block (or the
		// comment fastParse does not take) begins to the end of the next
		// line that is exactly "}", or to the end.
		if len(blocks) > 0 {
			segs = append(segs, segment{blocks: blocks})
			blocks = nil
		}
		holeEnd := len(p.src)
		if i := bytes.Index(p.src[lineStart:], []byte("\n}\n")); i >= 0 {
			holeEnd = lineStart + i + 3
		}
		segs = append(segs, segment{hole: piece{off: lineStart, end: holeEnd, line: lineNo}})
		p.pos, p.lineStart = holeEnd, holeEnd
		p.line = lineNo + bytes.Count(p.src[lineStart:holeEnd], []byte("\n"))
	}
	if len(blocks) > 0 {
		segs = append(segs, segment{blocks: blocks})
	}
	return segs, p.at(p.pos)
}

// fastParseFuzzedAgainst is the version of github.com/hashicorp/hcl/v2
// that FuzzFastParse last ran against. fastParse builds the syntax tree
// hclsyntax builds, so another hcl (a node with a new field, a range or an
// escape computed differently) can make the two differ where the fuzzer
// found them equal: TestFastParseIsPinnedToHCL fails as soon as go.mod
// requires another version, or replaces hcl, and says how to fuzz again
// before this is moved.
const fastParseFuzzedAgainst = "v2.25.0"

// segment is a run of blocks fastParse parsed, or a hole it left to
// hclsyntax.
type segment struct {
	blocks hclsyntax.Blocks
	hole   piece
}

// safeBlock parses a top-level block; a bug here must not fail a plan, so
// a panic leaves the block to hclsyntax.
func (p *fastParser) safeBlock() (b *hclsyntax.Block, ok bool) {
	defer func() {
		if recover() != nil {
			b, ok = nil, false
		}
	}()
	return p.block(p.ident(), true)
}

type fastParser struct {
	src       []byte
	filename  string
	pos       int
	line      int // of pos
	lineStart int // byte offset of line's first byte
}

// at is the position of byte offset b, on the current line.
func (p *fastParser) at(b int) hcl.Pos {
	return hcl.Pos{Line: p.line, Column: b - p.lineStart + 1, Byte: b}
}

// rng is the range of bytes [from, to) on the current line.
func (p *fastParser) rng(from, to int) hcl.Range {
	return hcl.Range{Filename: p.filename, Start: p.at(from), End: p.at(to)}
}

func (p *fastParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *fastParser) spaces() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// newline consumes a "\n".
func (p *fastParser) newline() bool {
	if p.peek() != '\n' {
		return false
	}
	p.pos++
	p.line++
	p.lineStart = p.pos
	return true
}

// lineEnd consumes the end of a line: a newline, or a # or // comment
// and the newline that ends it (which hclsyntax takes for the newline).
func (p *fastParser) lineEnd() bool {
	if c := p.peek(); c == '#' || (c == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/') {
		for p.pos < len(p.src) && p.src[p.pos] != '\n' {
			p.pos++
		}
	}
	return p.newline()
}

// skipLines skips blank lines and whole-line comments, leaving pos at the
// first byte of something else (after its indentation), or at the end.
// A /* comment gives up.
func (p *fastParser) skipLines() bool {
	for {
		p.spaces()
		switch c := p.peek(); {
		case p.pos == len(p.src):
			return true
		case c == '\n':
			p.newline()
		case c == '#' || (c == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/'):
			from, ascii := p.pos, true
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				ascii = ascii && p.src[p.pos] < 0x80
				p.pos++
			}
			if !ascii && (p.pos == len(p.src) || !utf8.Valid(p.src[from:p.pos])) {
				// The last line's end is at a column hclsyntax counts in
				// grapheme clusters, and it lexes bad UTF-8 its own way.
				return false
			}
			if p.pos == len(p.src) {
				return true
			}
			p.newline()
		case c == '/':
			return false
		default:
			return true
		}
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isIdentByte(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ident reads an identifier (a letter, then letters, digits, _ and -);
// its range is empty when there is none.
func (p *fastParser) ident() hcl.Range {
	start := p.pos
	if p.pos < len(p.src) && isLetter(p.src[p.pos]) {
		p.pos++
		for p.pos < len(p.src) && isIdentByte(p.src[p.pos]) {
			p.pos++
		}
	}
	return p.rng(start, p.pos)
}

func (p *fastParser) text(r hcl.Range) string { return string(p.src[r.Start.Byte:r.End.Byte]) }

// block parses a block whose type was just read: labels, "{", newline,
// the body, "}" and the newline after it (or, at the top level, the end).
func (p *fastParser) block(typ hcl.Range, top bool) (*hclsyntax.Block, bool) {
	if typ.Start.Byte == typ.End.Byte {
		return nil, false
	}
	b := &hclsyntax.Block{Type: p.text(typ), TypeRange: typ}
	for {
		p.spaces()
		if p.peek() != '"' {
			break
		}
		label, r, ok := p.label()
		if !ok {
			return nil, false
		}
		b.Labels = append(b.Labels, label)
		b.LabelRanges = append(b.LabelRanges, r)
	}
	if p.peek() != '{' {
		return nil, false
	}
	b.OpenBraceRange = p.rng(p.pos, p.pos+1)
	p.pos++
	p.spaces()
	if !p.newline() {
		return nil, false
	}
	body := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}, Blocks: hclsyntax.Blocks{}}
	for {
		if !p.skipLines() || p.pos == len(p.src) {
			return nil, false
		}
		if p.peek() == '}' {
			b.CloseBraceRange = p.rng(p.pos, p.pos+1)
			p.pos++
			break
		}
		name := p.ident()
		if name.Start.Byte == name.End.Byte {
			return nil, false
		}
		p.spaces()
		if p.peek() != '=' {
			nested, ok := p.block(name, false)
			if !ok {
				return nil, false
			}
			body.Blocks = append(body.Blocks, nested)
			continue
		}
		a, ok := p.attribute(name)
		if !ok {
			return nil, false
		}
		if _, dup := body.Attributes[a.Name]; dup {
			return nil, false // hclsyntax reports it
		}
		body.Attributes[a.Name] = a
	}
	body.SrcRange = hcl.RangeBetween(b.OpenBraceRange, b.CloseBraceRange)
	body.EndRange = hcl.Range{Filename: p.filename, Start: b.CloseBraceRange.End, End: b.CloseBraceRange.End}
	b.Body = body
	p.spaces()
	if !p.newline() && !(top && p.pos == len(p.src)) {
		return nil, false
	}
	return b, true
}

// label reads a quoted label of plain characters (no escape, no $ or %).
func (p *fastParser) label() (string, hcl.Range, bool) {
	start := p.pos
	p.pos++
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '"':
			p.pos++
			return string(p.src[start+1 : p.pos-1]), p.rng(start, p.pos), true
		case c < 0x20 || c >= 0x7f || c == '\\' || c == '$' || c == '%':
			return "", hcl.Range{}, false
		}
		p.pos++
	}
	return "", hcl.Range{}, false
}

// attribute parses "= VALUE" and the newline after it.
func (p *fastParser) attribute(name hcl.Range) (*hclsyntax.Attribute, bool) {
	eq := p.rng(p.pos, p.pos+1)
	p.pos++
	p.spaces()
	expr, ok := p.value()
	if !ok {
		return nil, false
	}
	p.spaces()
	if !p.lineEnd() {
		return nil, false
	}
	return &hclsyntax.Attribute{
		Name:        p.text(name),
		Expr:        expr,
		SrcRange:    hcl.RangeBetween(name, expr.Range()),
		NameRange:   name,
		EqualsRange: eq,
	}, true
}

// endsTerm reports whether the byte after a number, keyword or
// traversal ends it.
func (p *fastParser) endsTerm() bool {
	c := p.peek()
	return c == ' ' || c == '\t' || c == '\n'
}

func (p *fastParser) value() (hclsyntax.Expression, bool) {
	switch c := p.peek(); {
	case c == '"':
		return p.template()
	case c >= '0' && c <= '9':
		start := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		if !p.endsTerm() {
			return nil, false
		}
		v, err := cty.ParseNumberVal(string(p.src[start:p.pos]))
		if err != nil {
			return nil, false
		}
		return &hclsyntax.LiteralValueExpr{Val: v, SrcRange: p.rng(start, p.pos)}, true
	case isLetter(c):
		start := p.pos
		r := p.ident()
		var v cty.Value
		switch p.text(r) {
		case "true":
			v = cty.True
		case "false":
			v = cty.False
		case "null":
			return nil, false
		default:
			p.pos = start
			expr, ok := p.traversal()
			if !ok || !p.endsTerm() {
				return nil, false
			}
			return expr, true
		}
		if !p.endsTerm() {
			return nil, false
		}
		return &hclsyntax.LiteralValueExpr{Val: v, SrcRange: r}, true
	}
	return nil, false
}

// template parses a quoted template: literal runs and ${ traversal }
// interpolations, as hclsyntax melds them (one literal part per run).
func (p *fastParser) template() (hclsyntax.Expression, bool) {
	open := p.pos
	p.pos++
	var parts []hclsyntax.Expression
	var lit strings.Builder
	litStart, inLit := 0, false
	flush := func(end int) {
		if inLit {
			parts = append(parts, &hclsyntax.LiteralValueExpr{Val: cty.StringVal(lit.String()), SrcRange: p.rng(litStart, end)})
			lit.Reset()
			inLit = false
		}
	}
	interps := 0
	for {
		if p.pos >= len(p.src) {
			return nil, false
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			flush(p.pos)
			p.pos++
			whole := p.rng(open, p.pos)
			if len(parts) == 0 {
				// "": one empty literal, where hclsyntax puts it: at the
				// end of the closing quote.
				at := p.at(p.pos)
				parts = append(parts, &hclsyntax.LiteralValueExpr{Val: cty.StringVal(""), SrcRange: hcl.Range{Filename: p.filename, Start: at, End: at}})
			}
			if interps == 1 && len(parts) == 1 {
				if _, isLit := parts[0].(*hclsyntax.LiteralValueExpr); !isLit {
					return &hclsyntax.TemplateWrapExpr{Wrapped: parts[0], SrcRange: whole}, true
				}
			}
			return &hclsyntax.TemplateExpr{Parts: parts, SrcRange: whole}, true
		case c < 0x20 || c >= 0x7f:
			return nil, false
		case c == '$' || c == '%':
			next := byte(0)
			if p.pos+1 < len(p.src) {
				next = p.src[p.pos+1]
			}
			if next == '{' && c == '$' {
				flush(p.pos)
				expr, ok := p.interpolation()
				if !ok {
					return nil, false
				}
				parts = append(parts, expr)
				interps++
				continue
			}
			if next == '{' || next == c {
				return nil, false // %{ directives, $${ and %%{ escapes
			}
		case c == '\\':
			if !inLit {
				litStart, inLit = p.pos, true
			}
			if p.pos+1 >= len(p.src) {
				return nil, false
			}
			switch p.src[p.pos+1] {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '"':
				lit.WriteByte('"')
			case '\\':
				lit.WriteByte('\\')
			default:
				return nil, false
			}
			p.pos += 2
			continue
		}
		if !inLit {
			litStart, inLit = p.pos, true
		}
		lit.WriteByte(c)
		p.pos++
	}
}

// interpolation parses ${ root.attr… } (spaces allowed inside the braces,
// none around the dots).
func (p *fastParser) interpolation() (hclsyntax.Expression, bool) {
	p.pos += 2
	p.spaces()
	expr, ok := p.traversal()
	if !ok {
		return nil, false
	}
	p.spaces()
	if p.peek() != '}' {
		return nil, false
	}
	p.pos++
	return expr, true
}

// traversal parses root.attr.attr (no spaces around the dots).
func (p *fastParser) traversal() (hclsyntax.Expression, bool) {
	root := p.ident()
	name := p.text(root)
	if name == "" || name == "true" || name == "false" || name == "null" {
		return nil, false
	}
	tr := hcl.Traversal{hcl.TraverseRoot{Name: name, SrcRange: root}}
	end := root
	for p.peek() == '.' {
		dot := p.pos
		p.pos++
		attr := p.ident()
		if attr.Start.Byte == attr.End.Byte {
			return nil, false
		}
		end = p.rng(dot, attr.End.Byte)
		tr = append(tr, hcl.TraverseAttr{Name: p.text(attr), SrcRange: end})
	}
	return &hclsyntax.ScopeTraversalExpr{Traversal: tr, SrcRange: hcl.RangeBetween(root, end)}, true
}
