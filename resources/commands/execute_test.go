package commands

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// runSpec runs r the way a guard does: CommandSpec, then shellexec.Run.
func runSpec(t *testing.T, typ resources.Type, r *resources.Resource) (*shellexec.Result, error) {
	t.Helper()
	spec, err := typ.(resources.Runner).CommandSpec(r)
	if err != nil {
		t.Fatalf("CommandSpec %s: %v", r.Address(), err)
	}
	return shellexec.Run(context.Background(), spec)
}

// stdout runs r and returns its standard output, failing on any error.
func stdout(t *testing.T, typ resources.Type, r *resources.Resource) string {
	t.Helper()
	res, err := runSpec(t, typ, r)
	if err != nil {
		out := ""
		if res != nil {
			out = res.Stdout + res.Stderr
		}
		t.Fatalf("running %s: %v\n%s", r.Address(), err, out)
	}
	return res.Stdout
}

func TestExecuteStringAndList(t *testing.T) {
	env := map[string]string{"TOQUE_X": "expanded"}
	cases := []struct {
		name    string
		command any
		want    string
	}{
		{"a string runs under sh", `printf '%s|' "a b" $TOQUE_X *.none`, "a b|expanded|*.none|"},
		{"a list runs without a shell", []string{"printf", "%s|", "a b", "$TOQUE_X", "*"}, "a b|$TOQUE_X|*|"},
		{"a one-element list", []string{"true"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := ExecuteType()
			r := resourcetest.RunRes(t, typ, "x", map[string]any{"command": c.command, "environment": env, "cwd": t.TempDir()})
			if got := stdout(t, typ, r); got != c.want {
				t.Fatalf("stdout = %q, want %q", got, c.want)
			}
		})
	}
	t.Run("the label is the command", func(t *testing.T) {
		typ := ExecuteType()
		r := resourcetest.RunRes(t, typ, "echo from-the-label", nil)
		if got := stdout(t, typ, r); got != "from-the-label\n" {
			t.Fatalf("stdout = %q", got)
		}
	})
}

