package guard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
)

// OutputCap is how much of a guard's output (stdout then stderr, trimmed)
// an Outcome keeps: the last OutputCap bytes.
const OutputCap = 1024

// Outcome is what evaluating one guard gave.
type Outcome struct {
	Spec *Spec
	// Condition is the guard's condition: the exit code was in returns, or
	// the expression was true. Meaningless when Err is set.
	Condition bool
	// ExitCode is the script's exit code; nil for expressions and for
	// scripts that could not run or were killed.
	ExitCode *int
	Duration time.Duration
	// Output is the script's trimmed output (at most OutputCap bytes before
	// escaping), one line per line, with every other character that could
	// drive a terminal escaped (words.Printable): plans show it to
	// reviewers.
	Output string
	// Warning is set when the verdict deserves a second look: exit 127 (a
	// command not found), or exit 2 from a shell or test (a guard that could
	// not run as written, such as a syntax error), with the first line of
	// its standard error, escaped (words.Printable), unless the resource is
	// sensitive. The condition is still false.
	Warning string
	// Err is set when the guard could not be evaluated; there is no
	// verdict then.
	Err error
	// Cwd, Environment and User are what the script ran with (Environment
	// holds only the variables the guard set, not toque's own).
	Cwd         string
	Environment map[string]string
	User        string
	// Deferred marks the outcome of a guard decided at apply (Spec.AtApply)
	// where it does not decide: NotRun when it was not evaluated at all
	// (RunTimeLeave); otherwise Condition, or Err, says what it says now
	// (RunTimeShow), and an Err is not a failure.
	Deferred bool
	NotRun   bool
}

// RunTime says what EvaluateAllWith does with guards decided at apply
// (Spec.AtApply).
type RunTime int

const (
	// RunTimeLeave leaves them unevaluated (apply's pre-flight: what they
	// test may not exist before earlier resources converge).
	RunTimeLeave RunTime = iota
	// RunTimeShow evaluates them to say what they say now, deciding
	// nothing; one that cannot run now is not an error (the planner).
	RunTimeShow
	// RunTimeDecide evaluates them and lets them decide, as any guard:
	// right before the resource converges.
	RunTimeDecide
)

// Options say how EvaluateAllWith treats guards decided at apply.
type Options struct {
	RunTime RunTime
	// Expr evaluates a run-time expression guard's expression (Spec.Lazy);
	// nil: such a guard cannot be evaluated.
	Expr func(ctx context.Context, e *lazy.Expr) (bool, error)
}

// Skips reports whether the outcome skips the resource.
func (o *Outcome) Skips() bool { return o.Err == nil && Skips(o.Spec.Kind, o.Condition) }

// Run evaluates one guard. It never returns a verdict for a guard that
// could not run: interpreter, command, working directory or user missing,
// timeout, cancellation — those are Outcome.Err.
func Run(ctx context.Context, reg *resources.Registry, s *Spec, logger hclog.Logger) (o Outcome) {
	return run(ctx, reg, s, logger, Options{})
}

