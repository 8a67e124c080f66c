// Package lazy holds what a plan keeps of a value known only at apply: the
// expression of a lazy(…) property value, or of a run-time expression
// guard, with everything it reads that is fixed when the plan is made
// (node attributes, host facts, environment variables, recipe files), so
// that apply evaluates exactly what the reviewer was shown.
//
// It is data, and checks of that data, only: package eval captures and
// evaluates an Expr; plan, guard and apply carry it without importing eval.
// It is not a second evaluator and holds no function library.
package lazy

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/typedvalue"
)

// FuncName is the name of the marker function: lazy(EXPR).
const FuncName = "lazy"

// Template kinds of an Expr.
const (
	// TemplateFile: Source is a template file's text (HCL template
	// syntax), rendered with the variables.
	TemplateFile = "file"
	// TemplateInline: Source is an inline template expression (a
	// template's content_template), evaluated with the variables in scope.
	TemplateInline = "inline"
)

// Expr is one value known only at apply.
type Expr struct {
	// Source is what apply evaluates: the expression inside lazy(…) as the
	// recipe writes it, or, for a template's rendered content (Template
	// set), the template's text.
	Source string `json:"source"`
	// Range is where Source starts and ends in its file; its Filename is
	// named as plans name recipe files (relative to the recipe directory).
	// Apply parses Source at Range's start, so that an evaluation error
	// points at the recipe's own line and column.
	Range hcl.Range `json:"range"`
	// Template is "" for an expression, TemplateFile or TemplateInline for
	// the content of a template: it is rendered with the value of the
	// property Variables names in scope, besides node and host.
	Template  string `json:"template,omitempty"`
	Variables string `json:"variables,omitempty"`
	// Scope is what the expression reads that was fixed at plan time.
	Scope Scope `json:"scope"`
}

// Scope is the part of an expression's scope a plan carries: apply
// evaluates the expression with these (node, host, data, each, count), and
// reads the host only through the functions that read absolute paths
// (HostReaders).
type Scope struct {
	// Dir is the directory relative paths resolve against: the recipe's
	// (a template file's own, for its text).
	Dir string `json:"dir"`
	// Node and Host are the parts of node and host the expression reads:
	// objects holding only those subtrees. nil reads none.
	Node *typedvalue.Value `json:"node,omitempty"`
	Host *typedvalue.Value `json:"host,omitempty"`
	// Each and Count are an instance's each (an object of key and value)
	// and count (an object of index), when the expression reads them: a
	// resource with for_each or count. nil reads none.
	Each  *typedvalue.Value `json:"each,omitempty"`
	Count *typedvalue.Value `json:"count,omitempty"`
	// Data is the part of the data blocks' answers the expression reads
	// (data.TYPE.NAME.result…), as they were read at plan: an object
	// holding only those subtrees; nil reads none. A sensitive data
	// block's answer is never here (eval refuses lazy(…) that reads one).
	Data *typedvalue.Value `json:"data,omitempty"`
	// Env holds the environment variables env() reads, as they were at
	// plan time; nil for one that was not set.
	Env map[string]*string `json:"env,omitempty"`
	// Files holds the recipe files the expression reads (relative paths,
	// resolved against Dir, as file, filebase64, fileexists, direxists and
	// templatefile see them), as they were at plan time, by absolute path;
	// nil for one that did not exist. Apply reads recipe files from here,
	// never from the recipe directory; absolute paths are the host's, read
	// when the expression is evaluated.
	Files map[string]*File `json:"files,omitempty"`
	// Sets holds the listings fileset() made of recipe directories (by a
	// relative path), as they were at plan time.
	Sets []FileSet `json:"sets,omitempty"`
	// TemplateDir is the directory templatefile() names templates from
	// when it is not Dir: a cookbook's templates/ (see TemplateName).
	TemplateDir string `json:"template_dir,omitempty"`
}

