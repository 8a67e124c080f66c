// Package views is every rendering toque prints: plans (text, Markdown,
// JSON), apply progress (text, and the JSON event stream), diagnostics
// (text and JSON), validate's result, the DOT graph, and the messages of
// the policy commands. Each command has a view interface with a human and,
// where the command has -json, a machine implementation, as OpenTofu's
// views and restic's ui do: core packages (plan, apply, eval, policy) hold
// no terminal code, and a wording change touches only this package.
//
// A view never decides anything: it gets values (a plan, a report,
// diagnostics) and prints them. Values that came from outside toque's own
// code (file content, command output, names in recipes) are escaped before
// they reach a terminal. The one thing it tells apart is the typed errors
// (errors.go): one table gives each its JSON kind, its wording and the exit
// status of a command that fails with it, so that the three cannot
// disagree.
package views

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/mattn/go-isatty"

	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/resources"
)

// Streams are where a view writes.
type Streams struct {
	Stdout io.Writer
	Stderr io.Writer
}

// View is what every view shares: the streams, whether each gets colour,
// the working directory (paths in diagnostics are shown relative to it)
// and the parsed files diagnostics show snippets of.
type View struct {
	Streams Streams
	// Color and ColorErr enable colour on Stdout and Stderr.
	Color, ColorErr bool
	// Workdir shortens paths in diagnostics; "" keeps them as they are.
	Workdir string
	// Files are the parsed recipe and policy files, by name, for source
	// snippets; a file not here is read from disk.
	Files map[string]*hcl.File
	// Registry holds the resource types of this build, whose schemas
	// plans are shown with. Required to show a plan.
	Registry *resources.Registry
}

// NewView makes a view over streams. Colour is on for a stream that is a
// terminal, unless noColor, NO_COLOR or TERM=dumb (getenv reads the
// environment; nil means os.Getenv).
func NewView(streams Streams, noColor bool, getenv func(string) string) *View {
	if getenv == nil {
		getenv = os.Getenv
	}
	off := noColor || getenv("NO_COLOR") != "" || getenv("TERM") == "dumb"
	return &View{Streams: streams, Color: !off && isTerminal(streams.Stdout), ColorErr: !off && isTerminal(streams.Stderr)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// Diagnostics prints diags on stderr, errors and warnings alike, with
// FILE:LINE:COL, a source snippet and the values the expression referred
// to.
func (v *View) Diagnostics(diags diag.Diagnostics) {
	if len(diags) == 0 {
		return
	}
	p := &diagPrinter{w: v.Streams.Stderr, files: v.Files, color: v.ColorErr, width: 100, wd: v.Workdir}
	p.print(diags)
}

// rel is name relative to the working directory when it lies inside it.
func (v *View) rel(name string) string {
	return relTo(v.Workdir, name)
}

func relTo(wd, name string) string {
	if wd == "" || name == "" {
		return name
	}
	if r, err := filepath.Rel(wd, name); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
		return r
	}
	return name
}
