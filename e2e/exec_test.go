package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

// End-to-end tests of how commands and guards run: their environment,
// argv guards, guards that cannot run correctly, live_stream.

func TestE2EGuardInterpreterWithExpressionGuard(t *testing.T) {
	testBadInput(t, []badInput{
		{"bool guard", "file \"/x\" {\n  content = \"a\"\n  guard_interpreter = \"bash\"\n  only_if = true\n}\n", "bad.hcl:3"},
		{"expression in a list", "execute \"x\" {\n  guard_interpreter = \"default\"\n  not_if = [\"true\", 1 == 1]\n}\n", "bad.hcl:2"},
	})
}

func TestE2EGuardKeyTypoSuggests(t *testing.T) {
	e := newEnv(t)
	e.recipe("bad.hcl", "file \"/x\" {\n  only_if = {\n    comand = \"true\"\n  }\n}\n")
	r := e.must(1, "plan")
	contains(t, "plan", strings.Join(strings.Fields(r.stderr), " "), "bad.hcl:3", `Did you mean "command"?`)
	if strings.Contains(r.stderr, "Missing guard command") {
		t.Errorf("a misspelt command is also reported missing:\n%s", r.stderr)
	}
}

// writableByAll makes a directory any user can write, outside the test's
// private temporary directory (which other users cannot enter).
func writableByAll(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "toque-e2e-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// parseEnv reads `env` output.
func parseEnv(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Issue 11.4: commands and guards never see toque's TOQUE_* variables; run
// as another user they get a clean login environment. Each child dumps its
// environment: commands into files, a guard into the plan.
func TestE2EChildEnvironment(t *testing.T) {
	testenv.MustHave(t, testenv.Root, testenv.Nobody) // commands run as nobody
	e := newEnv(t)
	shared := writableByAll(t)
	e.recipe("main.hcl", `
execute "own" {
  command = "env > ROOT/own.env"
  only_if = "test -z \"$TOQUE_POLICY_TOKEN\" && test \"$DEPLOY_KEY\" = deploy-key"
}

execute "as-nobody" {
  command     = "env > `+shared+`/nobody.env"
  user        = "nobody"
  cwd         = "/"
  environment = { APP = "1" }
}

file "ROOT/guarded" {
  content = "x"
  only_if = { command = "env", user = "nobody", cwd = "/" }
}
`)
	secrets := []string{"TOQUE_POLICY_TOKEN=s3cret-token", "DEPLOY_KEY=deploy-key", "LANG=C.UTF-8"}
	planFile := filepath.Join(e.dir, "plan.out")
	e.mustToque(0, secrets, "-chdir="+e.dir, "plan", "-out="+planFile)

	// The guard as nobody: its output, recorded in the plan, is its whole
	// environment.
	r := e.mustToque(0, nil, "show", "-json", planFile)
	var shown struct {
		Resources []struct {
			Address string `json:"address"`
			Guards  []struct {
				Output string `json:"output"`
			} `json:"guards"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	var guardEnv map[string]string
	for _, res := range shown.Resources {
		if strings.HasPrefix(res.Address, "file[") && len(res.Guards) == 1 {
			guardEnv = parseEnv(res.Guards[0].Output)
		}
	}
	wantGuard := map[string]string{"HOME": "/nonexistent", "USER": "nobody", "LOGNAME": "nobody", "LANG": "C.UTF-8",
		"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	checkEnv(t, "the guard run as nobody", guardEnv, wantGuard, "TOQUE_POLICY_TOKEN", "DEPLOY_KEY", "TOQUE_STATE_DIR")

	e.mustToque(0, secrets, "apply", planFile)
	own := parseEnv(e.read("own.env"))
	checkEnv(t, "a command run as toque's user", own, map[string]string{"DEPLOY_KEY": "deploy-key", "LANG": "C.UTF-8"}, "TOQUE_POLICY_TOKEN", "TOQUE_STATE_DIR")
	b, err := os.ReadFile(filepath.Join(shared, "nobody.env"))
	if err != nil {
		t.Fatal(err)
	}
	wantGuard["APP"] = "1"
	checkEnv(t, "a command run as nobody", parseEnv(string(b)), wantGuard, "TOQUE_POLICY_TOKEN", "DEPLOY_KEY", "TOQUE_STATE_DIR")
}

// checkEnv checks that env holds want and none of absent.
func checkEnv(t *testing.T, who string, env, want map[string]string, absent ...string) {
	t.Helper()
	if env == nil {
		t.Fatalf("%s: no environment recorded", who)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s: %s = %q, want %q", who, k, env[k], v)
		}
	}
	for _, k := range absent {
		if v, ok := env[k]; ok {
			t.Errorf("%s got %s=%s", who, k, v)
		}
	}
}

// Issue 10.8: a shell guard with a syntax error exits 2; the plan says it
// is false but warns, quoting the shell's message, escaped.
func TestE2EGuardExit2Warns(t *testing.T) {
	e := newEnv(t)
	e.recipe("main.hcl", `
file "ROOT/a" {
  content = "x"
  only_if = "if then"
}

file "ROOT/b" {
  content = "x"
  not_if  = "printf 'bad \\033[31mred\\n' >&2; exit 2"
}
`)
	r := e.must(0, "plan")
	out := strings.Join(strings.Fields(r.stdout), " ")
	contains(t, "plan", out, "only_if `if then` failed", "exit 2: a shell exits 2", "may be broken rather than false", "Syntax error", `bad \x1b[31mred`)
	if strings.Contains(r.stdout, "\x1b") {
		t.Errorf("the plan holds a raw escape character:\n%q", r.stdout)
	}
}

// Issue 10.19: { command = [PROGRAM, ARG…] } runs without a shell, reads in
// the plan like a script guard, and runs again at apply from the plan file.
func TestE2EArgvGuard(t *testing.T) {
	e := newEnv(t)
	e.write("gate $(touch pwned)", "", 0o644)
	e.recipe("main.hcl", `
execute "ran" {
  command = ["touch", "ROOT/ran"]
  only_if = { command = ["test", "-f", "ROOT/gate $(touch pwned)"], cwd = "/" }
}

file "ROOT/b" {
  content = "x"
  not_if  = { command = ["test", "-f", "ROOT/gate $(touch pwned)"] }
}
`)
	r := e.must(2, "plan", "-detailed-exitcode", "-out=plan.out")
	contains(t, "plan", r.stdout,
		"only_if `test -f '"+e.root+"/gate $(touch pwned)'` passed",
		"(execute; cwd / from the guard; exit 0 in",
		"not_if `test -f '"+e.root+"/gate $(touch pwned)'` is true",
		"1 to run", "1 skipped")
	if _, err := os.Stat(filepath.Join(e.root, "pwned")); err == nil {
		t.Fatal("an argument of an argv guard was run by a shell")
	}

	// Apply evaluates the guards again, from the plan file: with the gate
	// gone they no longer agree with the plan.
	os.Remove(filepath.Join(e.root, "gate $(touch pwned)"))
	before := e.snapshot()
	r = e.must(3, "apply", "plan.out")
	contains(t, "apply", r.stderr, "guard only_if `test -f '"+e.root+"/gate $(touch pwned)'`: passed at plan time, now fails")
	sameSnapshot(t, before, e.snapshot())

	// With the gate back, apply runs them and the command.
	e.write("gate $(touch pwned)", "", 0o644)
	e.must(0, "apply", "plan.out")
	e.read("ran")
}

func TestE2EArgvGuardBadInput(t *testing.T) {
	testBadInput(t, []badInput{
		{"Chef's argv form", "file \"/x\" {\n  content = \"a\"\n  only_if = [\"test\", \"-f\", \"/x\"]\n}\n", "bad.hcl:3"},
		{"empty argv", "file \"/x\" {\n  only_if = {\n    command = []\n  }\n}\n", "bad.hcl:3"},
		{"flags on argv", "execute \"x\" {\n  only_if = {\n    command = [\"true\"]\n    flags   = \"-e\"\n  }\n}\n", "bad.hcl:4"},
	})
}
