package views

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/fatih/color"
	"github.com/hashicorp/hcl/v2"
	"github.com/mitchellh/go-wordwrap"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/diag"
)

// diagPrinter renders diagnostics the way hcl's text writer does (summary,
// source snippet with the subject underlined, the values the expression
// referred to, detail), but names the place as FILE:LINE:COL so editors
// and CI annotations can jump to it. A sourceless diagnostic without detail
// (a plain error) is one line: "Error: MESSAGE".
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

func (p *diagPrinter) print(diags diag.Diagnostics) {
	for _, d := range diags {
		p.one(d)
	}
}

func (p *diagPrinter) one(d *diag.Diagnostic) {
	d = reworded(worded(d))
	head := "Error: "
	attrs := []color.Attribute{color.FgRed, color.Bold}
	if d.Severity == diag.Warning {
		head = "Warning: "
		attrs = []color.Attribute{color.FgYellow, color.Bold}
	}
	summary := Escape(d.Summary)
	if d.Subject == nil && d.Detail == "" {
		fmt.Fprintf(p.w, "%s%s\n", p.paint(attrs, head), summary)
		return
	}
	if kindOf(d) == KindNeedsRoot {
		// One line per resource: what needs root, and where it is.
		line := strings.TrimSuffix(d.Detail, ".")
		if d.Subject != nil {
			line += fmt.Sprintf(" (%s:%d)", relTo(p.wd, d.Subject.Filename), d.Subject.Start.Line)
		}
		fmt.Fprintf(p.w, "%s%s\n", p.paint(attrs, head+"needs root: "), EscapeLine(line))
		return
	}
	fmt.Fprintf(p.w, "%s%s\n\n", p.paint(attrs, head), p.paint([]color.Attribute{color.Bold}, summary))

	if d.Subject != nil {
		rng := *d.Subject
		where := fmt.Sprintf("%s:%d:%d", relTo(p.wd, rng.Filename), rng.Start.Line, rng.Start.Column)
		ctx := ""
		if f := p.files[rng.Filename]; f != nil {
			// The native syntax's navigator names the enclosing block.
			if nav, ok := f.Nav.(interface{ ContextString(int) string }); ok {
				if s := nav.ContextString(rng.Start.Byte); s != "" {
					ctx = ", in " + s
				}
			}
		}
		fmt.Fprintf(p.w, "  on %s%s:\n", Escape(where), Escape(ctx))
		p.snippet(rng, d.Context)
		if lines := valueLines(d); len(lines) > 0 {
			fmt.Fprintln(p.w, "    ├────────────────")
			for _, l := range lines {
				fmt.Fprintf(p.w, "    │ %s\n", Escape(l))
			}
		}
		fmt.Fprintln(p.w)
	}
	if d.Detail != "" {
		width := p.width
		if width == 0 {
			width = 100
		}
		fmt.Fprintln(p.w, wrapDetail(Escape(d.Detail), width))
		fmt.Fprintln(p.w)
	}
}

// goisms are phrases of Go and of libraries that reach messages through
// wrapped errors, with what a person reads instead.
var goisms = strings.NewReplacer(
	"context canceled", "interrupted",
	"context deadline exceeded", "timed out",
	"must have 1 labels", "must have one label",
)

// reworded is d with library phrasing replaced (see goisms).
func reworded(d *diag.Diagnostic) *diag.Diagnostic {
	s, t := goisms.Replace(d.Summary), goisms.Replace(d.Detail)
	if s == d.Summary && t == d.Detail {
		return d
	}
	out := *d
	out.Summary, out.Detail = s, t
	return &out
}