// File is a recipe file as a plan carries it: a regular file's content,
// a directory, something else, or why the path was refused.
type File struct {
	Content []byte   `json:"content"`
	Kind    FileKind `json:"kind,omitempty"`
	// Error is why the path could not be read at plan (it leads out of
	// the cookbook, say): reading it at apply fails the same way.
	Error string `json:"error,omitempty"`
}

// FileKind is what a carried path is.
type FileKind string

// The kinds of a carried path.
const (
	KindFile  FileKind = ""      // a regular file (through links)
	KindDir   FileKind = "dir"   // a directory
	KindOther FileKind = "other" // a device, a pipe, a socket
)

// FileSet is one fileset() listing a plan carries: the files under Dir
// whose paths (relative to Dir, slash-separated) match Pattern, sorted,
// or the error listing them gave.
type FileSet struct {
	Dir     string   `json:"dir"`
	Pattern string   `json:"pattern"`
	Matches []string `json:"matches"`
	Error   string   `json:"error,omitempty"`
}

// TemplateName is the name templatefile() or a template's source gives,
// as it reads from the templates directory: when that is not dir (a
// cookbook's templates/), a leading "templates/" is dropped, so that the
// name cookbooks wrote relative to their root names the same file.
func TemplateName(dir, templateDir, name string) string {
	if filepath.IsAbs(name) || filepath.Clean(templateDir) == filepath.Clean(dir) {
		return name
	}
	if rest, ok := strings.CutPrefix(filepath.ToSlash(name), "templates/"); ok {
		return filepath.FromSlash(rest)
	}
	return name
}

// Parse parses e's Source as it is evaluated: an expression, or a template
// file's text.
func (e *Expr) Parse() (hclsyntax.Expression, hcl.Diagnostics) {
	start := e.Range.Start
	if start.Line == 0 {
		start = hcl.Pos{Line: 1, Column: 1}
	}
	if e.Template == TemplateFile {
		return hclsyntax.ParseTemplate([]byte(e.Source), e.Range.Filename, start)
	}
	return hclsyntax.ParseExpression([]byte(e.Source), e.Range.Filename, start)
}

// Check verifies that e can be what the planner wrote: a source that
// parses, holds no lazy(…), and reads from node, host, data, each and
// count only what its scope carries. It does not evaluate anything.
func (e *Expr) Check() error {
	if e == nil {
		return fmt.Errorf("is empty")
	}
	if strings.TrimSpace(e.Source) == "" {
		return fmt.Errorf("has no expression")
	}
	switch e.Template {
	case "", TemplateFile, TemplateInline:
	default:
		return fmt.Errorf("is a template of no known kind (%q)", truncate(e.Template, 20))
	}
	if e.Template == "" && e.Variables != "" {
		return fmt.Errorf("names template variables without a template")
	}
	expr, diags := e.Parse()
	if diags.HasErrors() {
		return fmt.Errorf("does not parse: %s", diags[0].Summary)
	}
	if c := FindCalls(expr, FuncName); len(c) > 0 {
		return fmt.Errorf("holds lazy(…), which a value known at apply never does")
	}
	for _, tr := range Traversals(expr) {
		root := tr.RootName()
		var v *typedvalue.Value
		switch root {
		case "node":
			v = e.Scope.Node
		case "host":
			v = e.Scope.Host
		case "data":
			v = e.Scope.Data
			if e.Template == TemplateFile && v == nil {
				continue // a template variable
			}
		case "each", "count":
			if e.Template != "" {
				continue // an instance's (inline), or a template variable
			}
			v = e.Scope.Each
			if root == "count" {
				v = e.Scope.Count
			}
		default:
			if e.Template != "" {
				continue // a template variable
			}
			return fmt.Errorf("reads %q, which is neither node, host, data, each nor count", truncate(root, 40))
		}
		if v == nil || v.Value == cty.NilVal {
			return fmt.Errorf("reads %s, which its scope does not carry", root)
		}
	}
	for path, f := range e.Scope.Files {
		if !filepath.IsAbs(path) {
			return fmt.Errorf("carries a recipe file by a relative path (%q)", truncate(path, 60))
		}
		if f != nil {
			switch f.Kind {
			case KindFile, KindDir, KindOther:
			default:
				return fmt.Errorf("carries a recipe file of no known kind (%q)", truncate(string(f.Kind), 20))
			}
		}
	}
	for _, set := range e.Scope.Sets {
		if !filepath.IsAbs(set.Dir) {
			return fmt.Errorf("carries a listing of a directory by a relative path (%q)", truncate(set.Dir, 60))
		}
	}
	if e.Scope.TemplateDir != "" && !filepath.IsAbs(e.Scope.TemplateDir) {
		return fmt.Errorf("names its templates directory by a relative path (%q)", truncate(e.Scope.TemplateDir, 60))
	}
	return nil
}