func run(ctx context.Context, reg *resources.Registry, s *Spec, logger hclog.Logger, opts Options) (o Outcome) {
	o = Outcome{Spec: s}
	defer func() {
		// A malformed stored guard must not take toque down.
		if v := recover(); v != nil {
			o.Condition, o.Err = false, fmt.Errorf("%s cannot run: malformed guard: %v", o.Spec.Describe(), v)
		}
	}()
	if s == nil {
		o.Spec = &Spec{}
		o.Err = errors.New("no guard to evaluate")
		return o
	}
	if s.Form == Expression && s.AtApply {
		if opts.Expr == nil {
			o.Err = fmt.Errorf("%s is decided at apply, and nothing here can evaluate it", s.Describe())
			return o
		}
		t0 := time.Now()
		c, err := opts.Expr(ctx, s.Lazy)
		o.Duration = time.Since(t0)
		if err != nil {
			o.Err = fmt.Errorf("%s: %w", s.Describe(), err)
			return o
		}
		o.Condition = c
		return o
	}
	if s.Form == Expression {
		if s.ExprValue == nil {
			o.Err = fmt.Errorf("%s: the expression's value is not known", s.Describe())
			return o
		}
		o.Condition = *s.ExprValue
		return o
	}
	if s.Form != Script {
		o.Err = fmt.Errorf("%s: unknown guard form %q", s.Describe(), s.Form)
		return o
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	spec, returns, err := processSpec(reg, s)
	if err != nil {
		o.Err = fmt.Errorf("%s cannot run: %w", s.Describe(), err)
		return o
	}
	spec.Logger = logger
	if s.Sensitive {
		spec = shellexec.Private(spec)
		spec.Sensitive = true
	}
	spec.Returns = returns
	if spec.OutputLimit == 0 {
		spec.OutputLimit = 8 * OutputCap
	}
	o.Cwd, o.User = spec.Dir, spec.User
	if len(spec.Env) > 0 {
		o.Environment = make(map[string]string, len(spec.Env))
		for k, v := range spec.Env {
			o.Environment[k] = v
		}
	}

	res, err := shellexec.Run(ctx, spec)
	if res != nil {
		o.Duration = res.Duration
		o.Output = printableLines(trimOutput(res.Stdout, res.Stderr))
	}
	var exitErr *shellexec.ExitError
	var timeout *shellexec.TimeoutError
	switch {
	case err == nil:
		o.Condition = true
	case errors.As(err, &exitErr) && res != nil && res.ExitCode >= 0:
		o.Condition = false
	case errors.As(err, &timeout):
		o.Err = fmt.Errorf("%s timed out after %s; its process group was killed. A guard must answer quickly: make it faster, or give it a longer timeout as a guard parameter", s.Describe(), timeout.Timeout)
		return o
	case errors.As(err, &exitErr):
		o.Err = fmt.Errorf("%s did not finish: %w", s.Describe(), err)
		return o
	default:
		o.Err = fmt.Errorf("%s cannot run: %w", s.Describe(), err)
		return o
	}
	if res != nil && res.ExitCode >= 0 {
		code := res.ExitCode
		o.ExitCode = &code
		switch {
		case slices.Contains(returns, code):
		case code == 127:
			o.Warning = "exit 127: a command inside the guard was not found"
		case code == 2:
			o.Warning = exit2Warning(spec, res.Stderr, s.Sensitive)
		}
	}
	logger.Debug("guard evaluated", "guard", s.Describe(), "condition", o.Condition, "exit_code", res.ExitCode, "duration", o.Duration)
	return o
}

// EvaluateAll evaluates guards in order (Decode's: every only_if, then
// every not_if) and stops at the first that decides to skip (a false
// only_if or a true not_if) or cannot run. decidedBy is the index of the
// deciding guard, -1 when none decided. On error the outcomes end with the
// guard that failed.
func EvaluateAll(ctx context.Context, reg *resources.Registry, specs []*Spec, logger hclog.Logger) (outcomes []Outcome, skip bool, decidedBy int, err error) {
	return EvaluateAllWith(ctx, reg, specs, logger, Options{})
}

// EvaluateAllWith is EvaluateAll, with guards decided at apply treated as
// o says: left out, shown, or deciding. Every guard has an outcome in
// order up to the one that decides; a guard that does not decide here has
// a Deferred one.
func EvaluateAllWith(ctx context.Context, reg *resources.Registry, specs []*Spec, logger hclog.Logger, opts Options) (outcomes []Outcome, skip bool, decidedBy int, err error) {
	outcomes = make([]Outcome, 0, len(specs))
	for i, s := range specs {
		if s != nil && s.AtApply && opts.RunTime != RunTimeDecide {
			out := Outcome{Spec: s, Deferred: true, NotRun: opts.RunTime == RunTimeLeave}
			if opts.RunTime == RunTimeShow {
				out = run(ctx, reg, s, logger, opts)
				out.Deferred = true
				if ctx.Err() != nil && out.Err != nil {
					return append(outcomes, out), false, -1, out.Err
				}
			}
			outcomes = append(outcomes, out)
			continue
		}
		o := run(ctx, reg, s, logger, opts)
		outcomes = append(outcomes, o)
		if o.Err != nil {
			return outcomes, false, -1, o.Err
		}
		if o.Skips() {
			return outcomes, true, i, nil
		}
	}
	return outcomes, false, -1, nil
}

// processSpec builds the process a script guard runs, and the exit codes
// that make its condition true.
func processSpec(reg *resources.Registry, s *Spec) (shellexec.Spec, []int, error) {
	vals := map[string]cty.Value{}
	for k, v := range s.Values {
		if v.Value == cty.NilVal || v.IsNull() {
			continue
		}
		if !v.IsWhollyKnown() {
			return shellexec.Spec{}, nil, fmt.Errorf("the value of %s is not known", k)
		}
		vals[k] = v.Value
	}
	returns, err := intList(vals["returns"])
	if err != nil {
		return shellexec.Spec{}, nil, fmt.Errorf("returns: %w", err)
	}
	if len(returns) == 0 {
		returns = []int{0}
	}
	timeout := DefaultTimeout
	if t := vals["timeout"]; t != cty.NilVal && t.Type() == cty.Number {
		f, _ := t.AsBigFloat().Float64()
		if f > 0 && !math.IsInf(f, 0) {
			timeout = time.Duration(f * float64(time.Second))
		}
	}

	if s.Interpreter == Default || s.Interpreter == "" {
		spec := shellexec.Spec{Argv: []string{"/bin/sh", "-c", s.Source}, Timeout: timeout}
		if v := vals["cwd"]; v != cty.NilVal {
			spec.Dir = v.AsString()
		}
		if v := vals["user"]; v != cty.NilVal {
			spec.User = v.AsString()
		}
		if v := vals["group"]; v != cty.NilVal {
			spec.Group = v.AsString()
		}
		if v := vals["environment"]; v != cty.NilVal {
			spec.Env = map[string]string{}
			for k, e := range v.AsValueMap() {
				spec.Env[k] = e.AsString()
			}
		}
		if v := vals["path"]; v != cty.NilVal {
			for _, e := range v.AsValueSlice() {
				spec.Path = append(spec.Path, e.AsString())
			}
		}
		if v := vals["umask"]; v != cty.NilVal {
			u, err := shellexec.ParseUmask(v.AsString())
			if err != nil {
				return shellexec.Spec{}, nil, err
			}
			spec.Umask = &u
		}
		return spec, returns, nil
	}

	if reg == nil {
		return shellexec.Spec{}, nil, fmt.Errorf("no resource types to find the guard interpreter %q in", s.Interpreter)
	}
	t, ok := reg.Lookup(s.Interpreter)
	if !ok {
		return shellexec.Spec{}, nil, fmt.Errorf("the guard interpreter %q is not a resource type of this build of toque", s.Interpreter)
	}
	runner, ok := t.(resources.Runner)
	if !ok {
		return shellexec.Spec{}, nil, fmt.Errorf("the resource type %q cannot be a guard interpreter: it does not run a process", s.Interpreter)
	}
	schema := t.Schema()
	for k := range vals {
		if schema.Property(k) == nil {
			return shellexec.Spec{}, nil, fmt.Errorf("the guard sets %q, which the %s type does not have", k, s.Interpreter)
		}
	}
	r := resources.NewResource(schema, s.Source, "run", vals)
	spec, err := safeSpec(runner, r)
	if err != nil {
		return shellexec.Spec{}, nil, err
	}
	if spec.Timeout == 0 {
		spec.Timeout = timeout
	}
	return spec, returns, nil
}

func safeSpec(r resources.Runner, res *resources.Resource) (spec shellexec.Spec, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the %s type panicked building the guard's command: %v", res.Type, v)
		}
	}()
	return r.CommandSpec(res)
}

