package guard

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
)

// runReal decodes src for a parent of type parentType and runs its first
// guard with toque's real types.
func runReal(t *testing.T, parentType string, parent map[string]cty.Value, src string) (*Spec, Outcome) {
	t.Helper()
	specs := decodeReal(t, parentType, parent, false, src)
	if len(specs) == 0 {
		t.Fatal("no guard decoded")
	}
	return specs[0], Run(context.Background(), builtin.Registry(), specs[0], hclog.NewNullLogger())
}

// An argv guard, { command = [PROGRAM, ARG…] }, runs without a shell
// (issue 10.19): nothing in its arguments is expanded or run.
func TestArgvGuardRunsWithoutAShell(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "my file $HOME `x` $(touch pwned)")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src := `only_if = { command = ["test", "-f", "` + hclEscape(file) + `"] }`
	s, o := runReal(t, "file", nil, src)
	if o.Err != nil || !o.Condition {
		t.Fatalf("outcome %+v", o)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("an argument was run by a shell")
	}
	if s.Form != Script || s.Interpreter != "execute" {
		t.Errorf("form %q interpreter %q, want script run as execute", s.Form, s.Interpreter)
	}
	if want := "test -f '" + strings.ReplaceAll(file, "'", `'\''`) + "'"; s.Source != want {
		t.Errorf("source %q, want %q", s.Source, want)
	}
	if got := s.Verdict(true); !strings.HasPrefix(got, "only_if `test -f '") || !strings.HasSuffix(got, "passed") {
		t.Errorf("verdict %q", got)
	}
}

// The guard parameters apply to an argv guard as to a string one.
func TestArgvGuardParameters(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, src string
		root      bool
		condition bool
		output    string
		warning   string
	}{
		{"cwd", `only_if = { command = ["pwd"], cwd = "` + dir + `" }`, false, true, dir, ""},
		{"environment", `only_if = { command = ["printenv", "GREETING"], environment = { GREETING = "hi there" } }`, false, true, "hi there", ""},
		{"umask", `only_if = { command = ["sh", "-c", "umask"], umask = "027" }`, false, true, "0027", ""},
		{"path", `only_if = { command = ["sh", "-c", "echo $PATH"], path = ["` + dir + `"] }`, false, true, dir + ":", ""},
		{"returns", `only_if = { command = ["false"], returns = [1] }`, false, true, "", ""},
		{"false", `only_if = { command = ["false"] }`, false, false, "", ""},
		{"a bad test expression warns", `only_if = { command = ["test", "a", "-eq", "b"] }`, false, false, "integer", "exit 2: test exits 2"},
		{"user", `only_if = { command = ["id", "-un"], user = "nobody", cwd = "/" }`, true, true, "nobody", ""},
		{"group", `only_if = { command = ["id", "-gn"], group = "nogroup" }`, true, true, "nogroup", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				testenv.MustHave(t, testenv.Root, testenv.Nobody) // a guard as another user or group
			}
			_, o := runReal(t, "file", nil, c.src)
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			if o.Condition != c.condition || !strings.Contains(o.Output, c.output) {
				t.Errorf("condition %v output %q; want %v and %q", o.Condition, o.Output, c.condition, c.output)
			}
			if !strings.HasPrefix(o.Warning, c.warning) || (c.warning == "") != (o.Warning == "") {
				t.Errorf("warning %q, want %q", o.Warning, c.warning)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		_, o := runReal(t, "file", nil, `only_if = { command = ["sleep", "30"], timeout = 0.2 }`)
		if o.Err == nil || !strings.Contains(o.Err.Error(), "timed out") {
			t.Fatalf("outcome %+v", o)
		}
	})
	t.Run("missing program", func(t *testing.T) {
		_, o := runReal(t, "file", nil, `only_if = { command = ["no-such-program-xyz", "a"] }`)
		if o.Err == nil || !strings.Contains(o.Err.Error(), "no-such-program-xyz") || o.Skips() {
			t.Fatalf("a missing program must fail the guard, not decide it: %+v", o)
		}
	})
}

