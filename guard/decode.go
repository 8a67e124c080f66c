package guard

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
)

// Input is what Decode needs about one resource.
type Input struct {
	// OnlyIf, NotIf and GuardInterpreter are the resource's meta-arguments;
	// nil when absent.
	OnlyIf, NotIf, GuardInterpreter hcl.Expression
	// Parent is the evaluated resource the guards belong to.
	Parent *resources.Resource
	// Ctx evaluates the expressions (node, host, functions).
	Ctx *hcl.EvalContext
	// Registry resolves guard interpreter types.
	Registry *resources.Registry
	// Source returns the source text of a range (for an expression guard's
	// text); nil or "" falls back to "the expression at FILE:LINE".
	Source func(hcl.Range) string
	// Sensitive marks the parent resource sensitive: its guards' commands
	// and output are kept out of logs, errors and plan output.
	Sensitive bool
	// OnlyIfAtApply and NotIfAtApply mark every guard of OnlyIf or NotIf
	// as decided at apply: the recipe wrapped the attribute's value in
	// lazy(…), and OnlyIf or NotIf is lazy's argument. An expression guard
	// of theirs that cannot be evaluated now is not an error.
	OnlyIfAtApply, NotIfAtApply bool
	// Capture records the expression of a run-time expression guard with
	// what it reads that is fixed now (Spec.Lazy).
	Capture func(hcl.Expression) (*lazy.Expr, hcl.Diagnostics)
	// LazyProps names the parent's properties whose values are known only
	// at apply: a guard cannot inherit them.
	LazyProps map[string]bool
}

// DefaultInterpreter is the guard interpreter of a resource of type typ
// that sets no guard_interpreter: its own type when it runs a process
// (execute and the script family), "default" otherwise.
func DefaultInterpreter(reg *resources.Registry, typ string) string {
	if reg != nil {
		if t, ok := reg.Lookup(typ); ok {
			if _, ok := t.(resources.Runner); ok {
				return typ
			}
		}
	}
	return Default
}

// Decode reads a resource's guards and resolves each script guard down to
// what runs; expression guards are evaluated. The result is in Chef's
// order: every only_if in declaration order, then every not_if. A resource
// whose action is "nothing" is not guarded: Decode still checks its guards
// but returns none. Every problem is a diagnostic with a range; values not
// known yet (validate, without the host) are left unchecked.
func Decode(in Input) ([]*Spec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	if in.OnlyIf == nil && in.NotIf == nil && in.GuardInterpreter == nil {
		return nil, nil
	}
	d := &decoder{in: in}
	interp, known := d.interpreter()
	diags = append(diags, d.diags...)
	d.diags = nil

	var specs []*Spec
	var exprGuards []raw
	for _, g := range []struct {
		kind    Kind
		expr    hcl.Expression
		atApply bool
	}{{OnlyIf, in.OnlyIf, in.OnlyIfAtApply}, {NotIf, in.NotIf, in.NotIfAtApply}} {
		if g.expr == nil {
			continue
		}
		for _, raw := range d.values(g.kind, g.expr, g.atApply) {
			if raw.form == Expression {
				exprGuards = append(exprGuards, raw)
			}
			if s := d.resolve(raw, interp, known); s != nil {
				specs = append(specs, s)
			}
		}
	}
	d.interpreterWithExpressions(interp, known, exprGuards)
	diags = append(diags, d.diags...)
	if in.Parent != nil && in.Parent.Action == "nothing" {
		return nil, diags
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return specs, diags
}

type decoder struct {
	in    Input
	diags hcl.Diagnostics
}

// normalizeCommand is the execute type's own normalisation of a command
// (a program and its arguments), which runs an argv guard.
func (d *decoder) normalizeCommand(cmd cty.Value) (cty.Value, error) {
	if d.in.Registry != nil {
		if t, ok := d.in.Registry.Lookup("execute"); ok {
			if p := t.Schema().Property("command"); p != nil && p.Normalize != nil {
				return p.Normalize(cmd)
			}
		}
	}
	return cty.NilVal, errors.New("this build of toque has no execute type to run a command without a shell")
}

func (d *decoder) errorf(rng hcl.Range, summary, format string, a ...any) {
	d.diags = d.diags.Append(&hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, a...),
		Subject:  rng.Ptr(),
	})
}

func (d *decoder) parentType() string {
	if d.in.Parent == nil {
		return ""
	}
	return d.in.Parent.Type
}

