package commands

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// interpreterNeeds is what each script type's interpreter is to testenv;
// sh (POSIX /bin/sh) is always there.
var interpreterNeeds = map[string]testenv.Requirement{
	"bash":   testenv.Bash,
	"csh":    testenv.Csh,
	"python": testenv.Python3,
	"perl":   testenv.Perl,
}

// requireInterpreter skips (or fails, in a strict tier) a test of a script
// type whose interpreter this machine lacks.
func requireInterpreter(t *testing.T, typeName string) {
	t.Helper()
	if r, ok := interpreterNeeds[typeName]; ok {
		testenv.MustHave(t, r)
	}
}

// TestScriptInterpreters runs a small program in each fixed interpreter.
func TestScriptInterpreters(t *testing.T) {
	cases := []struct {
		name string
		typ  func() resources.Type
		code string
		want string
	}{
		{"bash", BashType, `a=(x y); echo "${#a[@]} ${BASH_VERSION%%.*}" | cut -c1-2`, "2 \n"},
		{"sh", ShType, `set -- a b c; echo $#`, "3\n"},
		{"csh one line", CshType, `if ( 1 == 1 ) echo yes`, "yes\n"},
		{"csh several lines", CshType, "foreach i (1 2 3)\necho $i\nend\n", "1\n2\n3\n"},
		{"csh variables", CshType, "set v = (a b)\necho $#v $v[2]", "2 b\n"},
		{"python", PythonType, "import sys\nprint(sys.version_info[0], sum(range(4)))", "3 6\n"},
		{"python __file__", PythonType, "import os\nprint(os.path.basename(__file__).startswith('toque-script-'))", "True\n"},
		{"perl", PerlType, `my @a = (1, 2, 3); print scalar(@a), " ", join("+", @a), "\n";`, "3 1+2+3\n"},
		{"perl __DATA__", PerlType, "print <DATA>;\n__DATA__\nfrom data\n", "from data\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := c.typ()
			requireInterpreter(t, typ.Schema().Name)
			r := resourcetest.RunRes(t, typ, c.name, map[string]any{"code": c.code})
			if got := stdout(t, typ, r); got != c.want {
				t.Fatalf("stdout = %q, want %q", got, c.want)
			}
		})
	}
}

// TestBashAndShGuardShape is the RFC's example: `[[ 1 == 1 ]]` is bash, and
// sh (dash) fails it.
func TestBashAndShGuardShape(t *testing.T) {
	code := "[[ 1 == 1 ]]"
	testenv.MustHave(t, testenv.Bash, testenv.DashSh)
	bash := BashType()
	if _, err := runSpec(t, bash, resourcetest.RunRes(t, bash, "b", map[string]any{"code": code})); err != nil {
		t.Fatalf("bash: %v", err)
	}
	sh := ShType()
	res, err := runSpec(t, sh, resourcetest.RunRes(t, sh, "s", map[string]any{"code": code}))
	var ee *shellexec.ExitError
	if !errors.As(err, &ee) || res.ExitCode == 0 {
		t.Fatalf("sh: error %v, want an exit error", err)
	}
}

func TestScriptProperties(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		typ  func() resources.Type
		vals map[string]any
		want string
	}{
		{"bash flags before -c", BashType, map[string]any{"code": `case $- in *e*) echo errexit;; esac`, "flags": "-e"}, "errexit\n"},
		{"bash flags as a list", BashType, map[string]any{"code": `shopt -q extglob && echo on`, "flags": []string{"-O", "extglob"}}, "on\n"},
		{"sh cwd", ShType, map[string]any{"code": "basename $(pwd)", "cwd": dir}, filepath.Base(dir) + "\n"},
		{"csh environment", CshType, map[string]any{"code": "echo $JAVA_HOME", "environment": map[string]string{"JAVA_HOME": "/usr/lib/jvm"}}, "/usr/lib/jvm\n"},
		{"python returns", PythonType, map[string]any{"code": "import sys\nprint('bye')\nsys.exit(3)", "returns": []int{3}}, "bye\n"},
		{"perl umask", PerlType, map[string]any{"code": `printf "%04o\n", umask;`, "umask": "0027"}, "0027\n"},
		{"large code in a file", ShType, map[string]any{"code": "# " + strings.Repeat("x", MaxInlineCode) + "\necho large"}, "large\n"},
		{"shebang code in a file", BashType, map[string]any{"code": "#!/bin/bash\necho $0"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := c.typ()
			requireInterpreter(t, typ.Schema().Name)
			r := resourcetest.RunRes(t, typ, c.name, c.vals)
			got := stdout(t, typ, r)
			if c.name == "shebang code in a file" {
				// $0 is the temporary file.
				if !strings.Contains(got, "toque-script-") {
					t.Fatalf("stdout = %q, want the temporary file's name", got)
				}
				return
			}
			if got != c.want {
				t.Fatalf("stdout = %q, want %q", got, c.want)
			}
		})
	}
}

