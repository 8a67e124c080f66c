package commands

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// This file holds the execute type and what it shares with the script
// family (script.go, powershell.go): the properties that say how a process
// runs, Load and Plan (which only look at `creates`), and Converge (which
// runs the process the type's CommandSpec describes).
//
// None of these properties is desired state: a command cannot say what it
// will change, so nothing is compared. They are all NonState, so Load sees
// them; it reads only whether `creates` exists.

// DefaultCommandTimeout is the timeout of execute and script resources that
// set none, in seconds: Chef's 3600.
const DefaultCommandTimeout = 3600

// outputTailLines is how many lines of each output stream a failure shows.
const outputTailLines = 20

// outputTailBytes bounds the tail a failure shows, per stream.
const outputTailBytes = 4 << 10

// execType is the built-in "execute" type: one command, as a string run by
// /bin/sh -c or as a list run without a shell.
type execType struct{ runType }

// ExecuteType returns the built-in "execute" resource type.
func ExecuteType() resources.Type {
	props := []*resources.Property{{
		Name:         "command",
		Type:         cty.DynamicPseudoType,
		NameProperty: true,
		Required:     true,
		Normalize:    NormalizeCommand,
		Description:  "The command: a string runs under /bin/sh -c, a list of strings runs without a shell; defaults to the block label.",
	}}
	t := &execType{runType{schema: &resources.Schema{
		Name:          "execute",
		Description:   "Runs a command.",
		Properties:    append(props, runProperties()...),
		Actions:       []string{"run"},
		DefaultAction: "run",
	}}}
	t.self = t
	return t
}

// runType is what every command type shares: its schema, its reading
// (whether `creates` exists), its plan (run, unless `creates` exists) and
// its one step, which runs the process the type's CommandSpec describes
// (self, the type that embeds it).
type runType struct {
	schema *resources.Schema
	self   resources.Runner
}

func (t *runType) Schema() *resources.Schema { return t.schema }

func (t *runType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	return loadCreates(ctx, r)
}

func (t *runType) Plan(_ string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	return planRun(desired, current)
}

// Steps run the process.
func (t *runType) Steps() resources.Steps {
	return resources.Steps{Run: func(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
		return convergeRun(ctx, env, t.self, desired)
	}}
}

// CommandSpec is the process of an execute resource: `/bin/sh -c COMMAND`
// for a string, the list itself (no shell) for a list.
func (t *execType) CommandSpec(r *resources.Resource) (shellexec.Spec, error) {
	spec, err := baseSpec(r)
	if err != nil {
		return spec, err
	}
	if !r.IsSet("command") {
		return spec, errors.New("command is not set")
	}
	cmd, err := NormalizeCommand(r.Values["command"])
	if err != nil {
		return spec, err
	}
	if cmd.Type() == cty.String {
		spec.Argv = []string{"/bin/sh", "-c", cmd.AsString()}
	} else {
		spec.Argv = props.StringList(cmd)
	}
	return spec, nil
}