// Traversals lists the variable traversals of expr (and of the templates
// inside it), as hcl's Variables does.
func Traversals(expr hcl.Expression) []hcl.Traversal {
	if expr == nil {
		return nil
	}
	return expr.Variables()
}

// FindCalls lists the calls of the function name inside expr, outermost
// first, in source order.
func FindCalls(expr hcl.Expression, name string) []*hclsyntax.FunctionCallExpr {
	se, ok := expr.(hclsyntax.Expression)
	if !ok {
		return nil
	}
	switch e := se.(type) {
	case *hclsyntax.LiteralValueExpr, *hclsyntax.ScopeTraversalExpr:
		return nil // (most values of a recipe: no walk)
	case *hclsyntax.TemplateExpr:
		if e.IsStringLiteral() {
			return nil
		}
	}
	var out []*hclsyntax.FunctionCallExpr
	hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		if c, ok := n.(*hclsyntax.FunctionCallExpr); ok && c.Name == name {
			out = append(out, c)
		}
		return nil
	})
	return out
}

// HostReaders are the functions that read the host when a value is
// evaluated at apply: given an absolute path, they read it then; a
// relative path is a recipe file, which the plan carries.
var HostReaders = []string{"file", "filebase64", "fileexists", "direxists", "fileset", "templatefile"}

// Reads is what a value known at apply, or a run-time guard, reads on the
// host, as far as toque can tell from its text.
type Reads struct {
	// Paths are the absolute paths it names, cleaned and sorted.
	Paths []string
	// Complete is set when Paths is all it reads: every file it reads is
	// named by a path known at plan. An incomplete read may read anything.
	Complete bool
	// Host is set when it reads the host when it is evaluated: a file by
	// an absolute path, or by a path not known at plan; a command always
	// does. An expression that does not reads only what its plan carries,
	// which nothing in the plan can change.
	Host bool
}

// Reads lists the absolute paths e names: those its host-reading calls
// (HostReaders) are given, and any other string of it that is an absolute
// path, each evaluated with its scope (a template such as
// "${node.app.root}/key" too). Complete says every host-reading call's
// path was known.
func (e *Expr) Reads() Reads {
	expr, diags := e.Parse()
	if diags.HasErrors() {
		return Reads{Host: true} // toque cannot tell: it may read anything
	}
	ctx := e.stringContext()
	paths := map[string]bool{}
	r := Reads{Complete: true}
	e.hostReads(expr, e.Scope.Dir, ctx, paths, &r, 0)
	// Every string: a template as a whole ("${node.app.root}/key"), a
	// literal that is not a part of one.
	parts := map[hclsyntax.Expression]bool{}
	hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hcl.Diagnostics {
		if t, ok := n.(*hclsyntax.TemplateExpr); ok {
			for _, p := range t.Parts {
				parts[p] = true
			}
		}
		return nil
	})
	hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hcl.Diagnostics {
		e, ok := n.(hclsyntax.Expression)
		if !ok || parts[e] {
			return nil
		}
		switch n.(type) {
		case *hclsyntax.TemplateExpr, *hclsyntax.LiteralValueExpr:
			if p, ok := stringValue(e, ctx); ok && filepath.IsAbs(p) && !strings.ContainsAny(p, "\n\x00") {
				paths[filepath.Clean(p)] = true
			}
		}
		return nil
	})
	r.Paths = sortedSet(paths)
	return r
}