func TestScriptCustomInterpreter(t *testing.T) {
	dir := t.TempDir()
	interp := filepath.Join(dir, "my-interpreter")
	resourcetest.WriteFile(t, interp, "#!/bin/sh\necho \"args: $#\"\nexec /bin/sh \"$@\"\n", 0o755)
	cases := []struct {
		name string
		vals map[string]any
		want string
	}{
		{"awk with -f", map[string]any{"interpreter": "awk", "flags": "-f", "code": `BEGIN { print "awk says", 6 * 7 }`}, "awk says 42\n"},
		{"a path", map[string]any{"interpreter": interp, "code": "echo from the file"}, "args: 1\nfrom the file\n"},
		{"a path with flags", map[string]any{"interpreter": interp, "flags": "-e -u", "code": "echo flagged"}, "args: 3\nflagged\n"},
		{"with arguments", map[string]any{"interpreter": "/usr/bin/env sh", "code": "echo via env"}, "via env\n"},
		{"a known basename inline", map[string]any{"interpreter": "/bin/sh", "code": `echo "$0"`}, "/bin/sh\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := ScriptType()
			r := resourcetest.RunRes(t, typ, c.name, c.vals)
			if got := stdout(t, typ, r); got != c.want {
				t.Fatalf("stdout = %q, want %q", got, c.want)
			}
		})
	}
	t.Run("missing interpreter", func(t *testing.T) {
		typ := ScriptType()
		r := resourcetest.RunRes(t, typ, "m", map[string]any{"interpreter": "toque-no-such-interpreter", "code": "x"})
		st, step := resourcetest.Plan(t, typ, r)
		err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, st, step)
		var nf *shellexec.NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), `interpreter "toque-no-such-interpreter"`) {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("missing inline interpreter is named an interpreter", func(t *testing.T) {
		typ := ScriptType()
		r := resourcetest.RunRes(t, typ, "m", map[string]any{"interpreter": "bash", "code": "true", "path": []string{dir}, "environment": map[string]string{"PATH": dir}})
		st, step := resourcetest.Plan(t, typ, r)
		err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, st, step)
		if err == nil || !strings.Contains(err.Error(), `interpreter "bash" not found`) {
			t.Fatalf("error = %v", err)
		}
	})
}