// wrapDetail wraps the paragraphs of a detail at width, but keeps lines
// that start with a space as they are: they are lists (every difference of
// a stale plan) whose paths and values must stay whole.
func wrapDetail(s string, width uint) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, " ") {
			lines[i] = wordwrap.WrapString(l, width)
		}
	}
	return strings.Join(lines, "\n")
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
		r := rng
		if len(text) > maxSnippetLine {
			// A very long line (a generated recipe, a minified JSON file)
			// is shown around the subject only.
			text, r = window(text, line, rng)
		}
		if p.color && line >= r.Start.Line && line <= r.End.Line {
			text = p.underline(text, line, r)
		} else {
			text = Escape(text)
		}
		fmt.Fprintf(p.w, "  %4d: %s\n", line, text)
	}
}

// maxSnippetLine is the longest source line a snippet shows in full.
const maxSnippetLine = 160

// window cuts a long line to maxSnippetLine bytes around the subject's
// column on that line, marking the cuts with "…", and moves rng's columns
// to match.
func window(text string, line int, rng hcl.Range) (string, hcl.Range) {
	col := 0
	if line == rng.Start.Line {
		col = rng.Start.Column - 1
	}
	from := max(0, min(col-maxSnippetLine/2, len(text)-maxSnippetLine))
	to := min(len(text), from+maxSnippetLine)
	out := text[from:to]
	shift := from
	if from > 0 {
		out = "…" + out
		shift -= len("…")
	}
	if to < len(text) {
		out += "…"
	}
	r := rng
	if r.Start.Line == line {
		r.Start.Column = max(1, r.Start.Column-shift)
	}
	if r.End.Line == line {
		r.End.Column = max(r.Start.Column, min(r.End.Column-shift, len(out)+1))
	} else if r.Start.Line == line {
		r.End.Column = len(out) + 1
	}
	return out, r
}

func (p *diagPrinter) underline(text string, line int, rng hcl.Range) string {
	start, end := 0, len(text)
	if line == rng.Start.Line {
		start = min(max(rng.Start.Column-1, 0), len(text))
	}
	if line == rng.End.Line {
		end = min(max(rng.End.Column-1, start), len(text))
	}
	return Escape(text[:start]) + p.paint([]color.Attribute{color.Underline}, Escape(text[start:end])) + Escape(text[end:])
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

// valueLines says what the variables d's expression refers to held when it
// was evaluated ("node.web.port is 8080"), as hcl's own writer does: the
// same expression is often evaluated for many resources, and the values
// tell them apart. A sensitive diagnostic shows none; a value that is
// unknown (validate, without the host) or fails to resolve is left out.
func valueLines(d *diag.Diagnostic) []string {
	if d.Expression == nil || d.EvalContext == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, tr := range d.Expression.Variables() {
		name := traversalString(tr)
		if seen[name] {
			continue
		}
		seen[name] = true
		if d.Sensitive {
			out = append(out, name+" has a sensitive value")
			continue
		}
		v, diags := tr.TraverseAbs(d.EvalContext)
		if diags.HasErrors() || !v.IsKnown() {
			continue
		}
		out = append(out, name+" is "+describeValue(v))
	}
	sort.Strings(out)
	return out
}

// traversalString writes a traversal as a recipe would: node.web["port"].
func traversalString(tr hcl.Traversal) string {
	var b strings.Builder
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			b.WriteString("[" + DisplayKey(s.Key) + "]")
		default:
			b.WriteString("[…]")
		}
	}
	return b.String()
}

// describeValue is a short description of v for a diagnostic: the value
// itself for a bool, number or short string, its shape otherwise.
func describeValue(v cty.Value) string {
	if v.IsMarked() {
		return "a sensitive value"
	}
	ty := v.Type()
	switch {
	case v.IsNull():
		return "null"
	case ty == cty.Bool:
		if v.True() {
			return "true"
		}
		return "false"
	case ty == cty.Number:
		return v.AsBigFloat().Text('g', 15)
	case ty == cty.String:
		s := v.AsString()
		if len(s) > 60 || strings.ContainsAny(s, "\n") {
			return fmt.Sprintf("a string of %d bytes", len(s))
		}
		return fmt.Sprintf("%q", s)
	case ty.IsCollectionType() || ty.IsTupleType():
		n := v.LengthInt()
		noun := "elements"
		if n == 1 {
			noun = "element"
		}
		return fmt.Sprintf("%s with %d %s", ty.FriendlyName(), n, noun)
	case ty.IsObjectType():
		names := make([]string, 0, len(ty.AttributeTypes()))
		for k := range ty.AttributeTypes() {
			names = append(names, k)
		}
		sort.Strings(names)
		switch len(names) {
		case 0:
			return "an object with no attributes"
		case 1, 2, 3:
			return "an object with attributes " + strings.Join(names, ", ")
		}
		return fmt.Sprintf("an object with %d attributes", len(names))
	}
	return ty.FriendlyName()
}

