package command

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fatih/color"
	"github.com/hashicorp/hcl/v2"
	"github.com/mitchellh/go-wordwrap"
)

// diagPrinter renders diagnostics the way hcl's text writer does (summary,
// source snippet with the subject underlined, detail), but names the place
// as FILE:LINE:COL so editors and CI annotations can jump to it.
type diagPrinter struct {
	w     io.Writer
	files map[string]*hcl.File
	color bool
	width uint
	wd    string
}

func (p *diagPrinter) paint(attrs []color.Attribute, s string) string {
	if !p.color {
		return s
	}
	c := color.New(attrs...)
	c.EnableColor()
	return c.Sprint(s)
}

func (p *diagPrinter) rel(name string) string {
	if p.wd == "" {
		return name
	}
	if r, err := filepath.Rel(p.wd, name); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return name
}

func (p *diagPrinter) print(diags hcl.Diagnostics) {
	for _, d := range diags {
		p.one(d)
	}
}

func (p *diagPrinter) one(d *hcl.Diagnostic) {
	head := "Error: "
	attrs := []color.Attribute{color.FgRed, color.Bold}
	if d.Severity == hcl.DiagWarning {
		head = "Warning: "
		attrs = []color.Attribute{color.FgYellow, color.Bold}
	}
	fmt.Fprintf(p.w, "%s%s\n\n", p.paint(attrs, head), p.paint([]color.Attribute{color.Bold}, d.Summary))

	if d.Subject != nil {
		rng := *d.Subject
		where := fmt.Sprintf("%s:%d:%d", p.rel(rng.Filename), rng.Start.Line, rng.Start.Column)
		ctx := ""
		if f := p.files[rng.Filename]; f != nil {
			// The native syntax's navigator names the enclosing block.
			if nav, ok := f.Nav.(interface{ ContextString(int) string }); ok {
				if s := nav.ContextString(rng.Start.Byte); s != "" {
					ctx = ", in " + s
				}
			}
		}
		fmt.Fprintf(p.w, "  on %s%s:\n", where, ctx)
		p.snippet(rng, d.Context)
		fmt.Fprintln(p.w)
	}
	if d.Detail != "" {
		width := p.width
		if width == 0 {
			width = 100
		}
		fmt.Fprintln(p.w, wordwrap.WrapString(d.Detail, width))
		fmt.Fprintln(p.w)
	}
}

// snippet prints the source lines of rng (at most a few), underlining the
// subject.
func (p *diagPrinter) snippet(rng hcl.Range, context *hcl.Range) {
	src := p.source(rng.Filename)
	if src == nil {
		return
	}
	from, to := rng.Start.Line, rng.End.Line
	if context != nil && context.Filename == rng.Filename && context.Start.Line < from && from-context.Start.Line <= 3 {
		from = context.Start.Line
	}
	if to-from > 5 {
		to = from + 5
	}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if line < from {
			continue
		}
		if line > to {
			break
		}
		text := sc.Text()
		if p.color && line >= rng.Start.Line && line <= rng.End.Line {
			text = p.underline(text, line, rng)
		}
		fmt.Fprintf(p.w, "  %4d: %s\n", line, text)
	}
}

func (p *diagPrinter) underline(text string, line int, rng hcl.Range) string {
	start, end := 0, len(text)
	if line == rng.Start.Line {
		start = min(max(rng.Start.Column-1, 0), len(text))
	}
	if line == rng.End.Line {
		end = min(max(rng.End.Column-1, start), len(text))
	}
	return text[:start] + p.paint([]color.Attribute{color.Underline}, text[start:end]) + text[end:]
}

func (p *diagPrinter) source(name string) []byte {
	if f := p.files[name]; f != nil && f.Bytes != nil {
		return f.Bytes
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	return b
}