func intList(v cty.Value) ([]int, error) {
	if v == cty.NilVal || v.IsNull() {
		return nil, nil
	}
	if v.Type() == cty.Number {
		v = cty.ListVal([]cty.Value{v})
	}
	if !v.CanIterateElements() {
		return nil, fmt.Errorf("want a list of exit codes, not %s", v.Type().FriendlyName())
	}
	var out []int
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.Type() != cty.Number {
			return nil, fmt.Errorf("want exit codes, not %s", e.Type().FriendlyName())
		}
		i, acc := e.AsBigFloat().Int64()
		if acc != 0 || i < 0 || i > 255 {
			return nil, fmt.Errorf("%s is not an exit code (0 to 255)", e.AsBigFloat().Text('g', -1))
		}
		out = append(out, int(i))
	}
	return out, nil
}

// errorExit2 names the programs whose exit 2 means "could not do as asked"
// rather than "no": POSIX shells (a syntax error, a misused builtin, a
// command that itself exited 2 last) and test (an invalid expression).
var errorExit2 = map[string]string{
	"sh": "a shell", "bash": "a shell", "dash": "a shell", "ash": "a shell",
	"ksh": "a shell", "mksh": "a shell", "zsh": "a shell", "busybox": "a shell",
	"test": "test", "[": "test",
}