// runProperties are the properties execute and every script type share
// (all but `command`). Each call returns new values.
func runProperties() []*resources.Property {
	return []*resources.Property{
		{Name: "creates", Type: cty.String, NonState: true, Validate: validateCreates,
			Description: "A path: when it exists the resource does nothing. A relative path is taken relative to cwd."},
		{Name: "cwd", Type: cty.String, NonState: true, Validate: validateCwd,
			Description: "Absolute path of the working directory; it must exist."},
		{Name: "environment", Type: cty.Map(cty.String), NonState: true, Validate: validateEnvironment,
			Description: "Environment variables set for the process, over what it inherits: toque's environment without TOQUE_*, or a clean login environment when user names another user."},
		{Name: "path", Type: cty.List(cty.String), NonState: true, Validate: validatePathDirs,
			Description: "Absolute directories put in front of PATH."},
		{Name: "user", Type: cty.String, NonState: true, Validate: props.ValidateNonEmpty("user"), HostCheck: CheckRunAsUser,
			Description: "Run as this user, by name or numeric id, with that user's login environment (HOME, USER, LOGNAME, SHELL, a standard PATH). Only root may switch."},
		{Name: "group", Type: cty.String, NonState: true, Validate: props.ValidateNonEmpty("group"), HostCheck: CheckRunAsGroup,
			Description: "Run with this group, by name or numeric id."},
		{Name: "umask", Type: cty.DynamicPseudoType, NonState: true, Normalize: NormalizeUmask,
			Description: "The process's umask: an octal string such as \"022\", or a number taken as its value (18 is 022)."},
		{Name: "returns", Type: cty.DynamicPseudoType, NonState: true, Default: cty.ListVal([]cty.Value{cty.NumberIntVal(0)}),
			Normalize: NormalizeReturns, Validate: validateReturns,
			Description: "The exit code, or list of exit codes, that mean success; each 0 to 255."},
		{Name: "timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(DefaultCommandTimeout), Validate: props.ValidateTimeout,
			Description: "Seconds the process may run before its process group is killed."},
		{Name: "writes", Type: cty.List(cty.String), NonState: true, Shares: resources.NamespacePath, Validate: validateWrites,
			Description: "Absolute paths of the files the command rewrites that other resources of the plan manage too (pam-auth-update's /etc/pam.d/common-*): when it runs, they end as it leaves them, and apply's end-state check does not expect an earlier resource's planned content there."},
		{Name: "live_stream", Type: cty.Bool, NonState: true, Default: cty.False,
			Description: "Show each output line on the console as the process prints it, prefixed with the resource; never for a sensitive resource."},
	}
}

// NormalizeCommand checks an execute command and returns its canonical
// form: a non-empty string as it is, or a non-empty list of strings (a
// tuple or list in the recipe; numbers and bools are converted to strings).
// Unknown values are returned as they are.
func NormalizeCommand(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return v, nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		if strings.TrimSpace(v.AsString()) == "" {
			return cty.NilVal, errors.New("command must not be empty")
		}
		if strings.IndexByte(v.AsString(), 0) >= 0 {
			return cty.NilVal, errors.New("command must not contain a NUL byte")
		}
		return v, nil
	case t.IsListType() || t.IsTupleType():
		xs, err := props.ToStrings(v, "command")
		if err != nil {
			return cty.NilVal, err
		}
		if len(xs) == 0 {
			return cty.NilVal, errors.New("command must not be an empty list")
		}
		if xs[0] == "" {
			return cty.NilVal, errors.New("the first element of command, the program, must not be empty")
		}
		return props.StringListVal(xs), nil
	}
	return cty.NilVal, fmt.Errorf("command must be a string (run by /bin/sh -c) or a list of strings (run without a shell), not %s", t.FriendlyName())
}

// NormalizeUmask returns a umask's canonical form, a four-digit octal
// string: "22", "022" and the number 18 all become "0022". Strings are
// octal; a number is taken as its value, as shellexec.ParseUmask does.
func NormalizeUmask(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() {
		return v, nil
	}
	var n int
	var err error
	switch v.Type() {
	case cty.String:
		n, err = shellexec.ParseUmask(v.AsString())
	case cty.Number:
		f, _ := v.AsBigFloat().Float64()
		n, err = shellexec.ParseUmask(f)
	default:
		return cty.NilVal, fmt.Errorf("umask must be an octal string such as \"022\" or a number, not %s", v.Type().FriendlyName())
	}
	if err != nil {
		return cty.NilVal, err
	}
	return cty.StringVal(fmt.Sprintf("%04o", n)), nil
}