// interpreters lists the valid guard_interpreter values.
func (d *decoder) interpreters() []string {
	out := []string{Default}
	if d.in.Registry == nil {
		return out
	}
	for _, n := range d.in.Registry.Names() {
		t, _ := d.in.Registry.Lookup(n)
		if _, ok := t.(resources.Runner); ok {
			out = append(out, n)
		}
	}
	return out
}

// interpreter evaluates guard_interpreter; known is false when its value is
// not known yet.
func (d *decoder) interpreter() (string, bool) {
	def := DefaultInterpreter(d.in.Registry, d.parentType())
	expr := d.in.GuardInterpreter
	if expr == nil {
		return def, true
	}
	v, diags := expr.Value(d.in.Ctx)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return "", false
	}
	if v.IsNull() {
		return def, true
	}
	if !v.IsKnown() {
		return "", false
	}
	if v.Type() != cty.String {
		d.errorf(expr.Range(), "Wrong type for guard_interpreter",
			"guard_interpreter must be a string naming the interpreter of script guards (%s), not %s.", words.Quoted(d.interpreters()), v.Type().FriendlyName())
		return "", false
	}
	name := v.AsString()
	if name == Default {
		return name, true
	}
	if d.in.Registry != nil {
		if t, ok := d.in.Registry.Lookup(name); ok {
			if _, ok := t.(resources.Runner); !ok {
				d.errorf(expr.Range(), "Not a guard interpreter",
					"The resource type %q does not run a process, so it cannot evaluate script guards. Use one of %s.", name, words.Quoted(d.interpreters()))
				return "", false
			}
			return name, true
		}
	}
	d.errorf(expr.Range(), "Unknown guard interpreter",
		"There is no guard interpreter %q.%s Use one of %s: \"default\" runs the guard with /bin/sh -c, the others run it as a resource of that type.", name, words.DidYouMean(name, d.interpreters()), words.Quoted(d.interpreters()))
	return "", false
}

// interpreterWithExpressions refuses a guard_interpreter that the recipe
// sets to something other than the resource's default alongside expression
// guards, as Chef refuses one with block guards ("guard_interpreter does not
// support blocks"): an expression is evaluated by toque, never run, so the
// setting would be silently ignored for it. Setting it to the default
// changes nothing and is accepted.
func (d *decoder) interpreterWithExpressions(interp string, known bool, exprs []raw) {
	expr := d.in.GuardInterpreter
	if expr == nil || !known || len(exprs) == 0 || interp == DefaultInterpreter(d.in.Registry, d.parentType()) {
		return
	}
	where := make([]string, len(exprs))
	for i, r := range exprs {
		where[i] = fmt.Sprintf("%s %s (%s:%d)", r.kind, r.source, r.rng.Filename, r.rng.Start.Line)
	}
	d.errorf(expr.Range(), "Guard interpreter with an expression guard",
		"guard_interpreter = %q says how script guards run (command strings and { command = … } objects), but %s %s an expression, which toque evaluates itself and never runs: guard_interpreter would be ignored for it. Remove guard_interpreter, or write the guard as a command.",
		interp, words.Join(where, ""), isAre(len(where)))
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// raw is one guard as written, before it is resolved.
type raw struct {
	kind   Kind
	form   Form
	rng    hcl.Range
	expr   hcl.Expression // the guard's own expression, when it has one
	source string
	value  *bool
	// params holds the guard object's values (command included).
	params map[string]cty.Value
	// argv is set for an argv guard ({ command = [PROGRAM, ARG…] }): the
	// list of strings, which may be unknown at validate.
	argv cty.Value
	// atApply marks a run-time guard.
	atApply bool
}

// values splits a guard attribute's value into guards: a string, a bool, an
// object, or a list of these. Run-time guards (atApply) are marked.
func (d *decoder) values(kind Kind, expr hcl.Expression, atApply bool) []raw {
	out := d.values1(kind, expr, atApply)
	for i := range out {
		out[i].atApply = atApply
	}
	return out
}

func (d *decoder) values1(kind Kind, expr hcl.Expression, atApply bool) []raw {
	v, diags := expr.Value(d.in.Ctx)
	if diags.HasErrors() && atApply {
		// A run-time guard that cannot be evaluated now (it reads what an
		// earlier resource makes): an expression, decided at apply.
		return []raw{{kind: kind, form: Expression, rng: expr.Range(), expr: expr, source: d.sourceText(expr.Range())}}
	}
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return nil
	}
	if v.IsNull() {
		d.errorf(expr.Range(), "Null guard",
			"%s is null. A guard must be a string (a command), a bool (an expression), an object { command = …, cwd = …, … }, or a list of these; remove %s to leave the resource unguarded.", kind, kind)
		return nil
	}
	if !v.IsKnown() {
		if v.Type() == cty.Bool {
			// An expression guard whose value validate cannot know yet.
			if r, ok := d.single(kind, expr, expr.Range(), v); ok {
				return []raw{r}
			}
		}
		return nil
	}
	t := v.Type()
	if t.IsListType() || t.IsTupleType() || t.IsSetType() {
		if opt := chefArgv(v); opt != "" {
			d.errorf(expr.Range(), "Guard list looks like a command and its arguments",
				"%s = [ … ] is a list of guards, each a command of its own, and %q is not a command: it reads like an argument, as in Chef's only_if [\"test\", \"-f\", path]. To run one program with arguments and no shell, write %s = { command = [ … ] }.", kind, opt, kind)
			return nil
		}
		var out []raw
		elems := elementExprs(expr)
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, ev := it.Element()
			var eexpr hcl.Expression
			if i < len(elems) {
				eexpr = elems[i]
			}
			rng := expr.Range()
			if eexpr != nil {
				rng = eexpr.Range()
			}
			if ev.IsNull() {
				d.errorf(rng, "Null guard", "Element %d of %s is null. Each guard in a list must be a string, a bool or an object.", i+1, kind)
				continue
			}
			et := ev.Type()
			if et.IsListType() || et.IsTupleType() || et.IsSetType() {
				d.errorf(rng, "Nested guard list", "Element %d of %s is a list. A guard list holds strings, bools and objects; write one flat list.", i+1, kind)
				continue
			}
			if r, ok := d.single(kind, eexpr, rng, ev); ok {
				out = append(out, r)
			}
		}
		return out
	}
	if r, ok := d.single(kind, expr, expr.Range(), v); ok {
		return []raw{r}
	}
	return nil
}

