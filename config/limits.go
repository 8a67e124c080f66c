package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
)

// Limits on what toque parses. hcl's parsers recurse once per level of
// nesting, so a file of nothing but brackets (a few hundred kilobytes)
// would overflow the stack and crash toque instead of failing with a
// diagnostic; the limits are checked before parsing, in one linear pass.
// MaxSourceBytes is the largest recipe, attribute, metadata, policy or
// template file toque parses (a recipe of 100,000 resources is about
// 30 MB). A variable only so tests can lower it.
var MaxSourceBytes = 128 << 20

const (
	// MaxNestingDepth is the deepest nesting of braces, brackets,
	// parentheses and template interpolations a file may have. Real
	// recipes stay under 20.
	MaxNestingDepth = 256
)

// ValueTooDeep reports whether v nests objects, maps, lists, sets or
// tuples more than MaxNestingDepth levels deep (an attribute value from an
// included policy's JSON, which the HCL parse limits never saw). It walks
// without recursion.
func ValueTooDeep(v cty.Value) bool {
	type item struct {
		v     cty.Value
		depth int
	}
	stack := []item{{v, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.depth > MaxNestingDepth {
			return true
		}
		if !it.v.IsKnown() || it.v.IsNull() || !it.v.CanIterateElements() {
			continue
		}
		for e := it.v.ElementIterator(); e.Next(); {
			_, ev := e.Element()
			stack = append(stack, item{ev, it.depth + 1})
		}
	}
	return false
}

// Parse parses src as native HCL, or as HCL JSON when filename ends in
// .json, after checking it against MaxSourceBytes and MaxNestingDepth. A
// large native file is parsed in parallel pieces (chunked.go), with the
// same result.
func Parse(src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	if d := CheckSource(src, filename, false); d != nil {
		return nil, hcl.Diagnostics{d}
	}
	if strings.HasSuffix(filename, ".json") {
		return hcljson.Parse(src, filename)
	}
	return parseNative(src, filename)
}

// CheckSource checks src (a file, or a template when template is set)
// against MaxSourceBytes and MaxNestingDepth, returning a diagnostic that
// points at the place the nesting gets too deep, or nil.
func CheckSource(src []byte, filename string, template bool) *hcl.Diagnostic {
	if len(src) > MaxSourceBytes {
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "File too large",
			Detail:   fmt.Sprintf("%s is %d bytes; toque parses files of at most %d MiB. Split it into several files.", filename, len(src), MaxSourceBytes>>20),
			Subject:  &hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos},
		}
	}
	// Counting every bracket, also those in strings and comments, can
	// only overcount brackets: when it stays under the limit the file
	// does too. (Template directives nest without brackets: a template
	// with %{ … } is always lexed.)
	if at := naiveTooDeep(src); at < 0 && !(template && bytes.Contains(src, []byte("%{"))) {
		return nil
	}
	var at int
	switch {
	case strings.HasSuffix(filename, ".json") && !template:
		at = jsonTooDeep(src)
	default:
		at = hclTooDeep(src, filename, template)
	}
	if at < 0 {
		return nil
	}
	pos := posOf(src, at)
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Nesting too deep",
		Detail:   fmt.Sprintf("Braces, brackets, parentheses and interpolations nest more than %d levels deep here. Real recipes need far fewer; toque refuses deeper nesting before parsing.", MaxNestingDepth),
		Subject:  &hcl.Range{Filename: filename, Start: pos, End: pos},
	}
}

// naiveTooDeep returns the offset where the bracket count first exceeds
// the limit, or -1.
func naiveTooDeep(src []byte) int {
	depth := 0
	for i, c := range src {
		switch c {
		case '{', '[', '(':
			depth++
			if depth > MaxNestingDepth {
				return i
			}
		case '}', ']', ')':
			if depth > 0 {
				depth--
			}
		}
	}
	return -1
}

// hclTooDeep lexes src (the lexer does not recurse) and returns the offset
// of the token that nests too deep, or -1.
func hclTooDeep(src []byte, filename string, template bool) int {
	var toks hclsyntax.Tokens
	if template {
		toks, _ = hclsyntax.LexTemplate(src, filename, hcl.InitialPos)
	} else {
		toks, _ = hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	}
	depth := 0
	for i, t := range toks {
		if t.Type == hclsyntax.TokenTemplateControl && i+1 < len(toks) && toks[i+1].Type == hclsyntax.TokenIdent {
			// %{ if } … %{ endif } and %{ for } … %{ endfor } nest too.
			switch string(toks[i+1].Bytes) {
			case "if", "for":
				depth++
				if depth > MaxNestingDepth {
					return t.Range.Start.Byte
				}
			case "endif", "endfor":
				if depth > 0 {
					depth--
				}
			}
		}
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl, hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			depth++
			if depth > MaxNestingDepth {
				return t.Range.Start.Byte
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			if depth > 0 {
				depth--
			}
		}
	}
	return -1
}

// jsonTooDeep reads src's JSON tokens (the decoder does not recurse) and
// returns the offset where arrays and objects nest too deep, or -1.
func jsonTooDeep(src []byte) int {
	dec := json.NewDecoder(bytes.NewReader(src))
	depth := 0
	for {
		t, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return -1 // the parser reports syntax errors
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
			if depth > MaxNestingDepth {
				return int(dec.InputOffset()) - 1
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// posOf is the line and column of byte offset off in src.
func posOf(src []byte, off int) hcl.Pos {
	off = min(max(off, 0), len(src))
	line := 1 + bytes.Count(src[:off], []byte("\n"))
	col := off - (bytes.LastIndexByte(src[:off], '\n') + 1) + 1
	return hcl.Pos{Line: line, Column: col, Byte: off}
}
