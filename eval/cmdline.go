package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
)

// AttributeArg is one -attr or -attr-file of the command line, parsed as
// far as the command can (the flag's syntax), not evaluated.
type AttributeArg struct {
	// Flag is config.OriginAttr or config.OriginAttrFile.
	Flag string

	// For -attr: Path is the attribute path (one key at least), Src the
	// argument's one-line source ("web.port=8080", named by Filename,
	// "-attr web.port", so that diagnostics can show it) and ValueStart
	// where the value begins in it.
	Path       []string
	Src        []byte
	Filename   string
	ValueStart hcl.Pos
	// Sensitive is set when the value calls sensitive(): diagnostics then
	// neither quote nor show the argument.
	Sensitive bool

	// For -attr-file: File is the parsed file (config.Parse), named as the
	// command line named it; JSON says which syntax it is in.
	File *hcl.File
	JSON bool

	// Dir is the directory file() and templatefile() resolve against: the
	// working directory for -attr, the file's own for -attr-file.
	Dir string
}

// AttrFlag parses one -attr argument, PATH=VALUE, as the command line gave
// it; dir is the working directory (file() in the value resolves against
// it). The path is keys joined by dots, with ["…"] around a key that
// holds a dot or a space: web.port, sites["example.com"].port. The value
// is parsed and evaluated by CommandLineAttributes. Its errors name the
// flag and say how to write it.
func AttrFlag(arg, dir string) (AttributeArg, error) {
	path, _, ok := strings.Cut(arg, "=")
	if !ok {
		return AttributeArg{}, fmt.Errorf("-attr %q has no \"=\": write -attr 'PATH=VALUE', as in -attr 'web.port=8080'", arg)
	}
	if strings.TrimSpace(path) == "" {
		return AttributeArg{}, fmt.Errorf("-attr %q has an empty path: write -attr 'PATH=VALUE', as in -attr 'web.port=8080'", arg)
	}
	keys, err := attrPath(path)
	if err != nil {
		return AttributeArg{}, fmt.Errorf("-attr %q: %w", arg, err)
	}
	n := len(path) + 1
	return AttributeArg{
		Flag:       config.OriginAttr,
		Path:       keys,
		Src:        []byte(arg),
		Filename:   config.OriginAttr + " " + strings.TrimSpace(path),
		ValueStart: hcl.Pos{Line: 1, Column: utf8.RuneCountInString(path) + 2, Byte: n},
		Sensitive:  strings.Contains(arg[n:], "sensitive("),
		Dir:        dir,
	}, nil
}

// attrPath parses an attribute path: web.port, sites["example.com"].port.
func attrPath(path string) ([]string, error) {
	tr, diags := hclsyntax.ParseTraversalAbs([]byte(strings.TrimSpace(path)), "", hcl.InitialPos)
	if diags.HasErrors() || len(tr) == 0 {
		return nil, fmt.Errorf("%s is not an attribute path: write its keys joined by dots (web.port), with [\"…\"] around a key that holds a dot or a space (sites[\"example.com\"].port)", strings.TrimSpace(path))
	}
	var keys []string
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			keys = append(keys, s.Name)
		case hcl.TraverseAttr:
			keys = append(keys, s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() != cty.String || !s.Key.IsKnown() {
				return nil, fmt.Errorf("%s indexes a list, and lists are set whole: give the whole list, as in -attr 'web.hosts=[\"a\", \"b\"]'", strings.TrimSpace(path))
			}
			keys = append(keys, s.Key.AsString())
		default:
			return nil, fmt.Errorf("%s is not an attribute path", strings.TrimSpace(path))
		}
	}
	return keys, nil
}

// AttrFile reads and parses one -attr-file: name as the command line gave
// it (diagnostics and provenance say it so), full the path to read. A
// name ending in .json is HCL's JSON syntax, anything else native HCL.
func AttrFile(name, full string) (AttributeArg, hcl.Diagnostics) {
	src, err := os.ReadFile(full)
	if err != nil {
		why := err.Error()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			why = "there is no such file"
		case errors.Is(err, fs.ErrPermission):
			why = "permission denied"
		}
		return AttributeArg{}, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read an attribute file",
			Detail:   fmt.Sprintf("-attr-file %s: %s (%s). A relative path is read from the working directory, or -chdir's.", name, why, full),
		}}
	}
	f, diags := config.Parse(src, name)
	if f == nil {
		f = &hcl.File{Body: hcl.EmptyBody(), Bytes: src}
	}
	if f.Bytes == nil {
		f.Bytes = src
	}
	return AttributeArg{Flag: config.OriginAttrFile, File: f, JSON: strings.HasSuffix(name, ".json"), Dir: filepath.Dir(full)}, diags
}