// NormalizeReturns returns the canonical form of `returns`: a list of
// numbers (a single number becomes a list of one).
func NormalizeReturns(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return v, nil
	}
	t := v.Type()
	switch {
	case t == cty.Number:
		return cty.ListVal([]cty.Value{v}), nil
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		var out []cty.Value
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			n, err := convert.Convert(e, cty.Number)
			if err != nil || n.IsNull() {
				return cty.NilVal, fmt.Errorf("returns must be a number or a list of numbers, and %s is not a number", e.GoString())
			}
			out = append(out, n)
		}
		if len(out) == 0 {
			return cty.NilVal, errors.New("returns must list at least one exit code")
		}
		return cty.ListVal(out), nil
	case t == cty.String:
		n, err := convert.Convert(v, cty.Number)
		if err != nil {
			return cty.NilVal, fmt.Errorf("returns must be a number or a list of numbers, not %q", v.AsString())
		}
		return cty.ListVal([]cty.Value{n}), nil
	}
	return cty.NilVal, fmt.Errorf("returns must be a number or a list of numbers, not %s", t.FriendlyName())
}

func validateReturns(v cty.Value) error {
	_, err := returnCodes(v)
	return err
}

// returnCodes reads a normalised `returns` value: whole numbers 0 to 255.
func returnCodes(v cty.Value) ([]int, error) {
	nv, err := NormalizeReturns(v)
	if err != nil || nv == cty.NilVal || nv.IsNull() || !nv.IsWhollyKnown() {
		return nil, err
	}
	var out []int
	for it := nv.ElementIterator(); it.Next(); {
		_, e := it.Element()
		bf := e.AsBigFloat()
		i, acc := bf.Int64()
		if !bf.IsInt() || acc != 0 || i < 0 || i > 255 {
			return nil, fmt.Errorf("exit code %s is not a whole number between 0 and 255", bf.Text('g', -1))
		}
		out = append(out, int(i))
	}
	return out, nil
}

func validateCreates(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := v.AsString()
	switch {
	case strings.TrimSpace(s) == "":
		return errors.New("creates must not be empty")
	case strings.IndexByte(s, 0) >= 0:
		return errors.New("creates must not contain a NUL byte")
	}
	return nil
}

func validateCwd(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := v.AsString()
	switch {
	case s == "":
		return errors.New("cwd must not be empty")
	case strings.IndexByte(s, 0) >= 0:
		return errors.New("cwd must not contain a NUL byte")
	case !filepath.IsAbs(s):
		return fmt.Errorf("cwd %q is not an absolute path; toque does not resolve paths against its working directory", s)
	}
	return nil
}

func validateEnvironment(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		name := k.AsString()
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return fmt.Errorf("environment: %q is not a valid variable name (it must be non-empty, without '=')", name)
		}
		if e.IsNull() {
			return fmt.Errorf("environment: %s is null; remove it or give it a string", name)
		}
		if strings.IndexByte(e.AsString(), 0) >= 0 {
			return fmt.Errorf("environment: the value of %s contains a NUL byte", name)
		}
	}
	return nil
}

func validatePathDirs(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			return errors.New("path: an entry is null")
		}
		d := e.AsString()
		switch {
		case d == "" || strings.ContainsAny(d, ":\x00"):
			return fmt.Errorf("path: %q is not a usable directory (it must be non-empty, without ':')", d)
		case !filepath.IsAbs(d):
			return fmt.Errorf("path: %q is not an absolute path; relative PATH entries are ignored", d)
		}
	}
	return nil
}

func validateWrites(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			return errors.New("writes: an entry is null")
		}
		if _, err := props.CanonicalPath(e.AsString()); err != nil {
			return fmt.Errorf("writes: %w", err)
		}
	}
	return nil
}