func TestExecuteSpecShape(t *testing.T) {
	typ := ExecuteType()
	r := resourcetest.RunRes(t, typ, "x", map[string]any{
		"command": "echo hi", "cwd": "/tmp", "environment": map[string]string{"A": "1"},
		"path": []string{"/opt/bin"}, "user": "nobody", "group": "nogroup",
		"umask": "27", "returns": []int{0, 2}, "timeout": 1.5,
	})
	spec, err := typ.(resources.Runner).CommandSpec(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(spec.Argv, "|") != "/bin/sh|-c|echo hi" || len(spec.Interpreter) != 0 {
		t.Errorf("argv = %q, interpreter = %q", spec.Argv, spec.Interpreter)
	}
	if spec.Dir != "/tmp" || spec.Env["A"] != "1" || strings.Join(spec.Path, ":") != "/opt/bin" ||
		spec.User != "nobody" || spec.Group != "nogroup" || spec.Umask == nil || *spec.Umask != 0o27 ||
		len(spec.Returns) != 2 || spec.Returns[1] != 2 || spec.Timeout.Seconds() != 1.5 {
		t.Errorf("spec = %+v", spec)
	}

	// Only command set (a guard's shape): defaults fill the rest.
	bare := resources.NewResource(typ.Schema(), "g", "", map[string]cty.Value{"command": cty.StringVal("true")})
	spec, err = typ.(resources.Runner).CommandSpec(bare)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Dir != "" || spec.Env != nil || spec.Umask != nil || spec.Timeout.Seconds() != DefaultCommandTimeout ||
		len(spec.Returns) != 1 || spec.Returns[0] != 0 {
		t.Errorf("bare spec = %+v", spec)
	}
	if _, err := shellexec.Run(context.Background(), spec); err != nil {
		t.Errorf("running the bare spec: %v", err)
	}

	// Values in the raw forms a guard may build them in.
	raw := resources.NewResource(typ.Schema(), "g", "", map[string]cty.Value{
		"command":     cty.StringVal("true"),
		"umask":       cty.NumberIntVal(18),
		"returns":     cty.NumberIntVal(3),
		"environment": cty.ObjectVal(map[string]cty.Value{"B": cty.StringVal("2")}),
		"path":        cty.TupleVal([]cty.Value{cty.StringVal("/x")}),
	})
	spec, err = typ.(resources.Runner).CommandSpec(raw)
	if err != nil {
		t.Fatal(err)
	}
	if *spec.Umask != 0o22 || spec.Returns[0] != 3 || spec.Env["B"] != "2" || spec.Path[0] != "/x" {
		t.Errorf("raw spec = %+v", spec)
	}

	if _, err := typ.(resources.Runner).CommandSpec(resources.NewResource(typ.Schema(), "g", "", nil)); err == nil {
		t.Error("CommandSpec without a command: want an error")
	}
}

func TestExecuteCreates(t *testing.T) {
	dir := t.TempDir()
	present := filepath.Join(dir, "present")
	resourcetest.WriteFile(t, present, "", 0o644)
	absent := filepath.Join(dir, "absent")

	cases := []struct {
		name       string
		vals       map[string]any
		kind       resources.Kind
		reason     string
		extra      string
		loadErr    string
		notInExtra bool
	}{
		{"no creates", map[string]any{}, resources.Run, resources.NoGuardReason, "", "", true},
		{"creates present", map[string]any{"creates": present}, resources.NoOp, "creates " + present + " exists", "present", "", false},
		{"creates absent", map[string]any{"creates": absent}, resources.Run, "creates " + absent + " does not exist", "absent", "", false},
		{"creates under a file", map[string]any{"creates": present + "/x"}, resources.Run, "creates " + present + "/x does not exist", "absent", "", false},
		{"relative creates with cwd", map[string]any{"creates": "present", "cwd": dir}, resources.NoOp, "creates " + present + " exists", "present", "", false},
		{"relative creates without cwd", map[string]any{"creates": "present"}, "", "", "", "relative path and cwd is not set", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := ExecuteType()
			c.vals["command"] = "true"
			r := resourcetest.RunRes(t, typ, "x", c.vals)
			st, err := typ.Load(context.Background(), r.LoadView())
			if c.loadErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.loadErr) {
					t.Fatalf("Load error = %v, want %q", err, c.loadErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !st.Exists {
				t.Error("state does not exist")
			}
			if got, ok := st.Extra["creates"]; got != c.extra || ok == c.notInExtra {
				t.Errorf("Extra[creates] = %q (%v), want %q", got, ok, c.extra)
			}
			step, err := resources.PlanStep(typ, r, st)
			if err != nil {
				t.Fatal(err)
			}
			if step.Kind != c.kind || step.Reason != c.reason {
				t.Errorf("step = %s %q, want %s %q", step.Kind, step.Reason, c.kind, c.reason)
			}
		})
	}

	t.Run("running makes it a no-op", func(t *testing.T) {
		typ := ExecuteType()
		made := filepath.Join(dir, "made")
		r := resourcetest.RunRes(t, typ, "x", map[string]any{"command": []string{"touch", made}, "creates": made})
		resourcetest.Apply(t, typ, resourcetest.TestEnv(t), r, resources.Run)
		if _, err := os.Stat(made); err != nil {
			t.Fatal(err)
		}
	})
}

func TestExecuteActions(t *testing.T) {
	typ := ExecuteType()
	r := resourcetest.RunRes(t, typ, "x", map[string]any{"command": "exit 1"})
	r.Action = "nothing"
	st, step := resourcetest.Plan(t, typ, r)
	if step.Kind != resources.NoOp {
		t.Fatalf("action nothing planned %s", step.Kind)
	}
	if err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, st, step); err != nil {
		t.Fatalf("converging a no-op ran the command: %v", err)
	}
	r.Action = "create"
	resourcetest.PlanErr(t, typ, r, `no action "create"`)
}