// hostReads notes the host-reading calls of expr: each absolute path it
// reads (in paths, and r.Host), each path not known at plan (r.Complete
// unset, r.Host), and, for templatefile of a recipe file the plan carries,
// the template's own reads (depth levels deep at most; a template the
// plan does not carry may read anything).
func (e *Expr) hostReads(expr hclsyntax.Expression, dir string, ctx *hcl.EvalContext, paths map[string]bool, r *Reads, depth int) {
	for _, name := range HostReaders {
		for _, c := range FindCalls(expr, name) {
			if len(c.Args) == 0 {
				continue
			}
			p, ok := stringValue(c.Args[0], ctx)
			switch {
			case !ok:
				r.Complete, r.Host = false, true
			case filepath.IsAbs(p):
				paths[filepath.Clean(p)] = true
				r.Host = true
			case name == "templatefile":
				tdir := dir
				if depth == 0 && e.Scope.TemplateDir != "" {
					tdir = e.Scope.TemplateDir
				}
				full := filepath.Join(tdir, TemplateName(dir, tdir, p))
				f := e.Scope.Files[full]
				if f == nil || depth > 2 {
					r.Host = true
					continue
				}
				t, d := hclsyntax.ParseTemplate(f.Content, full, hcl.Pos{Line: 1, Column: 1})
				if d.HasErrors() {
					continue // it fails wherever it is evaluated
				}
				e.hostReads(t, filepath.Dir(full), &hcl.EvalContext{}, paths, r, depth+1)
			}
		}
	}
}

// stringContext evaluates strings of e with its scope and no functions.
func (e *Expr) stringContext() *hcl.EvalContext {
	vars := map[string]cty.Value{}
	if e.Scope.Node != nil && e.Scope.Node.Value != cty.NilVal {
		vars["node"] = e.Scope.Node.Value
	}
	if e.Scope.Host != nil && e.Scope.Host.Value != cty.NilVal {
		vars["host"] = e.Scope.Host.Value
	}
	return &hcl.EvalContext{Variables: vars}
}

// stringValue evaluates expr to a known string, without functions.
func stringValue(expr hclsyntax.Expression, ctx *hcl.EvalContext) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	v, diags := expr.Value(ctx)
	if diags.HasErrors() || v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// CommandReads lists the absolute paths a guard's command names (its words
// that start with "/", split at blanks and the shell's operators and
// quotes) and its working directory. A command reads what it likes:
// Complete is set only when it names at least one path, toque's best
// guess at what it tests.
func CommandReads(command, cwd string) Reads {
	paths := map[string]bool{}
	if filepath.IsAbs(cwd) {
		paths[filepath.Clean(cwd)] = true
	}
	words := strings.FieldsFunc(command, func(r rune) bool {
		return strings.ContainsRune(" \t\n;&|<>()'\"`$=,", r)
	})
	for _, w := range words {
		if strings.HasPrefix(w, "/") && len(w) > 1 {
			paths[filepath.Clean(w)] = true
		}
	}
	return Reads{Paths: sortedSet(paths), Complete: len(paths) > 0, Host: true}
}

// Related reports whether a thing at path a and one at path b can change
// each other: they are the same path, or one lies inside the other.
func Related(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	return a == b || within(a, b) || within(b, a)
}

// within reports whether p lies inside dir.
func within(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// OneLine is Source on one line, its runs of blanks and line breaks made
// one space, as plans show an expression.
func (e *Expr) OneLine() string {
	return strings.Join(strings.Fields(e.Source), " ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
