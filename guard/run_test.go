package guard

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/internal/testutil"
)

func mustDecode(t *testing.T, parentType string, parent map[string]cty.Value, src string) []*Spec {
	t.Helper()
	reg := testRegistry()
	specs, diags := decodeSrc(t, reg, parentOf(reg, parentType, "run", parent), src, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return specs
}

func TestRunScriptGuards(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	reg := testRegistry()
	q := func(s string) string { return strings.ReplaceAll(s, "DIR", dir) }
	cases := []struct {
		name       string
		parentType string
		parent     map[string]cty.Value
		src        string
		condition  bool
		exit       int
		warning    string
		output     string
		cwd        string
	}{
		{"true", "file", nil, `only_if = "true"`, true, 0, "", "", ""},
		{"false", "file", nil, `only_if = "exit 1"`, false, 1, "", "", ""},
		{"returns", "file", nil, `only_if = { command = "exit 3", returns = [1, 3] }`, true, 3, "", "", ""},
		{"exit 127 warns", "file", nil, `only_if = "no-such-command-xyz"`, false, 127, "exit 127: a command inside the guard was not found", "not found", ""},
		{"guard cwd", "file", nil, q(`only_if = { command = "pwd", cwd = "DIR" }`), true, 0, "", dir, dir},
		{"guard environment", "file", nil, `only_if = { command = "test \"$GREETING\" = hi && echo $GREETING", environment = { GREETING = "hi" } }`, true, 0, "", "hi", ""},
		{"guard path", "file", nil, q(`only_if = { command = "echo $PATH", path = "DIR/bin" }`), true, 0, "", dir + "/bin:", ""},
		{"guard umask", "file", nil, `only_if = { command = "umask", umask = "027" }`, true, 0, "", "0027", ""},
		{"interpreter inherits cwd", "bash", map[string]cty.Value{"cwd": cty.StringVal(dir)}, q(`only_if = "test \"$PWD\" = DIR"`), true, 0, "", "", dir},
		{"guard cwd overrides the inherited one", "bash", map[string]cty.Value{"cwd": cty.StringVal(dir)}, q(`only_if = { command = "test \"$PWD\" = DIR/sub", cwd = "DIR/sub" }`), true, 0, "", "", sub},
		{"interpreter inherits environment", "bash", map[string]cty.Value{"environment": cty.MapVal(map[string]cty.Value{"JAVA_HOME": cty.StringVal("/jdk")})}, `not_if = "test \"$JAVA_HOME\" = /jdk"`, true, 0, "", "", ""},
		{"powershell gets boolean conversion", "powershell_script", nil, `not_if = "test \"$CONVERT_BOOLEAN_RETURN\" = 1"`, true, 0, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specs := mustDecode(t, c.parentType, c.parent, c.src)
			o := Run(context.Background(), reg, specs[0], hclog.NewNullLogger())
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			if o.Condition != c.condition {
				t.Errorf("condition %v, want %v (output %q)", o.Condition, c.condition, o.Output)
			}
			if o.ExitCode == nil || *o.ExitCode != c.exit {
				t.Errorf("exit %v, want %d", o.ExitCode, c.exit)
			}
			if o.Warning != c.warning {
				t.Errorf("warning %q, want %q", o.Warning, c.warning)
			}
			if !strings.Contains(o.Output, c.output) {
				t.Errorf("output %q lacks %q", o.Output, c.output)
			}
			if o.Cwd != c.cwd {
				t.Errorf("cwd %q, want %q", o.Cwd, c.cwd)
			}
		})
	}
}

func TestRunCannotRun(t *testing.T) {
	reg := testRegistry()
	cases := []struct {
		name, src, want string
	}{
		{"cwd missing", `only_if = { command = "true", cwd = "/no/such/dir" }`, "working directory"},
		{"user unknown", `only_if = { command = "true", user = "no-such-user-xyz" }`, "no-such-user-xyz"},
		{"timeout", `only_if = { command = "sleep 30", timeout = 0.3 }`, "timed out after 300ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specs := mustDecode(t, "file", nil, c.src)
			start := time.Now()
			o := Run(context.Background(), reg, specs[0], nil)
			if o.Err == nil {
				t.Fatalf("no error; condition %v", o.Condition)
			}
			if !strings.Contains(o.Err.Error(), c.want) || !strings.Contains(o.Err.Error(), "only_if `") {
				t.Errorf("error %q lacks %q", o.Err, c.want)
			}
			if o.Skips() {
				t.Error("a guard that could not run decided to skip")
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
		})
	}
}