// chefArgv returns the first element, after the first, of a list of
// strings that starts with "-" and holds no space — an option, such as the
// "-f" of Chef's argv form only_if ["test", "-f", path] — or "" when there is
// none. As a command of its own such a word is always broken: sh -c reads
// it as an option of sh.
func chefArgv(v cty.Value) string {
	if !v.IsWhollyKnown() || v.LengthInt() < 2 {
		return ""
	}
	i := 0
	found := ""
	for it := v.ElementIterator(); it.Next(); i++ {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return ""
		}
		if w := e.AsString(); i > 0 && found == "" && strings.HasPrefix(w, "-") && !strings.ContainsAny(w, " \t\n") {
			found = w
		}
	}
	return found
}

// single reads one guard value. expr may be nil (an element of a list that
// is not a literal list).
func (d *decoder) single(kind Kind, expr hcl.Expression, rng hcl.Range, v cty.Value) (raw, bool) {
	r := raw{kind: kind, rng: rng, expr: expr}
	if !v.IsKnown() {
		if v.Type() == cty.Bool {
			r.form = Expression
			r.source = d.sourceText(rng)
			return r, true
		}
		return r, false
	}
	t := v.Type()
	switch {
	case t == cty.String:
		r.form = Script
		r.source = v.AsString()
		if strings.TrimSpace(r.source) == "" {
			d.errorf(rng, "Empty guard command", "%s is an empty string. Give a command to run, or remove the guard.", kind)
			return r, false
		}
		return r, true
	case t == cty.Bool:
		r.form = Expression
		r.source = d.sourceText(rng)
		b := v.True()
		r.value = &b
		return r, true
	case t.IsObjectType() || t.IsMapType():
		r.form = Script
		r.params = map[string]cty.Value{}
		misspeltCommand := false
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			key := k.AsString()
			if key != "command" && !slices.Contains(Params, key) {
				krng, _ := itemRanges(expr, key, rng)
				keys := append([]string{"command"}, Params...)
				misspeltCommand = misspeltCommand || words.Closest(key, keys) == "command"
				hint := words.DidYouMean(key, keys)
				if runTimeKeys[strings.ToLower(key)] {
					hint = fmt.Sprintf(" A guard is decided at apply by wrapping the whole of %s in lazy(…): %s = lazy({ command = … }), or %s = lazy(\"test -f …\").", kind, kind, kind)
				}
				d.errorf(krng, "Unknown guard parameter",
					"A guard object takes command and the guard parameters %s; %q is none of these.%s", words.Quoted(Params), key, hint)
				continue
			}
			if ev.IsNull() {
				continue
			}
			r.params[key] = ev
		}
		cmd, ok := r.params["command"]
		switch {
		case !ok && misspeltCommand:
			return r, false // the misspelt key's diagnostic says it all
		case !ok:
			d.errorf(rng, "Missing guard command", "A guard object needs command: a script (command = \"test -f x\") or a program and its arguments, run without a shell (command = [\"test\", \"-f\", \"x\"]).")
			return r, false
		case !cmd.IsKnown():
			r.source = ""
		case cmd.Type().IsListType() || cmd.Type().IsTupleType():
			_, vrng := itemRanges(expr, "command", rng)
			argv, err := d.normalizeCommand(cmd)
			if err != nil {
				d.errorf(vrng, "Invalid guard command", "A list command is a program and its arguments, run without a shell: %s.", err)
				return r, false
			}
			r.argv = argv
			if argv.IsWhollyKnown() {
				r.source = ArgvSource(stringsOf(argv))
			}
		case cmd.Type() != cty.String:
			_, vrng := itemRanges(expr, "command", rng)
			d.errorf(vrng, "Wrong type for guard command",
				"command must be a string (a script) or a list of strings (a program and its arguments, run without a shell), not %s.", cmd.Type().FriendlyName())
			return r, false
		default:
			r.source = cmd.AsString()
			if strings.TrimSpace(r.source) == "" {
				_, vrng := itemRanges(expr, "command", rng)
				d.errorf(vrng, "Empty guard command", "The guard's command is an empty string. Give a command to run, or remove the guard.")
				return r, false
			}
		}
		delete(r.params, "command")
		return r, true
	}
	d.errorf(rng, "Wrong type for guard",
		"%s must be a string (a command), a bool (an expression), an object { command = …, cwd = …, … }, or a list of these, not %s.", kind, t.FriendlyName())
	return r, false
}

