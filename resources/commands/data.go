package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// ExecData is data "exec": a command run when the plan is made, whose
// standard output, one JSON document, is the answer.
//
//	data "exec" "regular_users" {
//	  command     = "getent passwd | awk -F: '$3 >= 1000 …' | jq -Rn '[inputs]'"
//	  interpreter = "bash"   # a script type, as guard_interpreter names one; unset: /bin/sh -c
//	  timeout     = 30       # seconds (60)
//	  max_size    = 65536    # bytes of standard output (1 MiB)
//	}
//
// A string command runs as guards and execute run one (/bin/sh -c, or the
// interpreter's script type); a list runs without a shell. It runs as a
// guard does — cwd, environment, path, user, group and umask as execute
// takes them, toque's environment without TOQUE_* (a clean login
// environment as another user), standard input /dev/null — and must exit
// 0 within timeout and print at most max_size bytes of JSON on its
// standard output; anything else fails the plan at the data block, with
// the end of what it printed on standard error. It must only read the
// host: a plan runs it, and so does apply's pre-flight, which compares
// its answer with the plan's.
func ExecData() resources.DataSource { return &execData{} }

type execData struct{}

// DefaultDataTimeout is how long data "exec" waits for its command (a
// guard's default).
const DefaultDataTimeout = 60

// DefaultDataMaxSize is how much data "exec" reads of its command's
// standard output by default (1 MiB); MaxDataMaxSize is the most it may be
// given (the most a plan carries of one data block).
const (
	DefaultDataMaxSize = 1 << 20
	MaxDataMaxSize     = resources.MaxDataAnswer
)

// dataInterpreters are the script types interpreter names.
var dataInterpreters = []string{"bash", "csh", "perl", "powershell_script", "python", "sh"}