// DisplayKey writes an index key as a recipe would.
func DisplayKey(k cty.Value) string {
	if !k.IsKnown() || k.IsNull() {
		return "…"
	}
	switch k.Type() {
	case cty.String:
		return fmt.Sprintf("%q", k.AsString())
	case cty.Number:
		return k.AsBigFloat().Text('g', 15)
	}
	return "…"
}

// JSONDiagnostic is a diagnostic in every -json output (validate -json,
// plan -json, show -json, apply -json's events): see
// docs/diagnostics-json.md.
type JSONDiagnostic struct {
	Severity string       `json:"severity"`
	Summary  string       `json:"summary"`
	Detail   string       `json:"detail,omitempty"`
	Kind     string       `json:"kind,omitempty"`
	Range    *JSONRange   `json:"range,omitempty"`
	Snippet  *JSONSnippet `json:"snippet,omitempty"`
}

// JSONRange is where a diagnostic points: the start line and column (as
// the text form's FILE:LINE:COL) and the full extent.
type JSONRange struct {
	Filename string  `json:"filename"`
	Line     int     `json:"line"`
	Column   int     `json:"column"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONPos is a position in a file; Byte is the offset from its start.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// JSONSnippet is the source the text form shows, and the values of the
// variables its expression referred to (left out for sensitive resources).
type JSONSnippet struct {
	// Context names the enclosing block ("file \"/x\""), "" when unknown.
	Context   string   `json:"context"`
	Code      string   `json:"code"`
	StartLine int      `json:"start_line"`
	Values    []string `json:"values"`
}

// JSONDiagnostics converts diags for machine output. Paths are relative
// to the view's working directory, as in the text form.
func (v *View) JSONDiagnostics(diags diag.Diagnostics) []JSONDiagnostic {
	out := make([]JSONDiagnostic, 0, len(diags))
	for _, d := range diags {
		d = reworded(worded(d))
		jd := JSONDiagnostic{Severity: d.Severity.String(), Summary: d.Summary, Detail: d.Detail, Kind: kindOf(d)}
		if r := d.Subject; r != nil {
			jd.Range = &JSONRange{
				Filename: v.rel(r.Filename), Line: r.Start.Line, Column: r.Start.Column,
				Start: JSONPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:   JSONPos{r.End.Line, r.End.Column, r.End.Byte},
			}
			jd.Snippet = v.jsonSnippet(d)
		}
		out = append(out, jd)
	}
	return out
}

func (v *View) jsonSnippet(d *diag.Diagnostic) *JSONSnippet {
	p := &diagPrinter{files: v.Files}
	src := p.source(d.Subject.Filename)
	if src == nil {
		return nil
	}
	s := &JSONSnippet{StartLine: d.Subject.Start.Line, Values: valueLines(d)}
	if s.Values == nil {
		s.Values = []string{}
	}
	if f := v.Files[d.Subject.Filename]; f != nil {
		if nav, ok := f.Nav.(interface{ ContextString(int) string }); ok {
			s.Context = nav.ContextString(d.Subject.Start.Byte)
		}
	}
	lines := strings.Split(string(src), "\n")
	from, to := d.Subject.Start.Line, min(d.Subject.End.Line, d.Subject.Start.Line+5)
	if from >= 1 && from <= len(lines) {
		s.Code = strings.Join(lines[from-1:min(to, len(lines))], "\n")
	}
	return s
}
