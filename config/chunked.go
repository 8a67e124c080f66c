package config

import (
	"bytes"
	"runtime"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// A large recipe file (one generated file of 10,000 resources is 2.8 MB)
// is parsed in pieces, in parallel: hclsyntax lexes a whole file into one
// token slice before parsing it, on one CPU, and that was a third of a
// no-op plan's time. The pieces are cut at top-level block boundaries
// and the result is exactly the whole-file parse, or the whole file is
// parsed as before:
//
//   - A cut is made only after a line that is exactly "}": where a
//     top-level block written as `fmt` writes it ends. Such a line can
//     also end a nested block, or sit inside a heredoc or a comment; then
//     the piece before it does not end at the top level.
//   - Each piece is parsed from the position it has in the file (line,
//     column 1, byte offset), so every range is the whole-file parse's.
//   - A piece that does not end at the top level leaves something open (a
//     block, a heredoc, a comment, a string), which hclsyntax reports as
//     an error. So when any piece has any diagnostic — or a top-level
//     attribute, whose duplicates only the whole-file parse would see —
//     the pieces are thrown away and the whole file is parsed instead:
//     diagnostics are always those of the whole-file parse. Induction on
//     the pieces: the first starts at the top level; a piece that starts
//     there and parses without error ends there; so every cut is a
//     boundary between top-level items, where the whole-file parser
//     starts a new item from the same state.
//   - The blocks of the pieces are joined, in order, into the first
//     piece's body, whose range is widened to the whole file, so that the
//     file's Nav (which hclsyntax ties to that body) sees all of them.
//
// chunked_test.go checks the result against the whole-file parse on the
// fuzz corpus and on every recipe the tests use.

// chunkBytes is the size a file is cut into pieces of (about), and
// chunkMin the smallest file that is cut. Variables so that tests can cut
// small files.
var (
	chunkBytes = 64 << 10
	chunkMin   = 256 << 10
)

// parseNative is hclsyntax.ParseConfig, in parallel pieces for a large file.
func parseNative(src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	start := hcl.Pos{Line: 1, Column: 1, Byte: 0}
	if len(src) < chunkMin {
		return hclsyntax.ParseConfig(src, filename, start)
	}
	cuts := cutPoints(src, chunkBytes)
	if len(cuts) < 2 {
		return hclsyntax.ParseConfig(src, filename, start)
	}
	if f, ok := parsePieces(src, filename, cuts); ok {
		return f, nil
	}
	return hclsyntax.ParseConfig(src, filename, start)
}

// piece is one part of a file: src[off:end], starting at line.
type piece struct {
	off, end, line int
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
	return out
}

// parsePieces parses the pieces in parallel and joins them; ok is false
// when a piece has a diagnostic or a top-level attribute, or does not
// end where the next starts (see above).
func parsePieces(src []byte, filename string, cuts []piece) (*hcl.File, bool) {
	files := make([]*hcl.File, len(cuts))
	failed := make([]bool, len(cuts))
	work := make(chan int, len(cuts))
	for i := range cuts {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(cuts)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c := cuts[i]
				f, diags := hclsyntax.ParseConfig(src[c.off:c.end], filename, hcl.Pos{Line: c.line, Column: 1, Byte: c.off})
				body, ok := f.Body.(*hclsyntax.Body)
				if len(diags) > 0 || !ok || len(body.Attributes) > 0 {
					failed[i] = true
					continue
				}
				files[i] = f
			}
		}()
	}
	wg.Wait()
	for i := range cuts {
		if failed[i] {
			return nil, false
		}
	}
	first := files[0].Body.(*hclsyntax.Body)
	last := files[len(files)-1].Body.(*hclsyntax.Body)
	n := 0
	for _, f := range files {
		n += len(f.Body.(*hclsyntax.Body).Blocks)
	}
	blocks := make(hclsyntax.Blocks, 0, n)
	for _, f := range files {
		blocks = append(blocks, f.Body.(*hclsyntax.Body).Blocks...)
	}
	first.Blocks = blocks
	first.SrcRange = hcl.RangeBetween(first.SrcRange, last.SrcRange)
	first.EndRange = last.EndRange
	f := files[0]
	f.Bytes = src
	return f, true
}