func TestExecuteProcessProperties(t *testing.T) {
	dir := t.TempDir()
	bin := t.TempDir()
	resourcetest.WriteFile(t, filepath.Join(bin, "toque-test-tool"), "#!/bin/sh\necho tool ran\n", 0o755)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		root bool
		vals map[string]any
		want string
	}{
		{"cwd", false, map[string]any{"command": "pwd -P", "cwd": dir}, real + "\n"},
		{"environment", false, map[string]any{"command": `echo "$TA-$TB"`, "environment": map[string]string{"TA": "one", "TB": "two words"}}, "one-two words\n"},
		{"path", false, map[string]any{"command": "toque-test-tool", "path": []string{bin}}, "tool ran\n"},
		{"path in front", false, map[string]any{"command": `echo "${PATH%%:*}"`, "path": []string{bin}}, bin + "\n"},
		{"umask string", false, map[string]any{"command": "umask", "umask": "077"}, "0077\n"},
		{"umask number", false, map[string]any{"command": "umask", "umask": 18}, "0022\n"},
		{"umask makes files", false, map[string]any{"command": "touch f && stat -c %a f", "umask": "027", "cwd": t.TempDir()}, "640\n"},
		{"returns list", false, map[string]any{"command": "echo ran; exit 3", "returns": []int{0, 3}}, "ran\n"},
		{"returns number", false, map[string]any{"command": "echo ran; exit 7", "returns": 7}, "ran\n"},
		{"user", true, map[string]any{"command": `id -un; echo "$HOME"`, "user": "nobody", "cwd": "/"}, "nobody\n/nonexistent\n"},
		{"group", true, map[string]any{"command": "id -gn", "user": "nobody", "group": "nogroup", "cwd": "/"}, "nogroup\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				resourcetest.RequireRoot(t)
			}
			typ := ExecuteType()
			r := resourcetest.RunRes(t, typ, "x", c.vals)
			got := stdout(t, typ, r)
			if c.name == "user" {
				// HOME is the user's, whatever it is on this host.
				got = strings.SplitN(got, "\n", 2)[0] + "\n"
				c.want = "nobody\n"
			}
			if got != c.want {
				t.Fatalf("stdout = %q, want %q", got, c.want)
			}
		})
	}
}

func TestExecuteFailures(t *testing.T) {
	cases := []struct {
		name string
		vals map[string]any
		as   any
		want []string
	}{
		{"exit not allowed", map[string]any{"command": "echo out-marker; echo err-marker >&2; exit 4"},
			new(*shellexec.ExitError), []string{"exited with code 4", "stdout:\n    out-marker", "stderr:\n    err-marker"}},
		{"exit outside returns", map[string]any{"command": "exit 0", "returns": []int{1, 2}},
			new(*shellexec.ExitError), []string{"exited with code 0 (allowed: 1, 2)"}},
		{"timeout", map[string]any{"command": "echo started; exec sleep 30", "timeout": 0.3},
			new(*shellexec.TimeoutError), []string{"timed out after 300ms", "started"}},
		{"missing cwd", map[string]any{"command": "true", "cwd": "/nonexistent/toque"},
			new(*shellexec.DirError), []string{"cwd", "/nonexistent/toque", "does not exist"}},
		{"missing program", map[string]any{"command": []string{"toque-no-such-program"}},
			new(*shellexec.NotFoundError), []string{`command "toque-no-such-program" not found`}},
		{"unknown user", map[string]any{"command": "true", "user": "toque-no-such-user"},
			new(*shellexec.UserError), []string{"toque-no-such-user"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := ExecuteType()
			r := resourcetest.RunRes(t, typ, "x", c.vals)
			st, step := resourcetest.Plan(t, typ, r)
			err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, st, step)
			if err == nil {
				t.Fatal("want an error")
			}
			if !errors.As(err, c.as) {
				t.Errorf("error %T does not wrap %T", err, c.as)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	t.Run("long output is cut to its tail", func(t *testing.T) {
		typ := ExecuteType()
		r := resourcetest.RunRes(t, typ, "x", map[string]any{"command": "seq 1 100; exit 1"})
		st, step := resourcetest.Plan(t, typ, r)
		err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, st, step)
		if err == nil || !strings.Contains(err.Error(), "stdout (last lines):") || !strings.Contains(err.Error(), "    100") ||
			strings.Contains(err.Error(), "    80\n") || !strings.Contains(err.Error(), "    81\n") {
			t.Fatalf("error = %v", err)
		}
	})
}

func TestExecuteLiveStream(t *testing.T) {
	for _, live := range []bool{false, true} {
		var buf bytes.Buffer
		env := &resources.Env{Logger: hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})}
		typ := ExecuteType()
		r := resourcetest.RunRes(t, typ, "x", map[string]any{"command": "echo streamed-line", "live_stream": live})
		st, step := resourcetest.Plan(t, typ, r)
		if err := resources.ConvergeStep(context.Background(), typ, env, r, st, step); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(buf.String(), "streamed-line"); got != live {
			t.Errorf("live_stream = %v: output logged at info = %v\n%s", live, got, buf.String())
		}
	}
}

