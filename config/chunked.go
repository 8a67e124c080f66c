package config

import (
	"bytes"
	"runtime"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/toquehq/toque/internal/parallel"
)

// A native recipe file is parsed in pieces cut at top-level block
// boundaries, in parallel for a large one (one generated file of 10,000
// resources is 2.8 MB), each piece by fastParse when it has the common
// shape fastParse knows, else by hclsyntax. The result is exactly the
// whole-file parse, or the whole file is parsed by hclsyntax as before:
//
//   - A cut is made only after a line that is exactly "}": where a
//     top-level block written as `fmt` writes it ends. Such a line can
//     also end a nested block, or sit inside a heredoc or a comment; then
//     the piece before it does not end at the top level.
//   - Each piece is parsed from the position it has in the file (line,
//     column 1, byte offset), so every range is the whole-file parse's.
//   - A piece that does not end at the top level leaves something open (a
//     block, a heredoc, a comment, a string), which hclsyntax reports as
//     an error and fastParse refuses. So when a piece parsed by hclsyntax
//     has any diagnostic — or a top-level attribute, whose duplicates only
//     the whole-file parse would see — the pieces are thrown away and the
//     whole file is parsed instead: diagnostics are always those of the
//     whole-file parse. Induction on the pieces: the first starts at the
//     top level; a piece that starts there and parses without error ends
//     there; so every cut is a boundary between top-level items, where
//     the whole-file parser starts a new item from the same state.
//   - The blocks of the pieces are joined, in order, into one body whose
//     range is the whole file's, tied to the file's Nav as hclsyntax ties
//     it.
//
// chunked_test.go and fastparse_test.go check the result against the
// whole-file parse on every recipe of the repository and on fuzzed input.

// chunkBytes is the size a file is cut into pieces of (about), and
// chunkMin the smallest file that is cut. Variables so that tests can cut
// small files.
var (
	chunkBytes = 64 << 10
	chunkMin   = 256 << 10
)

// parseNative is hclsyntax.ParseConfig, faster (see above).
func parseNative(src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	cuts := []piece{{off: 0, end: len(src), line: 1}}
	if len(src) >= chunkMin {
		cuts = cutPoints(src, chunkBytes)
	}
	parsed := make([]parsedPiece, len(cuts))
	parallel.For(len(cuts), runtime.GOMAXPROCS(0), func(i int) { parsed[i] = parsePiece(src, filename, cuts[i]) })
	for _, pp := range parsed {
		if pp.refused {
			return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
		}
	}
	n := 0
	for _, pp := range parsed {
		n += len(pp.blocks)
	}
	blocks := make(hclsyntax.Blocks, 0, n)
	for _, pp := range parsed {
		blocks = append(blocks, pp.blocks...)
	}
	// An empty parse gives a file whose Nav is tied to its body: that body
	// becomes the whole file's.
	f, _ := hclsyntax.ParseConfig(nil, filename, hcl.InitialPos)
	body := f.Body.(*hclsyntax.Body)
	first, last := parsed[0], parsed[len(parsed)-1]
	*body = hclsyntax.Body{
		Attributes: hclsyntax.Attributes{},
		Blocks:     blocks,
		SrcRange:   hcl.Range{Filename: filename, Start: first.start, End: last.end},
		EndRange:   hcl.Range{Filename: filename, Start: last.end, End: last.end},
	}
	f.Bytes = src
	return f, nil
}

// piece is one part of a file: src[off:end], starting at line.
type piece struct {
	off, end, line int
}

// parsedPiece is a piece's blocks, and where its top-level body starts
// (its first token that is not a comment) and ends; refused is set when
// hclsyntax found something wrong in a part of it (a diagnostic, or a
// top-level attribute).
type parsedPiece struct {
	blocks     hclsyntax.Blocks
	start, end hcl.Pos
	refused    bool
}

// parsePiece parses a piece with fastParse, and the holes it leaves with
// hclsyntax.
func parsePiece(src []byte, filename string, c piece) parsedPiece {
	segs, eof := fastParse(src, filename, c.off, c.end, c.line)
	pp := parsedPiece{end: eof}
	// hclsyntax's body starts at its first token: the first byte that is
	// not a space or a tab (a comment counts, as a newline token), unless
	// that begins a /* comment, which fastParse leaves in a hole.
	i := c.off
	for i < c.end && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	pp.start = eof
	lineComment := i < c.end && (src[i] == '#' || (src[i] == '/' && i+1 < c.end && src[i+1] == '/'))
	if i < c.end && !(lineComment && bytes.IndexByte(src[i:c.end], '\n') < 0) {
		// (A comment with no newline after it is no token at all.)
		pp.start = hcl.Pos{Line: c.line, Column: i - c.off + 1, Byte: i}
	}
	for k, seg := range segs {
		if seg.blocks != nil {
			pp.blocks = append(pp.blocks, seg.blocks...)
			continue
		}
		h := seg.hole
		f, diags := hclsyntax.ParseConfig(src[h.off:h.end], filename, hcl.Pos{Line: h.line, Column: 1, Byte: h.off})
		body := f.Body.(*hclsyntax.Body)
		if len(diags) > 0 || len(body.Attributes) > 0 {
			return parsedPiece{refused: true}
		}
		pp.blocks = append(pp.blocks, body.Blocks...)
		if k == 0 && h.off == c.off {
			pp.start = body.SrcRange.Start
		}
		if k == len(segs)-1 && h.end == c.end {
			pp.end = body.SrcRange.End
		}
	}
	return pp
}

// cutPoints returns the pieces of src, each about size bytes, ending
// after a line that is exactly "}".
func cutPoints(src []byte, size int) []piece {
	var out []piece
	off, line := 0, 1
	for off < len(src) {
		end := len(src)
		if len(src)-off > size+size/2 {
			// The first "\n}\n" at or after off+size.
			at := off + size
			i := bytes.Index(src[at:], []byte("\n}\n"))
			if i >= 0 {
				end = at + i + 3
			}
		}
		out = append(out, piece{off: off, end: end, line: line})
		line += bytes.Count(src[off:end], []byte("\n"))
		off = end
	}
	if len(out) == 0 {
		out = append(out, piece{off: 0, end: 0, line: 1})
	}
	return out
}