var execSchema = func() *resources.Schema {
	s := &resources.Schema{
		Name:        "exec",
		Description: "A command run when the plan is made; its standard output, one JSON document, is the answer.",
		Properties: []*resources.Property{
			{Name: "command", Type: cty.DynamicPseudoType, Required: true, Normalize: NormalizeCommand,
				Description: "The command: a string run by /bin/sh -c (or interpreter), or a list run without a shell. It prints one JSON document."},
			{Name: "interpreter", Type: cty.String, Validate: validateDataInterpreter,
				Description: "The script type that runs a string command, as guard_interpreter names one: " + strings.Join(dataInterpreters, ", ") + ". Unset: /bin/sh -c."},
			{Name: "timeout", Type: cty.Number, Default: cty.NumberIntVal(DefaultDataTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds the command may run before its process group is killed and the plan fails."},
			{Name: "max_size", Type: cty.Number, Default: cty.NumberIntVal(DefaultDataMaxSize), Validate: validateMaxSize,
				Description: fmt.Sprintf("The most bytes the command may print on its standard output (at most %d MiB); more fails the plan.", MaxDataMaxSize>>20)},
		},
	}
	for _, p := range runProperties() {
		switch p.Name {
		case "cwd", "environment", "path", "user", "group", "umask":
			q := *p
			q.NonState = false
			s.Properties = append(s.Properties, &q)
		}
	}
	return s
}()

func validateDataInterpreter(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	if s := v.AsString(); !slices.Contains(dataInterpreters, s) {
		return fmt.Errorf("%q is not a script type that can run a data command.%s The interpreters are %s; unset, the command runs with /bin/sh -c", s, words.DidYouMean(s, dataInterpreters), words.Quoted(dataInterpreters))
	}
	return nil
}

func validateMaxSize(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() || bf.Sign() <= 0 || bf.Cmp(big.NewFloat(MaxDataMaxSize)) > 0 {
		return fmt.Errorf("max_size must be a whole number of bytes from 1 to %d (%d MiB), not %s", MaxDataMaxSize, MaxDataMaxSize>>20, bf.Text('g', -1))
	}
	return nil
}

func (d *execData) Schema() *resources.Schema { return execSchema }

// runner is the script type that runs the command, and its resource.
func (d *execData) runner(args map[string]cty.Value) (resources.Runner, *resources.Resource, error) {
	cmd := args["command"]
	vals := map[string]cty.Value{}
	for k, v := range args {
		switch k {
		case "cwd", "environment", "path", "user", "group", "umask":
			vals[k] = v
		}
	}
	interp := ""
	if v, ok := args["interpreter"]; ok && !v.IsNull() {
		interp = v.AsString()
	}
	if interp == "" {
		vals["command"] = cmd
		t := ExecuteType().(resources.Runner)
		return t, resources.NewResource(t.Schema(), "data", "run", vals), nil
	}
	if cmd.Type() != cty.String {
		return nil, nil, errors.New("a command given as a list runs without a shell or interpreter: give it as a string, or leave interpreter out")
	}
	var t resources.Type
	switch interp {
	case "bash":
		t = BashType()
	case "sh":
		t = ShType()
	case "csh":
		t = CshType()
	case "perl":
		t = PerlType()
	case "python":
		t = PythonType()
	case "powershell_script":
		t = PowerShellScriptType()
	default:
		return nil, nil, validateDataInterpreter(cty.StringVal(interp))
	}
	vals["code"] = cmd
	return t.(resources.Runner), resources.NewResource(t.Schema(), "data", "run", vals), nil
}

func (d *execData) Describe(args map[string]cty.Value) string {
	cmd, ok := args["command"]
	if !ok || !cmd.IsWhollyKnown() || cmd.IsNull() {
		return "runs a command"
	}
	var what string
	if cmd.Type() == cty.String {
		how := "/bin/sh"
		if v, ok := args["interpreter"]; ok && !v.IsNull() {
			how = v.AsString()
		}
		what = fmt.Sprintf("runs `%s` (%s)", oneLine(cmd.AsString()), how)
	} else {
		parts := props.StringList(cmd)
		for i, p := range parts {
			if p == "" || strings.ContainsAny(p, " \t\n'\"\\$`") {
				parts[i] = strconv.Quote(p)
			}
		}
		what = fmt.Sprintf("runs `%s` (no shell)", strings.Join(parts, " "))
	}
	if v, ok := args["user"]; ok && !v.IsNull() {
		what += " as " + v.AsString()
	}
	if v, ok := args["cwd"]; ok && !v.IsNull() {
		what += " in " + v.AsString()
	}
	return what
}

// oneLine is a command on one line: its first line, "…" after it when
// there are more.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

func (d *execData) Read(ctx context.Context, req *resources.DataRequest) (cty.Value, error) {
	runner, r, err := d.runner(req.Args)
	if err != nil {
		return cty.NilVal, err
	}
	spec, err := runner.CommandSpec(r)
	if err != nil {
		return cty.NilVal, fmt.Errorf("cannot run the command: %w", err)
	}
	timeout := DefaultDataTimeout * time.Second
	if v := req.Get(execSchema, "timeout"); v != cty.NilVal {
		f, _ := v.AsBigFloat().Float64()
		timeout = time.Duration(f * float64(time.Second))
	}
	limit := DefaultDataMaxSize
	if v := req.Get(execSchema, "max_size"); v != cty.NilVal {
		n, _ := v.AsBigFloat().Int64()
		limit = int(n)
	}
	out := &shellexec.LimitedBuffer{Max: limit}
	spec.Returns = []int{0}
	spec.Timeout = timeout
	spec.Stdout = out
	spec.Logger = req.Log()
	if req.Sensitive {
		spec = shellexec.Private(spec)
		spec.Sensitive = true
	}
	res, err := shellexec.Run(ctx, spec)
	if out.Over() {
		return cty.NilVal, fmt.Errorf("the command printed more than %d bytes on its standard output (max_size), the most this data block reads: toque stopped reading there. Make it print less, or raise max_size", limit)
	}
	if err != nil {
		var te *shellexec.TimeoutError
		if errors.As(err, &te) {
			return cty.NilVal, fmt.Errorf("the command did not finish within %s (timeout); its process group was killed. A data command must answer quickly: make it faster, or give it a longer timeout", te.Timeout)
		}
		var ee *shellexec.ExitError
		if errors.As(err, &ee) && res != nil && res.ExitCode >= 0 {
			if req.Sensitive {
				return cty.NilVal, fmt.Errorf("the command exited with status %d (what it printed is hidden: the data block is sensitive)", res.ExitCode)
			}
			return cty.NilVal, fmt.Errorf("the command exited with status %d%s", res.ExitCode, outputTail(res))
		}
		return cty.NilVal, fmt.Errorf("the command failed: %w", DescribeRunError(spec, res, err))
	}
	return parseDataJSON(out.Bytes(), req.Sensitive)
}

// parseDataJSON is the answer a data command printed: one JSON document.
func parseDataJSON(b []byte, sensitive bool) (cty.Value, error) {
	text := bytes.TrimSpace(b)
	if len(text) == 0 {
		return cty.NilVal, errors.New("the command printed nothing on its standard output; it prints one JSON document (an object, a list, a string…), which is the answer")
	}
	ty, err := ctyjson.ImpliedType(text)
	var v cty.Value
	if err == nil {
		v, err = ctyjson.Unmarshal(text, ty)
	}
	if err != nil {
		if sensitive {
			return cty.NilVal, fmt.Errorf("the command printed something that is not one JSON document (%s); what it printed is hidden: the data block is sensitive", jsonError(err))
		}
		return cty.NilVal, fmt.Errorf("the command printed %s, which is not one JSON document (%s); it prints JSON, which is the answer", quoteOutput(text), jsonError(err))
	}
	return v, nil
}

// jsonError is a JSON parser's error, short.
func jsonError(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = strings.ToValidUTF8(s[:120], "") + "…"
	}
	return s
}

// quoteOutput is the start of what a command printed, quoted on one line.
func quoteOutput(b []byte) string {
	const max = 120
	s := string(b)
	cut := len(s) > max
	if cut {
		s = s[:max]
		for !utf8.ValidString(s) && len(s) > 0 {
			s = s[:len(s)-1]
		}
	}
	q := strconv.Quote(s)
	if cut {
		q += "…"
	}
	return q
}