// CommandLineAttributes evaluates the -attr and -attr-file arguments, in
// order, into node attribute writes at config.LevelNormal, one per leaf
// (objects and maps are split key by key, lists are leaves), each with
// the range it was written at and the flag as its origin. It reports
// every error: a value that does not evaluate, a file that reads node or
// host, and a path that is a map in one argument and a value in another.
//
// An -attr value is an HCL expression when it is one of a number, true,
// false, null, a quoted string, a list, a map, a function call or a
// parenthesised expression; anything else (nginx, 1.7.0, /srv/www,
// 2024-01-02) is the string as written, as Terraform takes a -var of type
// string. A number written with a leading zero (0755) stays a string: it
// is a mode. A value that starts like an expression ([, {, ", (, a
// function call) must be one. Values may call functions (sensitive()
// among them) but read no variable: they are the same on every host.
//
// Attribute files hold top-level attributes (HCL) or members (JSON),
// whose values are evaluated the same way; in a JSON file every string is
// literal, as in chef-client -j and Terraform's .tfvars.json.
func CommandLineAttributes(args []AttributeArg) ([]config.AttributeWrite, hcl.Diagnostics) {
	w := &cliWriter{shapes: map[string]*cliShape{}}
	for _, a := range args {
		switch a.Flag {
		case config.OriginAttr:
			w.attr(a)
		case config.OriginAttrFile:
			w.file(a)
		}
	}
	return w.writes, w.diags
}

// cliWriter collects the writes of the command line and checks that each
// path keeps one shape across them.
type cliWriter struct {
	writes []config.AttributeWrite
	// shapes holds, by path (keys joined with NUL), whether the path was
	// given as a map or a value, and where first.
	shapes map[string]*cliShape
	diags  hcl.Diagnostics
}

type cliShape struct {
	isMap  bool
	rng    hcl.Range
	origin string
}

// exprLike matches a value that starts like an expression other than a
// bare word: a list, a map, a quoted string, parentheses, a heredoc or a
// function call.
var exprLike = regexp.MustCompile(`^\s*([\[{"(]|<<|[A-Za-z_][A-Za-z0-9_-]*\s*\()`)

// leadingZero matches a number written with a leading zero, as modes are.
var leadingZero = regexp.MustCompile(`^\s*0[0-9]`)

func (w *cliWriter) attr(a AttributeArg) {
	start := a.ValueStart.Byte
	if start > len(a.Src) {
		start = len(a.Src)
	}
	raw := a.Src[start:]
	end := a.ValueStart
	end.Column += len(raw)
	end.Byte += len(raw)
	whole := hcl.Range{Filename: a.Filename, Start: a.ValueStart, End: end}
	literal := func() {
		w.leaves(cty.StringVal(string(raw)), nil, a.Path, whole, config.OriginAttr)
	}
	if strings.TrimSpace(string(raw)) == "" {
		literal()
		return
	}
	expr, diags := hclsyntax.ParseExpression(raw, a.Filename, a.ValueStart)
	looksLike := exprLike.Match(raw)
	if diags.HasErrors() {
		if !looksLike {
			literal()
			return
		}
		quoted := "-attr '" + string(a.Src) + "'"
		if a.Sensitive {
			quoted = "-attr '" + strings.TrimPrefix(a.Filename, config.OriginAttr+" ") + "=…'"
		}
		for _, d := range diags {
			d.Detail = strings.TrimSpace(d.Detail + " The value of " + a.Filename + " starts like an HCL expression (a list, a map, a quoted string or a function call), so it must be one; quote it in the shell, as " + quoted + ", and check its brackets and quotes.")
		}
		w.diags = append(w.diags, diags...)
		return
	}
	if !isValueSyntax(expr, raw) && !looksLike {
		literal()
		return
	}
	if refs := expr.Variables(); len(refs) > 0 {
		w.diags = w.diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Variables not allowed",
			Detail: fmt.Sprintf("The value of %s refers to %s, but a command-line value cannot read node or host: it is the same on every host. Quote strings inside lists and maps: [\"%s\"].",
				a.Filename, traversalName(refs[0]), traversalName(refs[0])),
			Subject: refs[0].SourceRange().Ptr(),
		})
		return
	}
	w.expr(expr, a.Path, whole, config.OriginAttr, cliContext(a.Dir), a.Filename)
}