// An argv guard inherits from a process-running parent as its guard
// interpreter would, and nothing under guard_interpreter = "default".
func TestArgvGuardInheritance(t *testing.T) {
	dir := t.TempDir()
	parent := map[string]cty.Value{"cwd": cty.StringVal(dir), "environment": cty.MapVal(map[string]cty.Value{"JAVA_HOME": cty.StringVal("/jdk")})}
	s, o := runReal(t, "bash", parent, `not_if = { command = ["sh", "-c", "echo $PWD:$JAVA_HOME"] }`)
	if o.Err != nil || o.Output != dir+":/jdk" {
		t.Fatalf("output %q err %v", o.Output, o.Err)
	}
	if strings.Join(s.Inherited, ",") != "cwd,environment" {
		t.Errorf("inherited %v", s.Inherited)
	}
	s, o = runReal(t, "bash", parent, `not_if = { command = ["sh", "-c", "echo $PWD:$JAVA_HOME"], cwd = "/" }`)
	if o.Output != "/:/jdk" || strings.Join(s.Overridden, ",") != "cwd" {
		t.Errorf("a guard parameter must override the inherited cwd: %q, overridden %v", o.Output, s.Overridden)
	}
	s, o = runReal(t, "bash", parent, "guard_interpreter = \"default\"\nnot_if = { command = [\"sh\", \"-c\", \"echo $JAVA_HOME\"] }")
	if o.Output != "" || len(s.Inherited) != 0 {
		t.Errorf("guard_interpreter = default inherited %v (output %q)", s.Inherited, o.Output)
	}
	s, _ = runReal(t, "file", map[string]cty.Value{"group": cty.StringVal("nogroup")}, `only_if = { command = ["true"] }`)
	if len(s.Inherited) != 0 {
		t.Errorf("a file's group was inherited: %v", s.Inherited)
	}
}

// The plan file stores a guard as JSON; apply runs it from there.
func TestArgvGuardSurvivesJSON(t *testing.T) {
	dir := t.TempDir()
	specs := decodeReal(t, "execute", map[string]cty.Value{"cwd": cty.StringVal(dir)}, false,
		`only_if = { command = ["sh", "-c", "test \"$PWD:$1\" = \"$2\"", "argv0", "a b", "`+dir+`:a b"], returns = [0], umask = "022" }`)
	b, err := json.Marshal(specs)
	if err != nil {
		t.Fatal(err)
	}
	var back []*Spec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back[0].Source != specs[0].Source || back[0].Interpreter != "execute" {
		t.Errorf("round trip changed the guard: %+v", back[0])
	}
	o := Run(context.Background(), builtin.Registry(), back[0], nil)
	if o.Err != nil || !o.Condition {
		t.Fatalf("round-tripped argv guard: %+v", o)
	}
}

func TestArgvGuardBadInput(t *testing.T) {
	cases := []struct {
		name, src, summary string
		line               int
	}{
		{"empty list", "only_if = {\n  command = []\n}", "Invalid guard command", 2},
		{"empty program", "only_if = {\n  command = [\"\", \"a\"]\n}", "Invalid guard command", 2},
		{"null argument", "only_if = { command = [\"test\", null] }", "Invalid guard command", 1},
		{"nested list", "only_if = { command = [\"test\", [\"a\"]] }", "Invalid guard command", 1},
		{"NUL byte", "only_if = { command = [\"test\", \"a\\u0000b\"] }", "Invalid guard command", 1},
		{"map command", "only_if = { command = { a = \"b\" } }", "Wrong type for guard command", 1},
		{"flags", "only_if = {\n  command = [\"true\"]\n  flags = \"-e\"\n}", "Guard parameter not supported", 3},
		{"Chef's argv form", "\nonly_if = [\"test\", \"-f\", \"/etc/motd\"]", "Guard list looks like a command and its arguments", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := builtin.Registry()
			_, diags := decodeSrc(t, reg, parentOf(reg, "file", "create", nil), c.src, nil)
			if len(diags) != 1 || diags[0].Summary != c.summary {
				t.Fatalf("want one %q, got %v", c.summary, diags)
			}
			if diags[0].Subject == nil || diags[0].Subject.Start.Line != c.line {
				t.Errorf("at %v, want line %d", diags[0].Subject, c.line)
			}
		})
	}
	// Lists of commands that are not argv stay lists of guards.
	reg := builtin.Registry()
	specs, diags := decodeSrc(t, reg, parentOf(reg, "file", "create", nil), `only_if = ["test -f /a", "test -x '/b c'", "grep -q x -- /f"]`, nil)
	if diags.HasErrors() || len(specs) != 3 {
		t.Fatalf("%v %v", specs, diags)
	}
}

func TestArgvSource(t *testing.T) {
	cases := []struct {
		argv []string
		want string
	}{
		{[]string{"test", "-f", "/etc/motd"}, "test -f /etc/motd"},
		{[]string{"test", "-f", "/srv/my app"}, "test -f '/srv/my app'"},
		{[]string{"echo", "it's", "$HOME", "*", ""}, `echo 'it'\''s' '$HOME' '*' ''`},
		{[]string{"printf", "a\nb\x1b[31m\t'\\"}, `printf $'a\nb\x1b[31m\t\'\\'`},
		{[]string{"echo", "ünï"}, "echo 'ünï'"},
	}
	for _, c := range cases {
		if got := ArgvSource(c.argv); got != c.want {
			t.Errorf("ArgvSource(%q) = %s, want %s", c.argv, got, c.want)
		}
	}
}