func TestRunPropertyValidation(t *testing.T) {
	typ := ExecuteType()
	s := typ.Schema()
	check := func(name string, v cty.Value) error {
		p := s.Property(name)
		if p.Normalize != nil {
			n, err := p.Normalize(v)
			if err != nil {
				return err
			}
			v = n
		}
		if p.Validate != nil {
			return p.Validate(v)
		}
		return nil
	}
	list := func(xs ...cty.Value) cty.Value { return cty.TupleVal(xs) }
	str, num := cty.StringVal, cty.NumberIntVal
	cases := []struct {
		name string
		prop string
		v    cty.Value
		ok   bool
	}{
		{"command string", "command", str("true"), true},
		{"command list", "command", list(str("ls"), str("-l")), true},
		{"command list with a number", "command", list(str("sleep"), num(1)), true},
		{"command empty string", "command", str("  "), false},
		{"command empty list", "command", cty.EmptyTupleVal, false},
		{"command empty program", "command", list(str("")), false},
		{"command null element", "command", list(cty.NullVal(cty.String)), false},
		{"command number", "command", num(1), false},
		{"command map", "command", cty.ObjectVal(map[string]cty.Value{"a": str("b")}), false},
		{"umask octal", "umask", str("022"), true},
		{"umask 0o", "umask", str("0o027"), true},
		{"umask not octal", "umask", str("089"), false},
		{"umask too big", "umask", str("1777"), false},
		{"umask number", "umask", num(18), true},
		{"umask negative", "umask", num(-1), false},
		{"umask bool", "umask", cty.True, false},
		{"returns number", "returns", num(3), true},
		{"returns list", "returns", list(num(0), num(255)), true},
		{"returns 256", "returns", num(256), false},
		{"returns -1", "returns", list(num(0), num(-1)), false},
		{"returns fraction", "returns", cty.NumberFloatVal(1.5), false},
		{"returns empty", "returns", cty.EmptyTupleVal, false},
		{"returns word", "returns", list(str("zero")), false},
		{"timeout", "timeout", num(10), true},
		{"timeout fraction", "timeout", cty.NumberFloatVal(0.5), true},
		{"timeout 0", "timeout", num(0), false},
		{"timeout negative", "timeout", num(-5), false},
		{"timeout huge", "timeout", cty.NumberFloatVal(1e300), false},
		{"cwd absolute", "cwd", str("/"), true},
		{"cwd relative", "cwd", str("opt"), false},
		{"creates relative", "creates", str("out/file"), true},
		{"creates empty", "creates", str(""), false},
		{"environment", "environment", cty.MapVal(map[string]cty.Value{"A": str("1")}), true},
		{"environment bad name", "environment", cty.MapVal(map[string]cty.Value{"A=B": str("1")}), false},
		{"path absolute", "path", cty.ListVal([]cty.Value{str("/opt/bin")}), true},
		{"path relative", "path", cty.ListVal([]cty.Value{str("bin")}), false},
		{"path with colon", "path", cty.ListVal([]cty.Value{str("/a:/b")}), false},
		{"user empty", "user", str(""), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := check(c.prop, c.v); (err == nil) != c.ok {
				t.Fatalf("%s = %#v: error %v, want ok=%v", c.prop, c.v, err, c.ok)
			}
		})
	}
}

func TestNormalizeCanonicalForms(t *testing.T) {
	u, err := NormalizeUmask(cty.StringVal("22"))
	if err != nil || u.AsString() != "0022" {
		t.Errorf("umask \"22\" = %#v, %v", u, err)
	}
	u, err = NormalizeUmask(cty.NumberIntVal(0o27))
	if err != nil || u.AsString() != "0027" {
		t.Errorf("umask 23 = %#v, %v", u, err)
	}
	r, err := NormalizeReturns(cty.NumberIntVal(2))
	if err != nil || !r.RawEquals(cty.ListVal([]cty.Value{cty.NumberIntVal(2)})) {
		t.Errorf("returns 2 = %#v, %v", r, err)
	}
	c, err := NormalizeCommand(cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.True}))
	if err != nil || !c.RawEquals(cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("true")})) {
		t.Errorf("command [a, true] = %#v, %v", c, err)
	}
}