// isValueSyntax reports whether expr is written as a value rather than a
// word: a literal (not one with a leading zero), a quoted string or
// heredoc, a list, a map, a function call, parentheses, or a negative
// number.
func isValueSyntax(expr hclsyntax.Expression, raw []byte) bool {
	switch e := expr.(type) {
	case *hclsyntax.LiteralValueExpr:
		return !(e.Val.Type() == cty.Number && leadingZero.Match(raw))
	case *hclsyntax.TemplateExpr, *hclsyntax.TupleConsExpr, *hclsyntax.ObjectConsExpr,
		*hclsyntax.FunctionCallExpr, *hclsyntax.ParenthesesExpr:
		return true
	case *hclsyntax.UnaryOpExpr:
		_, lit := e.Val.(*hclsyntax.LiteralValueExpr)
		return lit && e.Op == hclsyntax.OpNegate
	}
	return false
}

// cliContext is what command-line values see: the functions, no
// variables.
func cliContext(dir string) *hcl.EvalContext {
	return &hcl.EvalContext{Functions: Functions(dir)}
}

func (w *cliWriter) file(a AttributeArg) {
	if a.File == nil || a.File.Body == nil {
		return
	}
	attrs, diags := a.File.Body.JustAttributes()
	for _, d := range diags {
		if strings.Contains(d.Summary, "block") {
			d.Detail = "An attribute file holds attributes only, a map per name: write web = { port = 8080 }, not a web { … } block."
		}
	}
	w.diags = append(w.diags, diags...)
	list := make([]*hcl.Attribute, 0, len(attrs))
	for _, at := range attrs {
		list = append(list, at)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Range.Start.Byte < list[j].Range.Start.Byte })
	var ctx *hcl.EvalContext // JSON: every string is literal
	if !a.JSON {
		ctx = cliContext(a.Dir)
	}
	for _, at := range list {
		if !a.JSON {
			if refs := at.Expr.Variables(); len(refs) > 0 {
				w.diags = w.diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Attribute files cannot read variables",
					Detail: fmt.Sprintf("%s refers to %s. An attribute file gives values, the same on every host: it cannot read node or host. Quote a string (\"%s\"), or read host.… in a recipe's attribute block instead.",
						at.Range.Filename, traversalName(refs[0]), traversalName(refs[0])),
					Subject: refs[0].SourceRange().Ptr(),
				})
				continue
			}
		}
		w.expr(at.Expr, []string{at.Name}, at.Range, config.OriginAttrFile, ctx, "-attr-file "+at.Range.Filename)
	}
}

// expr writes expr at path. A map written as syntax is split key by key,
// so each leaf keeps its own line; anything else is evaluated whole.
func (w *cliWriter) expr(expr hcl.Expression, path []string, rng hcl.Range, origin string, ctx *hcl.EvalContext, what string) {
	if _, isObject := expr.(*hclsyntax.ObjectConsExpr); isObject || ctx == nil {
		if pairs, d := hcl.ExprMap(expr); !d.HasErrors() && len(pairs) > 0 {
			for _, p := range pairs {
				kv, d := p.Key.Value(ctx)
				w.diags = append(w.diags, d...)
				if d.HasErrors() {
					continue
				}
				key, err := convert.Convert(kv, cty.String)
				if err != nil || !key.IsKnown() || key.IsNull() {
					w.diags = w.diags.Append(&hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid attribute key",
						Detail:   fmt.Sprintf("The keys of a map given by %s must be strings.", what),
						Subject:  p.Key.Range().Ptr(),
					})
					continue
				}
				sub := append(append([]string(nil), path...), key.AsString())
				w.expr(p.Value, sub, hcl.RangeBetween(p.Key.Range(), p.Value.Range()), origin, ctx, what)
			}
			return
		}
	}
	v, d := expr.Value(ctx)
	w.diags = append(w.diags, d...)
	if d.HasErrors() {
		return
	}
	if config.ValueTooDeep(v) {
		w.diags = w.diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Attribute nested too deep",
			Detail:   fmt.Sprintf("The value %s gives for %s nests more than %d levels deep.", what, pathString(path), config.MaxNestingDepth),
			Subject:  rng.Ptr(),
		})
		return
	}
	v, marked := unmarkSensitive(v)
	var sensitive [][]string
	for _, p := range marked {
		if sub, ok := attributePath(p); ok {
			sensitive = append(sensitive, sub)
		}
	}
	w.leaves(v, sensitive, path, rng, origin)
}

