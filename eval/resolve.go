package eval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/resources"
)

// lazyName is lazy's name in the function library.
const lazyName = lazy.FuncName

// reader is where the file and environment functions read: the host and
// the recipe directory (a host reader), or, for a value known at apply,
// the recipe files, listings and environment variables its plan carries,
// and the host for absolute paths.
type reader struct {
	// captured is set for a value known at apply: relative paths are read
	// from files and sets, environment variables from env.
	captured    bool
	files       map[string]*lazy.File
	sets        []lazy.FileSet
	env         map[string]*string
	templateDir string
	// root confines a host reader's relative paths (nil: not confined,
	// as hostReader's environment reads need no root).
	root *recipeRoot
}

// hostReader reads the host and toque's environment, with no recipe
// root: only for what reads no relative path (env, tests).
var hostReader = &reader{}

// newHostReader reads the host, and the recipes under the root of dir
// (its cookbook, or dir itself).
func newHostReader(dir string) *reader { return &reader{root: newRecipeRoot(dir)} }

func capturedReader(sc lazy.Scope) *reader {
	return &reader{captured: true, files: sc.Files, sets: sc.Sets, env: sc.Env, templateDir: sc.TemplateDir}
}

// read reads path p (relative: against baseDir).
func (rd *reader) read(baseDir, p string) ([]byte, string, error) {
	return rd.readFull(p, resolve(baseDir, p))
}

// readFull reads full, which the path p names (relative paths are
// recipe files: confined, or carried).
func (rd *reader) readFull(p, full string) ([]byte, string, error) {
	if !rd.captured || filepath.IsAbs(p) {
		if !filepath.IsAbs(p) && rd.root != nil {
			if err := rd.root.confine(p, full); err != nil {
				return nil, full, err
			}
		}
		return readFile(full)
	}
	f, err := rd.carried(full)
	if err != nil {
		return nil, full, err
	}
	switch {
	case f == nil:
		return nil, full, fmt.Errorf("no file %s", full)
	case f.Kind == lazy.KindDir:
		return nil, full, fmt.Errorf("%s is a directory, not a file", full)
	case f.Kind != lazy.KindFile:
		return nil, full, fmt.Errorf("%s is not a regular file", full)
	}
	return f.Content, full, nil
}

// carried is the recipe file full as the plan carries it (nil: it did
// not exist), or why it cannot be read.
func (rd *reader) carried(full string) (*lazy.File, error) {
	f, ok := rd.files[full]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s is a recipe file the plan did not carry (its path was not known when the plan was made); apply reads recipe files only from the plan", full)
	case f != nil && f.Error != "":
		return nil, carriedError(f.Error)
	}
	return f, nil
}

// carriedError is why a recipe path was refused at plan, as the plan
// carries it: apply gives the same words.
type carriedError string

func (e carriedError) Error() string { return string(e) }

// kind says what is at p (relative: against baseDir): a regular file, a
// directory, something else, or nothing (fs.ErrNotExist), through links;
// a recipe file of a value known at apply is what its plan carries.
func (rd *reader) kind(baseDir, p string) (lazy.FileKind, string, error) {
	full, err := rd.hostPath(baseDir, p)
	if !rd.captured || filepath.IsAbs(p) {
		if err != nil {
			return "", full, err
		}
		k, err := kindOf(full)
		return k, full, err
	}
	f, err := rd.carried(full)
	switch {
	case err != nil:
		return "", full, err
	case f == nil:
		return "", full, fs.ErrNotExist
	}
	return f.Kind, full, nil
}

// lookupEnv is os.LookupEnv, or what the plan read.
func (rd *reader) lookupEnv(name string) (string, bool, error) {
	if !rd.captured {
		v, ok := os.LookupEnv(name)
		return v, ok, nil
	}
	v, ok := rd.env[name]
	if !ok {
		return "", false, fmt.Errorf("environment variable %s was not read when the plan was made (its name was not known then); apply reads environment variables only from the plan", name)
	}
	if v == nil {
		return "", false, nil
	}
	return *v, true, nil
}

// LazyContext is the evaluation context of e at apply: node and host as
// its plan carries them, and the function library reading recipe files
// and environment variables from the plan and the host's files by
// absolute path.
func LazyContext(e *lazy.Expr) *hcl.EvalContext {
	node, h := cty.EmptyObjectVal, cty.EmptyObjectVal
	if e.Scope.Node != nil && e.Scope.Node.Value != cty.NilVal {
		node = e.Scope.Node.Value
	}
	if e.Scope.Host != nil && e.Scope.Host.Value != cty.NilVal {
		h = e.Scope.Host.Value
	}
	vars := map[string]cty.Value{"node": node, "host": h}
	if e.Scope.Each != nil && e.Scope.Each.Value != cty.NilVal {
		vars[EachVar] = e.Scope.Each.Value
	}
	if e.Scope.Count != nil && e.Scope.Count.Value != cty.NilVal {
		vars[CountVar] = e.Scope.Count.Value
	}
	vars[DataVar] = cty.EmptyObjectVal
	if e.Scope.Data != nil && e.Scope.Data.Value != cty.NilVal {
		vars[DataVar] = e.Scope.Data.Value
	}
	return &hcl.EvalContext{
		Variables: vars,
		Functions: functionsWith(e.Scope.Dir, capturedReader(e.Scope)),
	}
}