func (d *decoder) sourceText(rng hcl.Range) string {
	if d.in.Source != nil {
		if s := strings.TrimSpace(d.in.Source(rng)); s != "" {
			return strings.Join(strings.Fields(s), " ")
		}
	}
	return fmt.Sprintf("(the expression at %s:%d)", rng.Filename, rng.Start.Line)
}

// elementExprs returns the element expressions of a literal list.
func elementExprs(expr hcl.Expression) []hcl.Expression {
	if t, ok := expr.(*hclsyntax.TupleConsExpr); ok {
		out := make([]hcl.Expression, len(t.Exprs))
		for i, e := range t.Exprs {
			out[i] = e
		}
		return out
	}
	return nil
}

// itemRanges finds the key and value ranges of key in a literal object,
// falling back to def.
func itemRanges(expr hcl.Expression, key string, def hcl.Range) (keyRange, valueRange hcl.Range) {
	o, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return def, def
	}
	for _, it := range o.Items {
		k := hcl.ExprAsKeyword(it.KeyExpr)
		if k == "" {
			if kv, diags := it.KeyExpr.Value(nil); !diags.HasErrors() && kv.Type() == cty.String && kv.IsKnown() && !kv.IsNull() {
				k = kv.AsString()
			}
		}
		if k == key {
			return it.KeyExpr.Range(), it.ValueExpr.Range()
		}
	}
	return def, def
}

// runTimeKeys are guard object keys that read like a way to decide a
// guard at apply; the one way is lazy(…), which their error says.
var runTimeKeys = map[string]bool{"lazy": true, "at_apply": true, "atapply": true, "run_time": true, "runtime": true, "defer": true, "deferred": true, "when": true, "decided_at": true}