// baseSpec is the Spec of the run properties every Runner shares: cwd,
// environment, path, user, group, umask, returns and timeout. It does no
// I/O. Values are normalised again, so a Resource built in code (a guard)
// may hold them in any accepted form.
func baseSpec(r *resources.Resource) (shellexec.Spec, error) {
	var spec shellexec.Spec
	spec.Dir = r.String("cwd")
	if v := r.Get("environment"); v != cty.NilVal && !v.IsNull() && v.IsWhollyKnown() {
		if !v.CanIterateElements() {
			return spec, fmt.Errorf("environment must be a map of strings, not %s", v.Type().FriendlyName())
		}
		spec.Env = map[string]string{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			s, err := convert.Convert(e, cty.String)
			if err != nil || s.IsNull() || k.Type() != cty.String {
				return spec, fmt.Errorf("environment: %s must be a string", k.GoString())
			}
			spec.Env[k.AsString()] = s.AsString()
		}
	}
	if v := r.Get("path"); v != cty.NilVal && !v.IsNull() && v.IsWhollyKnown() {
		if !v.CanIterateElements() {
			return spec, fmt.Errorf("path must be a list of directories, not %s", v.Type().FriendlyName())
		}
		dirs, err := props.ToStrings(v, "path")
		if err != nil {
			return spec, err
		}
		spec.Path = dirs
	}
	spec.User = r.String("user")
	spec.Group = r.String("group")
	if r.IsSet("umask") {
		u, err := NormalizeUmask(r.Values["umask"])
		if err != nil {
			return spec, err
		}
		n, err := shellexec.ParseUmask(u.AsString())
		if err != nil {
			return spec, err
		}
		spec.Umask = &n
	}
	codes, err := returnCodes(r.Get("returns"))
	if err != nil {
		return spec, err
	}
	spec.Returns = codes
	if v := r.Get("timeout"); v != cty.NilVal && !v.IsNull() && v.IsKnown() && v.Type() == cty.Number {
		if err := props.ValidateTimeout(v); err != nil {
			return spec, err
		}
		f, _ := v.AsBigFloat().Float64()
		spec.Timeout = time.Duration(f * float64(time.Second))
	}
	return spec, nil
}

// createsPath is the path `creates` names, made absolute with cwd; "" when
// creates is not set.
func createsPath(r *resources.Resource) (string, error) {
	c := r.String("creates")
	if c == "" || filepath.IsAbs(c) {
		return c, nil
	}
	cwd := r.String("cwd")
	if cwd == "" {
		return "", fmt.Errorf("creates %q is a relative path and cwd is not set; use an absolute path or set cwd", c)
	}
	return filepath.Join(cwd, c), nil
}

// loadCreates is the Load of every Runner: the thing "exists" (a command
// always can run); Extra["creates"] records whether the `creates` path is
// there, so that a plan made before it appeared is stale.
func loadCreates(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if err := props.CtxErr(ctx, "reading "+r.Address()); err != nil {
		return nil, err
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	path, err := createsPath(r)
	if err != nil || path == "" {
		return st, err
	}
	_, err = os.Stat(path)
	switch {
	case err == nil:
		st.Extra["creates"] = "present"
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		st.Extra["creates"] = "absent"
	default:
		return nil, fmt.Errorf("checking whether %s (creates) exists: %w", path, err)
	}
	return st, nil
}

// planRun is the Plan of every Runner (whose one action is run): run,
// unless `creates` exists.
func planRun(desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	if desired.IsSet("creates") && !desired.Values["creates"].IsKnown() {
		return &resources.Step{Kind: resources.Run, Reason: "creates is known only at apply"}, nil
	}
	path, err := createsPath(desired)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return &resources.Step{Kind: resources.Run, Reason: resources.NoGuardReason}, nil
	}
	if current != nil && current.Extra["creates"] == "present" {
		return &resources.Step{Kind: resources.NoOp, Reason: "creates " + path + " exists"}, nil
	}
	return &resources.Step{Kind: resources.Run, Reason: "creates " + path + " does not exist"}, nil
}