func TestRunTimeoutKillsTheProcessGroup(t *testing.T) {
	dir := t.TempDir()
	marker, pidfile := filepath.Join(dir, "survived"), filepath.Join(dir, "pid")
	specs := mustDecode(t, "file", nil, `only_if = { command = "(sleep 1; touch `+marker+`) & echo $! > `+pidfile+`; sleep 30", timeout = 0.2 }`)
	o := Run(context.Background(), testRegistry(), specs[0], nil)
	if o.Err == nil {
		t.Fatal("no timeout error")
	}
	// Killed, the background subshell is gone at once; spared, it is gone
	// after touching the marker.
	testutil.WaitGone(t, testutil.ReadPid(t, pidfile))
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a process of the guard outlived its timeout")
	}
}

func TestRunInterpreterMissing(t *testing.T) {
	reg := testRegistry()
	specs := mustDecode(t, "script", map[string]cty.Value{"interpreter": cty.StringVal("/no/such/interpreter")}, `only_if = "true"`)
	o := Run(context.Background(), reg, specs[0], nil)
	if o.Err == nil || !strings.Contains(o.Err.Error(), "/no/such/interpreter") {
		t.Fatalf("error %v", o.Err)
	}
}

func TestEvaluateAllShortCircuits(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	reg := testRegistry()
	cases := []struct {
		name      string
		src       string
		skip      bool
		decidedBy int
		evaluated int
	}{
		{"all pass", `only_if = ["true", "true"]` + "\n" + `not_if = "false"`, false, -1, 3},
		{"first only_if false stops", `only_if = ["false", "touch ` + marker + `"]` + "\n" + `not_if = "touch ` + marker + `"`, true, 0, 1},
		{"not_if true decides after only_if", `not_if = ["false", "true", "touch ` + marker + `"]` + "\n" + `only_if = "true"`, true, 2, 3},
		{"expression decides", `only_if = [true, false, "touch ` + marker + `"]`, true, 1, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(marker)
			specs := mustDecode(t, "file", nil, c.src)
			outs, skip, by, err := EvaluateAll(context.Background(), reg, specs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if skip != c.skip || by != c.decidedBy || len(outs) != c.evaluated {
				t.Errorf("skip %v decidedBy %d evaluated %d; want %v %d %d", skip, by, len(outs), c.skip, c.decidedBy, c.evaluated)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("a guard after the deciding one ran")
			}
		})
	}
	specs := mustDecode(t, "file", nil, `only_if = [{ command = "true", cwd = "/no/such" }, "touch `+marker+`"]`)
	outs, skip, _, err := EvaluateAll(context.Background(), reg, specs, nil)
	if err == nil || skip || len(outs) != 1 {
		t.Fatalf("err %v skip %v outcomes %d", err, skip, len(outs))
	}
}

func TestSpecSurvivesJSON(t *testing.T) {
	dir := t.TempDir()
	reg := testRegistry()
	specs := mustDecode(t, "bash", map[string]cty.Value{"cwd": cty.StringVal(dir), "environment": cty.MapVal(map[string]cty.Value{"X": cty.StringVal("1")})},
		`only_if = { command = "test \"$PWD:$X\" = `+dir+`:1", returns = [0], umask = "022" }`)
	b, err := json.Marshal(specs)
	if err != nil {
		t.Fatal(err)
	}
	var back []*Spec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	o := Run(context.Background(), reg, back[0], nil)
	if o.Err != nil || !o.Condition {
		t.Fatalf("round-tripped guard: %+v", o)
	}
	if back[0].Range.Filename != "test.hcl" || strings.Join(back[0].Inherited, ",") != "cwd,environment" {
		t.Errorf("round trip lost fields: %+v", back[0])
	}
}

func TestTrimOutput(t *testing.T) {
	long := strings.Repeat("é", 2000)
	got := trimOutput("  out\n", "\nerr  ")
	if got != "out\nerr" {
		t.Errorf("got %q", got)
	}
	got = trimOutput(long, "")
	if len(got) > OutputCap+len("…") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "é") {
		t.Errorf("trimmed to %d bytes: %q…", len(got), got[:10])
	}
}

// The RFC's point: `[[` is bash, not POSIX sh. Under the default
// interpreter (/bin/sh, dash) the guard is false.
func TestDefaultInterpreterIsPOSIXSh(t *testing.T) {
	testenv.MustHave(t, testenv.DashSh)
	specs := mustDecode(t, "file", nil, `only_if = "[[ 1 == 1 ]]"`)
	o := Run(context.Background(), testRegistry(), specs[0], nil)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	if o.Condition || o.ExitCode == nil || *o.ExitCode != 127 {
		t.Fatalf("[[ under /bin/sh: condition %v, exit %v; want false, 127", o.Condition, o.ExitCode)
	}
}

func TestRunMalformedSpecIsAnError(t *testing.T) {
	s := &Spec{Kind: OnlyIf, Form: Script, Source: "true", Interpreter: Default,
		Values: map[string]Value{"cwd": {Value: cty.NumberIntVal(1)}}}
	o := Run(context.Background(), testRegistry(), s, nil)
	if o.Err == nil || o.Skips() {
		t.Fatalf("outcome %+v", o)
	}
}