// leaves writes v at path, one write per leaf; sensitive lists the paths
// within v that were marked.
func (w *cliWriter) leaves(v cty.Value, sensitive [][]string, path []string, rng hcl.Range, origin string) {
	var walk func(v cty.Value, sub []string)
	walk = func(v cty.Value, sub []string) {
		full := append(append([]string(nil), path...), sub...)
		if config.IsMapLike(v) && v.LengthInt() > 0 {
			for it := v.ElementIterator(); it.Next(); {
				k, ev := it.Element()
				walk(ev, append(append([]string(nil), sub...), k.AsString()))
			}
			return
		}
		sens := false
		for _, m := range sensitive {
			n := min(len(m), len(sub))
			sens = sens || slices.Equal(m[:n], sub[:n])
		}
		w.write(config.AttributeWrite{Level: config.LevelNormal, Path: full, Value: v, Range: rng, Origin: origin, Sensitive: sens}, config.IsMapLike(v))
	}
	walk(v, nil)
}

// write records one leaf write, unless its path was given with another
// shape before (a map in one place, a value in another).
func (w *cliWriter) write(aw config.AttributeWrite, isMap bool) {
	here := cliShape{isMap: isMap, rng: aw.Range, origin: aw.Origin}
	for i := 1; i <= len(aw.Path); i++ {
		key := strings.Join(aw.Path[:i], "\x00")
		wantMap := i < len(aw.Path) || isMap
		prev := w.shapes[key]
		if prev != nil && prev.isMap != wantMap {
			w.diags = w.diags.Append(shapeConflict(aw.Path[:i], prev, wantMap, aw.Range))
			return
		}
	}
	for i := 1; i <= len(aw.Path); i++ {
		key := strings.Join(aw.Path[:i], "\x00")
		if w.shapes[key] == nil || i == len(aw.Path) {
			s := here
			s.isMap = i < len(aw.Path) || isMap
			w.shapes[key] = &s
		}
	}
	w.writes = append(w.writes, aw)
}

func shapeConflict(path []string, prev *cliShape, nowMap bool, rng hcl.Range) *hcl.Diagnostic {
	shape := func(isMap bool) string {
		if isMap {
			return "a map"
		}
		return "a value"
	}
	where := config.Leaf{Range: prev.rng, Origin: prev.origin}.Source(nil)
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Attribute given as a map and as a value",
		Detail: fmt.Sprintf("%s is %s here, but %s at %s. A path of the command line's attributes holds either a map or a value: change one of the two.",
			pathString(path), shape(nowMap), shape(prev.isMap), where),
		Subject: rng.Ptr(),
	}
}

// UnreadAttributes warns about each value of the command line (-attr,
// -attr-file) that nothing in the recipes reads: no resource property,
// guard, notification or template reads its path, or a map or list
// holding it. Each warning names the shortest unread path and suggests a
// path that is read when one is close. It cannot tell, and so stays quiet,
// when a recipe reads node as a whole or a template whose file it cannot
// name without the host.
func UnreadAttributes(cfg *config.Config, reg *resources.Registry, scope *Scope) hcl.Diagnostics {
	if len(cfg.CommandLine) == 0 {
		return nil
	}
	var reads [][]string
	for _, b := range cfg.Data {
		// A data block's arguments read node attributes too.
		if attrs, _ := b.Attributes(); attrs != nil {
			for _, a := range attrs {
				reads = append(reads, nodePaths(a.Expr)...)
			}
		}
	}
	for _, b := range cfg.Resources {
		reads = append(reads, NodePathsRead(b)...)
		t, ok := reg.Lookup(b.Type)
		if !ok {
			continue
		}
		tt, ok := t.(resources.Templated)
		if !ok {
			continue
		}
		r, known := templateReads(b, tt.TemplateProperties().Source, scope)
		if !known {
			return nil
		}
		reads = append(reads, r...)
	}
	related := func(p []string) bool {
		for _, r := range reads {
			n := min(len(r), len(p))
			if slices.Equal(r[:n], p[:n]) {
				return true
			}
		}
		return false
	}
	var diags hcl.Diagnostics
	seen := map[string]bool{}
	for _, w := range cfg.CommandLine {
		var unread []string
		for i := 1; i <= len(w.Path); i++ {
			if !related(w.Path[:i]) {
				unread = w.Path[:i]
				break
			}
		}
		if unread == nil {
			continue
		}
		key := strings.Join(unread, "\x00") + "\x00" + w.Range.Filename
		if seen[key] {
			continue
		}
		seen[key] = true
		diags = diags.Append(unreadWarning(unread, w, reads, related))
	}
	return diags
}