// convergeRun runs the process rt describes for desired. A failure names
// what went wrong; an exit code that is not allowed, or a timeout, comes
// with the tail of the process's output. The shellexec error is wrapped, so
// errors.As finds it.
func convergeRun(ctx context.Context, env *resources.Env, rt resources.Runner, desired *resources.Resource) error {
	spec, err := rt.CommandSpec(desired)
	if err != nil {
		return err
	}
	var logger hclog.Logger = hclog.NewNullLogger()
	if env != nil && env.Logger != nil {
		logger = env.Logger
	}
	if desired.Bool("live_stream") && (env == nil || !env.Sensitive) {
		if env != nil && env.Output != nil {
			out := env.Output
			spec.Output = func(stream, line string) { out(stream, words.Printable(line)) }
		} else {
			logger = infoOutputLogger{logger}
		}
	}
	spec.Logger = logger
	if env != nil && env.Sensitive {
		spec = shellexec.Private(spec)
		spec.Sensitive = true
	}
	res, err := shellexec.Run(ctx, spec)
	if err != nil {
		return DescribeRunError(spec, res, err)
	}
	return nil
}

// DescribeRunError turns an error of shellexec.Run into what a user reads:
// for an exit code that is not allowed or a timeout, the error followed by
// the last lines of standard output and error; for a program run inline
// (`bash -c CODE`) that is missing, it names the interpreter. The result
// wraps err.
func DescribeRunError(spec shellexec.Spec, res *shellexec.Result, err error) error {
	var nf *shellexec.NotFoundError
	var de *shellexec.DirError
	var ee *shellexec.ExitError
	var te *shellexec.TimeoutError
	switch {
	case errors.As(err, &nf):
		what := nf.Error()
		if len(spec.Argv) > 1 && len(spec.Interpreter) == 0 && shellexec.IsInlineArgv(spec.Argv) {
			what = strings.Replace(what, "command ", "interpreter ", 1)
		}
		return &runError{msg: what + "; install it, or add its directory with path", err: err}
	case errors.As(err, &de):
		return &runError{msg: "cwd: " + de.Error(), err: err}
	case errors.As(err, &ee), errors.As(err, &te):
		if spec.Sensitive {
			return &runError{msg: err.Error() + " (output hidden: the resource is sensitive)", err: err}
		}
		return &runError{msg: err.Error() + outputTail(res), err: err}
	}
	return err
}

// runError is an error of shellexec.Run with a message for users.
type runError struct {
	msg string
	err error
}

func (e *runError) Error() string { return e.msg }

func (e *runError) Unwrap() error { return e.err }

// outputTail formats the last lines of res's output, "" when it printed
// nothing.
func outputTail(res *shellexec.Result) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, s := range []struct{ name, text string }{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		text := strings.TrimRight(s.text, "\n")
		if strings.TrimSpace(text) == "" {
			continue
		}
		lines := strings.Split(text, "\n")
		cut := len(lines) > outputTailLines
		if cut {
			lines = lines[len(lines)-outputTailLines:]
		}
		tail := strings.Join(lines, "\n")
		if len(tail) > outputTailBytes {
			tail = tail[len(tail)-outputTailBytes:]
			cut = true
		}
		head := "\n" + s.name + ":"
		if cut || res.Truncated {
			head = "\n" + s.name + " (last lines):"
		}
		b.WriteString(head)
		for _, l := range strings.Split(tail, "\n") {
			b.WriteString("\n    " + l)
		}
	}
	return b.String()
}

// infoOutputLogger logs the process's output lines (shellexec logs them at
// debug level with the message "output") at info level: live_stream.
type infoOutputLogger struct{ hclog.Logger }

func (l infoOutputLogger) Debug(msg string, args ...any) {
	if msg == "output" {
		l.Logger.Info(msg, args...)
		return
	}
	l.Logger.Debug(msg, args...)
}

func (l infoOutputLogger) IsDebug() bool { return l.Logger.IsInfo() }

// The runner types are Runners: guards build and run them.
var (
	_ resources.Runner = (*execType)(nil)
	_ resources.Runner = (*scriptType)(nil)
	_ resources.Runner = (*powerShellType)(nil)
)
