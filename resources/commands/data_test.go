package commands

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
)

// execArgs decodes args as eval does for data "exec": normalised,
// validated.
func execArgs(t *testing.T, args map[string]cty.Value) map[string]cty.Value {
	t.Helper()
	out := map[string]cty.Value{}
	for k, v := range args {
		p := execSchema.Property(k)
		if p == nil {
			t.Fatalf("data \"exec\" takes no %q", k)
		}
		if p.Normalize != nil {
			nv, err := p.Normalize(v)
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			v = nv
		}
		if p.Validate != nil {
			if err := p.Validate(v); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
		}
		out[k] = v
	}
	return out
}

func readExec(t *testing.T, sensitive bool, args map[string]cty.Value) (cty.Value, error) {
	t.Helper()
	return ExecData().Read(context.Background(), &resources.DataRequest{Name: "t", Args: execArgs(t, args), Sensitive: sensitive})
}

func TestExecDataAnswers(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args map[string]cty.Value
		want string // the answer as JSON
	}{
		{"a string by /bin/sh", map[string]cty.Value{"command": cty.StringVal(`echo '{"a": [1, "x"], "b": null}'`)}, `{"a":[1,"x"],"b":null}`},
		{"a list, without a shell", map[string]cty.Value{"command": cty.TupleVal([]cty.Value{cty.StringVal("echo"), cty.StringVal(`"$HOME"`)})}, `"$HOME"`},
		{"in cwd, with an environment", map[string]cty.Value{
			"command": cty.StringVal(`printf '{"dir": "%s", "x": "%s"}' "$PWD" "$X"`), "cwd": cty.StringVal(dir),
			"environment": cty.MapVal(map[string]cty.Value{"X": cty.StringVal("y")}),
		}, `{"dir":"` + dir + `","x":"y"}`},
		{"toque's own variables are not passed", map[string]cty.Value{"command": cty.StringVal(`echo "\"${TOQUE_TEST_SECRET-unset}\""`)}, `"unset"`},
	}
	t.Setenv("TOQUE_TEST_SECRET", "hunter2")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := readExec(t, false, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ctyjson.Marshal(v, v.Type())
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("answer %s, want %s", b, tc.want)
			}
		})
	}
	t.Run("an interpreter", func(t *testing.T) {
		testenv.MustHave(t, testenv.Bash)
		v, err := readExec(t, false, map[string]cty.Value{"command": cty.StringVal(`[[ -n $BASH_VERSION ]] && echo true`), "interpreter": cty.StringVal("bash")})
		if err != nil || !v.RawEquals(cty.True) {
			t.Errorf("bash: %v %v", v, err)
		}
	})
}

func TestExecDataFails(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name      string
		sensitive bool
		args      map[string]cty.Value
		want      string
		never     string // must not be in the error
	}{
		{name: "exit status", args: map[string]cty.Value{"command": cty.StringVal("echo oops >&2; exit 4")}, want: "the command exited with status 4\nstderr:\n    oops"},
		{name: "timeout", args: map[string]cty.Value{"command": cty.StringVal("sleep 30"), "timeout": cty.NumberFloatVal(0.2)}, want: "did not finish within 200ms (timeout); its process group was killed"},
		{name: "not JSON", args: map[string]cty.Value{"command": cty.StringVal("echo '{oops'")}, want: `printed "{oops", which is not one JSON document`},
		{name: "two documents", args: map[string]cty.Value{"command": cty.StringVal("echo 1; echo 2")}, want: "which is not one JSON document"},
		{name: "nothing", args: map[string]cty.Value{"command": cty.StringVal("true")}, want: "printed nothing on its standard output"},
		{name: "over its cap", args: map[string]cty.Value{"command": cty.StringVal(`yes | head -c 5000 | tr -d '\n' | sed 's/.*/"&"/'`), "max_size": cty.NumberIntVal(100)}, want: "printed more than 100 bytes on its standard output (max_size)"},
		{name: "a sensitive command's output", sensitive: true, args: map[string]cty.Value{"command": cty.StringVal("echo hunter2; exit 1")}, want: "what it printed is hidden", never: "hunter2"},
		{name: "a sensitive command's non-JSON", sensitive: true, args: map[string]cty.Value{"command": cty.StringVal("echo hunter2")}, want: "what it printed is hidden", never: "hunter2"},
		{name: "a missing cwd", args: map[string]cty.Value{"command": cty.StringVal("echo 1"), "cwd": cty.StringVal(filepath.Join(dir, "nope"))}, want: "cwd"},
		{name: "a list with an interpreter", args: map[string]cty.Value{"command": cty.TupleVal([]cty.Value{cty.StringVal("echo")}), "interpreter": cty.StringVal("bash")}, want: "a command given as a list runs without a shell"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readExec(t, tc.sensitive, tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if tc.never != "" && strings.Contains(err.Error(), tc.never) {
				t.Errorf("the error shows %q: %v", tc.never, err)
			}
		})
	}
}

func TestExecDataArguments(t *testing.T) {
	for _, tc := range []struct {
		name, arg string
		v         cty.Value
		want      string
	}{
		{"an interpreter that is not a script type", "interpreter", cty.StringVal("ruby"), `"ruby" is not a script type`},
		{"a misspelt interpreter", "interpreter", cty.StringVal("bsh"), `Did you mean "bash"?`},
		{"max_size above the cap", "max_size", cty.NumberIntVal(MaxDataMaxSize + 1), "max_size must be a whole number of bytes from 1 to"},
		{"max_size 0", "max_size", cty.NumberIntVal(0), "max_size must be"},
		{"a timeout of 0", "timeout", cty.NumberIntVal(0), "timeout must be a number of seconds greater than 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := execSchema.Property(tc.arg).Validate(tc.v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		args map[string]cty.Value
		want string
	}{
		{map[string]cty.Value{"command": cty.StringVal("getent passwd\n| jq .")}, "runs `getent passwd …` (/bin/sh)"},
		{map[string]cty.Value{"command": cty.StringVal("x"), "interpreter": cty.StringVal("bash"), "user": cty.StringVal("nobody"), "cwd": cty.StringVal("/srv")}, "runs `x` (bash) as nobody in /srv"},
		{map[string]cty.Value{"command": cty.TupleVal([]cty.Value{cty.StringVal("cat"), cty.StringVal("/a b")})}, "runs `cat \"/a b\"` (no shell)"},
	} {
		if got := ExecData().Describe(tc.args); got != tc.want {
			t.Errorf("Describe = %q, want %q", got, tc.want)
		}
	}
}

// A sensitive block's command is not on a command line others can read
// (ps) while it runs: it goes through the private temporary file.
func TestExecDataSensitiveIsPrivate(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "cmdline")
	cmd := `tr '\0' ' ' < /proc/$$/cmdline > ` + out + `; echo '"ok"'`
	if _, err := readExec(t, true, map[string]cty.Value{"command": cty.StringVal(cmd)}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "cmdline") {
		t.Errorf("the command is on the process's command line: %s", b)
	}
}