// exit2Warning words the warning for a guard process that exited 2, or ""
// when its program does not use 2 for errors. It names the program's kind
// and quotes the first line of stderr (escaped, at most stderrLineMax
// characters), which holds what went wrong; for a sensitive resource it
// says the output is hidden instead.
func exit2Warning(spec shellexec.Spec, stderr string, sensitive bool) string {
	argv := spec.Argv
	if len(spec.Interpreter) > 0 {
		argv = spec.Interpreter
	}
	if len(argv) == 0 {
		return ""
	}
	prog := filepath.Base(argv[0])
	if prog == "env" && len(argv) > 1 {
		prog = filepath.Base(argv[1]) // interpreter = "/usr/bin/env bash"
	}
	what, ok := errorExit2[prog]
	if !ok {
		return ""
	}
	w := "exit 2: " + what + " exits 2 when it cannot run what it was given (a syntax error, an invalid test), so the guard may be broken rather than false"
	if sensitive {
		return w + " (its output is hidden: the resource is sensitive)"
	}
	if line := firstLine(stderr); line != "" {
		w += ": " + line
	}
	return w
}

// stderrLineMax bounds the stderr line a warning quotes, in characters.
const stderrLineMax = 200

// firstLine is the first non-blank line of s, trimmed, cut to
// stderrLineMax characters, with control characters escaped.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > stderrLineMax {
			l = string(r[:stderrLineMax]) + "…"
		}
		return words.Printable(l)
	}
	return ""
}

// trimOutput joins stdout and stderr, trimmed, keeping the last OutputCap
// bytes.
func trimOutput(stdout, stderr string) string {
	parts := []string{}
	for _, p := range []string{stdout, stderr} {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	out := strings.Join(parts, "\n")
	if len(out) > OutputCap {
		cut := len(out) - OutputCap
		for cut < len(out) && (out[cut]&0xC0) == 0x80 {
			cut++ // do not split a UTF-8 sequence
		}
		out = "…" + out[cut:]
	}
	return out
}

// printableLines escapes s line by line (words.Printable), keeping its line
// breaks.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = words.Printable(l)
	}
	return strings.Join(lines, "\n")
}

// SortedEnvNames lists an outcome's environment variable names, sorted.
func (o *Outcome) SortedEnvNames() []string {
	out := make([]string, 0, len(o.Environment))
	for k := range o.Environment {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