// resolve turns a raw guard into a Spec, checking its parameters against
// the interpreter.
func (d *decoder) resolve(r raw, interp string, known bool) *Spec {
	s := &Spec{Kind: r.kind, Form: r.form, Source: r.source, ExprValue: r.value, Range: r.rng, Sensitive: d.in.Sensitive, AtApply: r.atApply}
	if r.form == Expression {
		if r.atApply {
			// Decided at apply by evaluating the expression then.
			s.ExprValue = nil
			if r.expr == nil || d.in.Capture == nil {
				d.errorf(r.rng, "Run-time guard is not a literal",
					"A guard decided at apply by an expression must be written where it stands: %s = lazy(EXPR), or a list literal of guards inside lazy(…).", r.kind)
				return s
			}
			e, diags := d.in.Capture(r.expr)
			d.diags = append(d.diags, diags...)
			s.Lazy = e
		}
		return s
	}
	s.Interpreter = interp
	params, ok := d.params(r)
	if !ok || !known {
		return s
	}
	if r.argv != cty.NilVal {
		return d.resolveArgv(r, s, interp, params)
	}
	vals := map[string]Value{}
	if interp == Default {
		for _, k := range []string{"flags", "architecture"} {
			if _, ok := params[k]; ok {
				_, vrng := itemRanges(r.expr, k, r.rng)
				d.errorf(vrng, "Guard parameter needs a guard interpreter",
					"%s applies to a guard interpreter that takes it (a script type); the default interpreter runs the guard with /bin/sh -c. Set guard_interpreter, or remove %s.", k, k)
				return s
			}
		}
		vals["command"] = Value{Value: cty.StringVal(r.source)}
		for k, v := range params {
			vals[k] = Value{Value: v}
		}
		if _, ok := vals["timeout"]; !ok {
			vals["timeout"] = Value{Value: cty.NumberIntVal(int64(DefaultTimeout.Seconds()))}
		}
		s.Values = vals
		return s
	}

	t, _ := d.in.Registry.Lookup(interp)
	schema := t.Schema()
	codeKey := "code"
	if schema.Property(codeKey) == nil {
		codeKey = "command"
	}
	if schema.Property(codeKey) == nil {
		d.errorf(r.rng, "Guard interpreter cannot take a script",
			"The resource type %q has neither code nor command, so it cannot run a guard string. Use another guard_interpreter.", interp)
		return s
	}
	return d.resolveRunner(r, s, schema, codeKey, cty.StringVal(r.source), params, true)
}

// resolveArgv resolves an argv guard ({ command = [PROGRAM, ARG…] }). It
// runs without a shell whatever the guard interpreter, as an execute
// resource with the list as its command: its guard parameters are
// execute's (cwd, environment, user, group, umask, path, timeout,
// returns). It inherits from the parent as a guard of the resource's guard
// interpreter would, unless that interpreter is "default", which inherits
// nothing.
func (d *decoder) resolveArgv(r raw, s *Spec, interp string, params map[string]cty.Value) *Spec {
	const runner = "execute"
	var t resources.Type
	if d.in.Registry != nil {
		t, _ = d.in.Registry.Lookup(runner)
	}
	if _, ok := t.(resources.Runner); !ok {
		_, vrng := itemRanges(r.expr, "command", r.rng)
		d.errorf(vrng, "Guard interpreter cannot take a command list",
			"A list command runs as an %s resource, which this build of toque lacks. Write the command as a string.", runner)
		return s
	}
	s.Interpreter = runner
	return d.resolveRunner(r, s, t.Schema(), "command", r.argv, params, interp != Default)
}