func unreadWarning(path []string, w config.AttributeWrite, reads [][]string, related func([]string) bool) *hcl.Diagnostic {
	var candidates []string
	seen := map[string]bool{}
	for _, r := range reads {
		if len(r) < len(path) {
			continue
		}
		c := pathString(r[:len(path)])
		if !seen[c] {
			seen[c] = true
			candidates = append(candidates, c)
		}
	}
	sort.Strings(candidates)
	hint := didYouMean(pathString(path), candidates)
	if path[0] == "node" && len(w.Path) > 1 && related(w.Path[1:]) {
		hint = fmt.Sprintf(" Attribute paths are written without node.: did you mean %s?", pathString(w.Path[1:]))
	}
	from := w.Range.Filename // -attr web.port
	if w.Origin == config.OriginAttrFile {
		from = config.OriginAttrFile + " " + w.Range.Filename
	}
	subject := w.Range.Ptr()
	if w.Sensitive && w.Origin == config.OriginAttr {
		subject = nil // its one line is the secret
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  "No recipe reads " + pathString(path),
		Detail:   fmt.Sprintf("%s sets %s, but no resource property, guard, notification or template reads it, so it changes nothing.%s", from, pathString(path), hint),
		Subject:  subject,
	}
}

// didYouMean is ` Did you mean node.web.port?` when a candidate other
// than given is close to it.
func didYouMean(given string, candidates []string) string {
	others := make([]string, 0, len(candidates))
	for _, c := range candidates {
		if c != given {
			others = append(others, c)
		}
	}
	if best := words.Closest(given, others); best != "" {
		return fmt.Sprintf(" Did you mean %s?", best)
	}
	return ""
}

// templateReads lists the node paths the template file of b reads, when b
// has one (srcProp is its type's source property, "" for none). known is
// false when the file cannot be named or read here (its name depends on
// the host, say): the caller cannot tell what it reads.
func templateReads(b *config.ResourceBlock, srcProp string, scope *Scope) (paths [][]string, known bool) {
	if srcProp == "" {
		return nil, true
	}
	attrs, _ := b.Attributes()
	a := attrs[srcProp]
	if a == nil {
		return nil, true
	}
	v, d := a.Expr.Value(unmarkingContext(scope.EvalContext(b.Dir)))
	if d.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil, false
	}
	src, full, err := newHostReader(b.Dir).readTemplate(b.Dir, v.AsString())
	if err != nil {
		return nil, false
	}
	expr, d := hclsyntax.ParseTemplate(src, full, hcl.InitialPos)
	if d.HasErrors() {
		return nil, false
	}
	return nodePaths(expr), true
}

// nodePaths lists the paths below node that expr's traversals read
// (node.web.port is ["web", "port"]; node alone is the empty path).
func nodePaths(expr hcl.Expression) [][]string { return rootPaths(expr, "node") }

// rootPaths lists the paths below the variable root that expr's
// traversals read, each as far as its steps are names or known string
// keys.
func rootPaths(expr hcl.Expression, root string) [][]string {
	var out [][]string
	for _, tr := range expr.Variables() {
		if tr.RootName() != root {
			continue
		}
		path := []string{}
		for _, step := range tr[1:] {
			if a, ok := step.(hcl.TraverseAttr); ok {
				path = append(path, a.Name)
			} else if ix, ok := step.(hcl.TraverseIndex); ok && ix.Key.Type() == cty.String && ix.Key.IsKnown() {
				path = append(path, ix.Key.AsString())
			} else {
				break
			}
		}
		out = append(out, path)
	}
	return out
}

// pathString writes an attribute path as an expression reads it:
// node.web.port, node.sites["example.com"].
func pathString(path []string) string {
	var b strings.Builder
	b.WriteString("node")
	for _, k := range path {
		if hclsyntax.ValidIdentifier(k) {
			b.WriteString("." + k)
		} else {
			fmt.Fprintf(&b, "[%q]", k)
		}
	}
	return b.String()
}

// PathString is pathString for the command: node.web.port.
func PathString(path []string) string { return pathString(path) }

func traversalName(tr hcl.Traversal) string {
	var b strings.Builder
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		default:
			b.WriteString("[…]")
		}
	}
	return b.String()
}