// EvaluateLazy evaluates e, a value known at apply, with what its plan
// carries (LazyContext). vars are a template's variables (a map or object;
// cty.NilVal for none). The value carries no marks.
func EvaluateLazy(e *lazy.Expr, vars cty.Value) (cty.Value, hcl.Diagnostics) {
	expr, diags := e.Parse()
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if calls := lazy.FindCalls(expr, lazyName); len(calls) > 0 {
		return cty.NilVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "lazy inside lazy", Detail: "A value known at apply holds no lazy(…).", Subject: calls[0].Range().Ptr()}}
	}
	ctx := LazyContext(e)
	if e.Template != "" {
		scope := map[string]cty.Value{}
		if vars != cty.NilVal && !vars.IsNull() {
			if !vars.IsWhollyKnown() || !(vars.Type().IsObjectType() || vars.Type().IsMapType()) {
				return cty.NilVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid template variables", Detail: "The template's variables are not a known map or object.", Subject: e.Range.Ptr()}}
			}
			for it := vars.ElementIterator(); it.Next(); {
				k, v := it.Element()
				scope[k.AsString()] = v
			}
		}
		for _, k := range []string{"node", "host"} {
			scope[k] = ctx.Variables[k]
		}
		if e.Template == lazy.TemplateFile {
			// A template file's functions are the library without
			// templatefile, its paths relative to the template (renderFile).
			ctx = &hcl.EvalContext{Variables: scope, Functions: baseFunctionsWith(e.Scope.Dir, capturedReader(e.Scope))}
		} else {
			// An inline template sees the instance's each and count too,
			// unless a variable has that name (as at plan).
			for _, k := range []string{EachVar, CountVar} {
				if _, shadowed := scope[k]; !shadowed {
					if v, ok := ctx.Variables[k]; ok {
						scope[k] = v
					}
				}
			}
			ctx = ctx.NewChild()
			ctx.Variables = scope
		}
	}
	v, d := expr.Value(ctx)
	for _, x := range d {
		x.Expression, x.EvalContext = nil, nil
	}
	if d.HasErrors() {
		return cty.NilVal, d
	}
	if v.ContainsMarked() {
		v, _ = v.UnmarkDeep()
	}
	if !v.IsWhollyKnown() {
		return cty.NilVal, d.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value not known", Detail: "The expression's value is not known even at apply.", Subject: e.Range.Ptr()})
	}
	return v, d
}

// Resolver evaluates values known only at apply: right before their
// resource converges (apply, through plan.Resolver), and at plan when no
// earlier resource of the plan could change what they read. It holds no
// state; the zero value is ready.
type Resolver struct{}

// Resolve returns desired with its lazy values (lazies, by property)
// evaluated, converted, normalised, validated and checked against the host
// as the recipe's own values are. Template contents are rendered after the
// other values (their variables may be lazy too). A failure is a
// *LazyError naming the property and pointing at its expression.
func (Resolver) Resolve(ctx context.Context, desired *resources.Resource, lazies map[string]*lazy.Expr) (*resources.Resource, error) {
	if len(lazies) == 0 {
		return desired, nil
	}
	s := desired.Schema()
	vals := make(map[string]cty.Value, len(desired.Values))
	for k, v := range desired.Values {
		vals[k] = v
	}
	names := make([]string, 0, len(lazies))
	for k := range lazies {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		ti, tj := lazies[names[i]].Template != "", lazies[names[j]].Template != ""
		if ti != tj {
			return tj
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := lazies[name]
		p := s.Property(name)
		if p == nil || e == nil {
			return nil, fmt.Errorf("%s: a value known at apply is given for %q, which type %q does not have", desired.Address(), name, s.Name)
		}
		fail := func(d hcl.Diagnostics, err error) (*resources.Resource, error) {
			return nil, &LazyError{Property: name, Range: e.Range, Diags: d, Err: err}
		}
		vars := cty.NilVal
		if e.Variables != "" {
			vars = vals[e.Variables]
			if vars != cty.NilVal && !vars.IsWhollyKnown() {
				return fail(nil, fmt.Errorf("its template's variables are not known"))
			}
		}
		v, d := EvaluateLazy(e, vars)
		if d.HasErrors() {
			return fail(d, nil)
		}
		if e.Template != "" {
			if v.IsNull() {
				return fail(nil, errors.New("the template rendered to null; a template must render text"))
			}
			sv, err := convert.Convert(v, cty.String)
			if err != nil {
				return fail(nil, fmt.Errorf("the template rendered %s, not text", v.Type().FriendlyName()))
			}
			v = sv
		}
		dv, d := decodeProperty(s, p, v, e.Range)
		if d.HasErrors() {
			return fail(d, nil)
		}
		if dv == cty.NilVal {
			delete(vals, name) // null: not set
			continue
		}
		if p.HostCheck != nil {
			if err := p.HostCheck(dv); err != nil {
				return fail(nil, err)
			}
		}
		vals[name] = dv
	}
	// Values not in lazies stay as they are: the planner resolves some of
	// a resource's values and leaves the others to apply.
	out := resources.NewResource(s, desired.Name, desired.Action, vals)
	out.Key = desired.Key
	return out, nil
}

// Guard evaluates a run-time expression guard: it must be true or false.
func (Resolver) Guard(ctx context.Context, e *lazy.Expr) (bool, error) {
	if e == nil {
		return false, errors.New("the guard's expression is missing from the plan")
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	v, d := EvaluateLazy(e, cty.NilVal)
	if d.HasErrors() {
		return false, &LazyError{Range: e.Range, Diags: d}
	}
	bv, err := convert.Convert(v, cty.Bool)
	if err != nil || bv.IsNull() {
		return false, &LazyError{Range: e.Range, Err: fmt.Errorf("a guard decided at apply by an expression must be true or false, not %s (a command's text must be known when the plan is made)", describeType(v))}
	}
	return bv.True(), nil
}

func describeType(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return v.Type().FriendlyName()
}