// resolveRunner fills s.Values for a guard run as a resource of schema's
// type: codeKey (code or command) set to code, then the parent's
// inheritable settings when inherit is set, then the guard parameters.
func (d *decoder) resolveRunner(r raw, s *Spec, schema *resources.Schema, codeKey string, code cty.Value, params map[string]cty.Value, inherit bool) *Spec {
	interp := s.Interpreter
	vals := map[string]Value{}
	cv, err := convertProp(schema.Property(codeKey), code)
	if err != nil {
		d.errorf(r.rng, "Invalid guard command", "As the %s of a %s guard: %s.", codeKey, interp, err)
		return s
	}
	vals[codeKey] = Value{Value: cv}

	// Inheritance: only from a parent that itself runs a process.
	parent := d.in.Parent
	inheritable := append([]string(nil), InheritedParams...)
	if interp == "powershell_script" {
		inheritable = append(inheritable, "architecture")
	}
	if schema.Property("interpreter") != nil {
		inheritable = append(inheritable, "interpreter")
	}
	if inherit && parent != nil && DefaultInterpreter(d.in.Registry, parent.Type) != Default {
		for _, k := range inheritable {
			if !parent.IsSet(k) || schema.Property(k) == nil {
				continue
			}
			if _, given := params[k]; given {
				s.Overridden = append(s.Overridden, k)
				continue
			}
			if d.in.LazyProps[k] {
				d.errorf(r.rng, "Guard inherits a value known only at apply",
					"The guard would inherit %s from %s, whose value is lazy(…), known only when the resource converges; what a guard runs with must be known when the plan is made. Give %s as a guard parameter: { command = …, %s = … }.", k, parent.Address(), k, k)
				continue
			}
			v := parent.Values[k]
			if v.IsWhollyKnown() {
				cv, err := convertProp(schema.Property(k), v)
				if err != nil {
					d.errorf(r.rng, "Cannot inherit guard parameter", "The guard cannot inherit %s from %s: %s. Give %s as a guard parameter.", k, parent.Address(), err, k)
					continue
				}
				v = cv
			}
			vals[k] = Value{Value: v}
			s.Inherited = append(s.Inherited, k)
		}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, vrng := itemRanges(r.expr, k, r.rng)
		p := schema.Property(k)
		if p == nil {
			d.errorf(vrng, "Guard parameter not supported",
				"The guard interpreter %q has no property %q, so the guard cannot set it.", interp, k)
			continue
		}
		v := params[k]
		if k == "umask" && v.IsKnown() && v.Type() == cty.String {
			// The canonical form, whatever the type writes.
			if u, err := shellexec.ParseUmask(v.AsString()); err == nil {
				v = cty.StringVal(fmt.Sprintf("%04o", u))
			}
		}
		cv, err := convertProp(p, v)
		if err != nil {
			d.errorf(vrng, "Invalid guard parameter", "The guard parameter %s for a %s guard: %s.", k, interp, err)
			continue
		}
		vals[k] = Value{Value: cv}
	}
	if _, ok := vals["timeout"]; !ok {
		if p := schema.Property("timeout"); p != nil {
			if cv, err := convertProp(p, cty.NumberIntVal(int64(DefaultTimeout.Seconds()))); err == nil {
				vals["timeout"] = Value{Value: cv}
			}
		}
	}
	if interp == "powershell_script" {
		if p := schema.Property("convert_boolean_return"); p != nil {
			vals["convert_boolean_return"] = Value{Value: cty.True}
		}
	}
	for _, p := range schema.Properties {
		if _, ok := vals[p.Name]; p.Required && !ok {
			d.errorf(r.rng, "Guard interpreter needs a property",
				"A %s guard needs %s, which the guard does not give and the resource does not pass on. Give it as a guard parameter: { command = …, %s = … }.", interp, p.Name, p.Name)
		}
	}
	s.Values = vals
	return s
}

// ArgvSource is how an argv guard reads in plans: its words quoted as a
// POSIX shell would need them to run the same argv (`test -f '/srv/my
// app'`), with control characters in ANSI-C quotes ($'a\nb'). It is only
// for reading: the guard runs the list itself, without a shell.
func ArgvSource(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellWord(a)
	}
	return strings.Join(q, " ")
}

func shellWord(a string) string {
	if a == "" {
		return "''"
	}
	plain, printable := true, true
	for _, r := range a {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			printable = false
		case !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)):
			plain = false
		}
	}
	switch {
	case !printable:
		var b strings.Builder
		b.WriteString("$'")
		for _, r := range a {
			switch {
			case r == '\\' || r == '\'':
				b.WriteRune('\\')
				b.WriteRune(r)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\t':
				b.WriteString(`\t`)
			case r < 0x20 || r == 0x7f:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r >= 0x80 && r <= 0x9f:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteString("'")
		return b.String()
	case plain:
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// stringsOf reads a known list of strings.
func stringsOf(v cty.Value) []string {
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e.AsString())
	}
	return out
}

// convertProp converts v to p's type, then normalises and validates it,
// like a resource's own property. Unknown values pass unchecked.
func convertProp(p *resources.Property, v cty.Value) (out cty.Value, err error) {
	defer func() {
		if x := recover(); x != nil {
			out, err = cty.NilVal, fmt.Errorf("internal error in the resource type: %v", x)
		}
	}()
	if p.Type != cty.NilType && p.Type != cty.DynamicPseudoType {
		cv, err := convert.Convert(v, p.Type)
		if err != nil {
			return cty.NilVal, fmt.Errorf("must be %s: %s", p.Type.FriendlyName(), err)
		}
		v = cv
	}
	if !v.IsWhollyKnown() {
		return v, nil
	}
	if p.Normalize != nil {
		nv, err := p.Normalize(v)
		if err != nil {
			return cty.NilVal, err
		}
		v = nv
	}
	if p.Validate != nil {
		if err := p.Validate(v); err != nil {
			return cty.NilVal, err
		}
	}
	return v, nil
}