func TestScriptFailureShowsOutput(t *testing.T) {
	typ := BashType()
	r := resourcetest.RunRes(t, typ, "f", map[string]any{"code": "echo before-failing\nls /nonexistent/toque\n"})
	st, step := resourcetest.Plan(t, typ, r)
	if step.Kind != resources.Run || step.Reason != resources.NoGuardReason {
		t.Fatalf("step = %+v", step)
	}
	err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, st, step)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, w := range []string{"exited with code 2", "before-failing", "/nonexistent/toque"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// TestScriptCommandSpecChoice checks when code goes inline and when it goes
// in a temporary file.
func TestScriptCommandSpecChoice(t *testing.T) {
	big := strings.Repeat("x", MaxInlineCode+1)
	cases := []struct {
		name string
		typ  func() resources.Type
		vals map[string]any
		argv []string // inline: the argv
		file []string // temporary file: interpreter and flags
	}{
		{"bash", BashType, map[string]any{"code": "true"}, []string{"bash", "-c", "true"}, nil},
		{"bash flags", BashType, map[string]any{"code": "true", "flags": "-e  -x"}, []string{"bash", "-e", "-x", "-c", "true"}, nil},
		{"sh", ShType, map[string]any{"code": "a\nb"}, []string{"sh", "-c", "a\nb"}, nil},
		{"csh one line", CshType, map[string]any{"code": "echo hi\n"}, []string{"csh", "-c", "echo hi\n"}, nil},
		{"csh two lines", CshType, map[string]any{"code": "echo hi\necho ho"}, nil, []string{"csh"}},
		{"python", PythonType, map[string]any{"code": "print(1)"}, []string{"python3", "-c", "print(1)"}, nil},
		{"python __file__", PythonType, map[string]any{"code": "print(__file__)"}, nil, []string{"python3"}},
		{"perl", PerlType, map[string]any{"code": "print 1", "flags": "-w"}, []string{"perl", "-w", "-e", "print 1"}, nil},
		{"perl __END__", PerlType, map[string]any{"code": "print 1\n__END__\n"}, nil, []string{"perl"}},
		{"too large", ShType, map[string]any{"code": big}, nil, []string{"sh"}},
		{"shebang", ShType, map[string]any{"code": "#!/bin/sh -e\ntrue"}, nil, []string{"sh"}},
		{"NUL byte", ShType, map[string]any{"code": "true\x00"}, nil, []string{"sh"}},
		{"script known", ScriptType, map[string]any{"interpreter": "/usr/bin/bash", "code": "true"}, []string{"/usr/bin/bash", "-c", "true"}, nil},
		{"script python3.11", ScriptType, map[string]any{"interpreter": "python3.11", "code": "pass"}, []string{"python3.11", "-c", "pass"}, nil},
		{"script unknown", ScriptType, map[string]any{"interpreter": "ruby", "code": "puts 1"}, nil, []string{"ruby"}},
		{"script with arguments", ScriptType, map[string]any{"interpreter": "/usr/bin/env bash", "code": "true", "flags": "-e"}, nil, []string{"/usr/bin/env", "bash", "-e"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := c.typ()
			r := resourcetest.RunRes(t, typ, c.name, c.vals)
			spec, err := typ.(resources.Runner).CommandSpec(r)
			if err != nil {
				t.Fatal(err)
			}
			if c.argv != nil {
				if len(spec.Interpreter) != 0 || strings.Join(spec.Argv, "|") != strings.Join(c.argv, "|") {
					t.Fatalf("argv = %q, interpreter = %q; want argv %q", spec.Argv, spec.Interpreter, c.argv)
				}
				return
			}
			got := append(append([]string{}, spec.Interpreter...), spec.Flags...)
			if len(spec.Argv) != 0 || strings.Join(got, "|") != strings.Join(c.file, "|") || strings.TrimSuffix(spec.Script, "\n") != strings.TrimSuffix(r.String("code"), "\n") {
				t.Fatalf("argv = %q, interpreter+flags = %q; want a temporary file run by %q", spec.Argv, got, c.file)
			}
		})
	}
}

func TestCshScriptEndsWithNewline(t *testing.T) {
	for _, c := range []struct{ code, want string }{
		{"echo hi\necho ho", "echo hi\necho ho\n"},
		{"echo hi\necho ho\n", "echo hi\necho ho\n"},
	} {
		typ := CshType()
		spec, err := typ.(resources.Runner).CommandSpec(resourcetest.RunRes(t, typ, "c", map[string]any{"code": c.code}))
		if err != nil || spec.Script != c.want {
			t.Errorf("code %q: script %q (%v), want %q", c.code, spec.Script, err, c.want)
		}
	}
	typ := ShType()
	spec, _ := typ.(resources.Runner).CommandSpec(resourcetest.RunRes(t, typ, "s", map[string]any{"code": "#!/bin/sh\ntrue"}))
	if spec.Script != "#!/bin/sh\ntrue" {
		t.Errorf("sh script %q: only csh code is changed", spec.Script)
	}
}

func TestScriptSchemas(t *testing.T) {
	for _, typ := range []resources.Type{ScriptType(), BashType(), ShType(), CshType(), PythonType(), PerlType(), PowerShellScriptType()} {
		s := typ.Schema()
		t.Run(s.Name, func(t *testing.T) {
			if s.Property("command") != nil || s.NameProperty() != nil {
				t.Error("a script type has no command and no name property")
			}
			for _, name := range []string{"code", "flags", "creates", "cwd", "environment", "path", "user", "group", "umask", "returns", "timeout", "live_stream"} {
				p := s.Property(name)
				if p == nil {
					t.Errorf("missing property %s", name)
				} else if p.IsDesiredState() {
					t.Errorf("property %s is desired state; every run property is non-state", name)
				}
			}
			if (s.Property("interpreter") != nil) != (s.Name == "script") {
				t.Error("only script has an interpreter property")
			}
			if !s.Property("code").Required {
				t.Error("code is required")
			}
			if s.DefaultAction != "run" || !s.HasAction("nothing") {
				t.Errorf("actions %v, default %q", s.Actions, s.DefaultAction)
			}
		})
	}
	if ScriptType().Schema().Property("flags").Normalize == nil {
		t.Error("flags needs a normaliser")
	}
	if _, err := NormalizeFlags(cty.NumberIntVal(1)); err == nil {
		t.Error("flags = 1: want an error")
	}
}

// BenchmarkScriptGuardShape measures what a script guard costs: sh and bash
// with code "true" through CommandSpec and shellexec.Run (inline: `sh -c
// true`), the same through a temporary file, and the floors, a bare
// exec.Command("sh", "-c", "true") (and the same with bash). The
// per-guard overhead is sh / floor-exec-sh-c-true.
func BenchmarkScriptGuardShape(b *testing.B) {
	ctx := context.Background()
	guard := func(typ resources.Type) func(b *testing.B) {
		vals := map[string]cty.Value{"code": cty.StringVal("true"), "timeout": cty.NumberIntVal(60)}
		r := resources.NewResource(typ.Schema(), "guard", "", vals)
		return func(b *testing.B) {
			for b.Loop() {
				spec, err := typ.(resources.Runner).CommandSpec(r)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := shellexec.Run(ctx, spec); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	floor := func(shell string) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				if err := exec.Command(shell, "-c", "true").Run(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("floor-exec-sh-c-true", floor("sh"))
	b.Run("floor-exec-bash-c-true", floor("bash"))
	b.Run("sh", guard(ShType()))
	b.Run("bash", guard(BashType()))
	// Interleaved, so that load from elsewhere falls on both alike: the
	// metric x-floor is the per-guard cost over the floor's.
	specOf := func(typ resources.Type) func() (shellexec.Spec, error) {
		r := resources.NewResource(typ.Schema(), "guard", "", map[string]cty.Value{"code": cty.StringVal("true"), "timeout": cty.NumberIntVal(60)})
		return func() (shellexec.Spec, error) { return typ.(resources.Runner).CommandSpec(r) }
	}
	tempFile := func() (shellexec.Spec, error) {
		return shellexec.Spec{Interpreter: []string{"sh"}, Script: "true", Timeout: time.Minute}, nil
	}
	for _, c := range []struct {
		name  string
		spec  func() (shellexec.Spec, error)
		shell string
	}{{"ratio-sh", specOf(ShType()), "sh"}, {"ratio-bash", specOf(BashType()), "bash"}, {"ratio-sh-tempfile", tempFile, "sh"}} {
		b.Run(c.name, func(b *testing.B) {
			var guardTime, floorTime time.Duration
			for b.Loop() {
				start := time.Now()
				if err := exec.Command(c.shell, "-c", "true").Run(); err != nil {
					b.Fatal(err)
				}
				floorTime += time.Since(start)
				start = time.Now()
				spec, err := c.spec()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := shellexec.Run(ctx, spec); err != nil {
					b.Fatal(err)
				}
				guardTime += time.Since(start)
			}
			b.ReportMetric(float64(guardTime)/float64(floorTime), "x-floor")
		})
	}
	b.Run("sh-tempfile", func(b *testing.B) {
		for b.Loop() {
			spec := shellexec.Spec{Interpreter: []string{"sh"}, Script: "true", Timeout: time.Minute}
			if _, err := shellexec.Run(ctx, spec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A sensitive resource's code must not be an argument (ps shows those):
// shellexec.Private moves it into the owner-only script file, and it still runs.
func TestPrivateMovesInlineCodeIntoTheScriptFile(t *testing.T) {
	cases := []struct {
		name string
		spec shellexec.Spec
		want string
	}{
		{"sh", shellexec.Spec{Argv: []string{"/bin/sh", "-c", "echo private"}}, "private\n"},
		{"bash", shellexec.Spec{Argv: []string{"bash", "-e", "-c", "echo private"}}, "private\n"},
		{"perl", shellexec.Spec{Argv: []string{"perl", "-e", `print "private\n"`}}, "private\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireInterpreter(t, c.name)
			got := shellexec.Private(c.spec)
			if len(got.Argv) != 0 || got.Script == "" {
				t.Fatalf("code still inline: %+v", got)
			}
			for _, a := range append(got.Interpreter, got.Flags...) {
				if strings.Contains(a, "private") {
					t.Fatalf("code in an argument: %q", got.Interpreter)
				}
			}
			res, err := shellexec.Run(context.Background(), got)
			if err != nil || res.Stdout != c.want {
				t.Fatalf("ran %+v: %+v, %v", got, res, err)
			}
		})
	}
	argv := shellexec.Spec{Argv: []string{"/bin/echo", "-c", "x"}}
	if got := shellexec.Private(argv); len(got.Argv) != 3 {
		t.Errorf("a command that is not an interpreter was rewritten: %+v", got)
	}
}
