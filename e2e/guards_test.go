package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/internal/testutil"
)

// guardsEnv runs toque on one of examples/guards with GUARDS_ROOT in a
// scratch directory.
type guardsEnv struct {
	*env
	example string // absolute path of the example folder
	extra   []string
}

func newGuardsEnv(t *testing.T, example string) *guardsEnv {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "examples", "guards", example))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	return &guardsEnv{env: e, example: abs, extra: []string{"GUARDS_ROOT=" + filepath.Join(e.root, "guards")}}
}

func (g *guardsEnv) toque(args ...string) result {
	g.t.Helper()
	return g.env.toque(g.extra, args...)
}

func (g *guardsEnv) mustToque(want int, args ...string) result {
	g.t.Helper()
	return g.env.mustToque(want, g.extra, args...)
}

// plan plans the example into a plan file in the scratch dir.
func (g *guardsEnv) plan(want int) (result, string) {
	g.t.Helper()
	out := filepath.Join(g.dir, "plan.out")
	return g.mustToque(want, "-chdir="+g.example, "plan", "-detailed-exitcode", "-out="+out), out
}

func (g *guardsEnv) marker(name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(g.root, "guards", name))
	return string(b), err == nil
}

func contains(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// jsonGuards returns the guards of each resource in `show -json`.
func (g *guardsEnv) jsonGuards(planFile string) map[string][]map[string]any {
	g.t.Helper()
	r := g.mustToque(0, "show", "-json", planFile)
	var v struct {
		Resources []struct {
			Address string           `json:"address"`
			Guards  []map[string]any `json:"guards"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		g.t.Fatalf("show -json: %v\n%s", err, r.stdout)
	}
	out := map[string][]map[string]any{}
	for _, res := range v.Resources {
		out[res.Address] = res.Guards
	}
	return out
}

func TestE2EGuardsBashInterpreter(t *testing.T) {
	// dash has no [[: exit 127 under /bin/sh.
	testenv.MustHave(t, testenv.Bash, testenv.DashSh)
	g := newGuardsEnv(t, "bash-interpreter")
	r, planFile := g.plan(2)
	contains(t, "plan", r.stdout,
		"# bash[Use bash for only_if] will run: only_if `[[ 1 == 1 ]]` passed",
		"#   (bash; exit 0 in ",
		"# bash[Use sh for only_if] skipped: only_if `[[ 1 == 1 ]]` failed",
		"(/bin/sh; exit 127 in ",
		"warning: exit 127: a command inside the guard was not found",
		`? bash "Use sh for only_if"`,
		"1 skipped",
	)
	guards := g.jsonGuards(planFile)
	if sh := guards["bash[Use sh for only_if]"]; len(sh) != 1 || sh[0]["interpreter"] != "default" || sh[0]["decided"] != true || sh[0]["exit_code"] != float64(127) {
		t.Errorf("show -json guards of the sh resource: %v", sh)
	}
	g.mustToque(0, "apply", planFile)
	if out, ok := g.marker("use-bash.ran"); !ok || !strings.Contains(out, "I am") {
		t.Errorf("the bash-guarded resource did not run (%q)", out)
	}
	if _, ok := g.marker("use-sh.ran"); ok {
		t.Error("the resource whose guard is false under /bin/sh ran")
	}
}

func TestE2EGuardsInheritCwd(t *testing.T) {
	testenv.MustHave(t, testenv.Bash, testenv.FHSDirs)
	g := newGuardsEnv(t, "inherit-cwd")
	r, planFile := g.plan(2)
	contains(t, "plan", r.stdout,
		"# bash[My cwd gets inherited] will run: only_if `[[ $PWD == \"/opt\" ]]` passed",
		"#   (bash; cwd /opt inherited; exit 0 in ")
	gs := g.jsonGuards(planFile)["bash[My cwd gets inherited]"]
	if len(gs) != 1 || gs[0]["cwd"] != "/opt" || !reflectContains(gs[0]["inherited"], "cwd") {
		t.Errorf("show -json guard: %v", gs)
	}
	g.mustToque(0, "apply", planFile)
	if out, _ := g.marker("inherited.ran"); strings.TrimSpace(out) != "inherit me from /opt" {
		t.Errorf("marker %q", out)
	}
}

func reflectContains(v any, s string) bool {
	xs, _ := v.([]any)
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func TestE2EGuardsParameterOverridesCwd(t *testing.T) {
	testenv.MustHave(t, testenv.Bash, testenv.FHSDirs)
	g := newGuardsEnv(t, "override-cwd")
	r, planFile := g.plan(2)
	contains(t, "plan", r.stdout,
		"# bash[Override my guard attributes] will run: only_if `[[ $PWD == \"/opt\" ]]` passed",
		"#   (bash; cwd /opt from the guard; exit 0 in ")
	gs := g.jsonGuards(planFile)["bash[Override my guard attributes]"]
	if len(gs) != 1 || gs[0]["cwd"] != "/opt" || reflectContains(gs[0]["inherited"], "cwd") {
		t.Errorf("show -json guard: %v", gs)
	}
	g.mustToque(0, "apply", planFile)
	// The resource itself still runs in its own cwd.
	if out, _ := g.marker("override.ran"); strings.TrimSpace(out) != "override me from /var" {
		t.Errorf("marker %q", out)
	}
}

func TestE2EGuardsJavatoolingCshInheritsEnvironment(t *testing.T) {
	testenv.MustHave(t, testenv.Csh)
	g := newGuardsEnv(t, "javatooling")
	r, planFile := g.plan(2)
	contains(t, "plan", r.stdout,
		"# script[javatooling] will run: not_if `java-based-daemon-ctl.sh -test-started` is false",
		"#   (csh; DAEMON_STATE="+filepath.Join(g.root, "guards", "daemon")+" JAVA_HOME="+filepath.Join(g.example, "jdk1.7", "home")+" inherited, path "+filepath.Join(g.example, "jdk1.7", "home", "bin")+" inherited; exit 1 in ")
	gs := g.jsonGuards(planFile)["script[javatooling]"]
	if len(gs) != 1 || gs[0]["interpreter"] != "csh" || !reflectContains(gs[0]["inherited"], "environment") || !reflectContains(gs[0]["inherited"], "path") {
		t.Fatalf("show -json guard: %v", gs)
	}
	env, _ := gs[0]["environment"].(map[string]any)
	if home, _ := env["JAVA_HOME"].(string); !strings.HasSuffix(home, "examples/guards/javatooling/jdk1.7/home") {
		t.Errorf("guard environment %v", env)
	}
	// The guard's exit 1 is the daemon not running, not a missing
	// JAVA_HOME (the control script exits 2 then).
	if gs[0]["exit_code"] != float64(1) {
		t.Errorf("guard exit code %v, want 1", gs[0]["exit_code"])
	}
	g.mustToque(0, "apply", planFile)
	if out, ok := g.marker("daemon/daemon.pid"); !ok || !strings.Contains(out, "JAVA_HOME=") {
		t.Fatalf("the daemon was not started: %q", out)
	}
	// Now the csh guard, with the inherited JAVA_HOME and path, finds the
	// daemon started: the resource is skipped.
	r, _ = g.plan(0)
	contains(t, "second plan", r.stdout,
		"# script[javatooling] skipped: not_if `java-based-daemon-ctl.sh -test-started` is true",
		"exit 0 in ", "0 to run, 1 skipped")
}

func TestE2EGuardsUserRoot(t *testing.T) {
	// dash's [ knows = but not ==: "unexpected operator", exit 2.
	testenv.MustHave(t, testenv.Bash, testenv.DashSh)
	cases := []struct {
		user        string
		bashVerdict string
	}{
		{"root", "# bash[systemrestart] will run: only_if `[ \"$USER\" == \"root\" ]` passed"},
		{"nobody", "# bash[systemrestart] skipped: only_if `[ \"$USER\" == \"root\" ]` failed"},
	}
	for _, c := range cases {
		t.Run(c.user, func(t *testing.T) {
			g := newGuardsEnv(t, "user-root")
			g.extra = append(g.extra, "USER="+c.user)
			want := 2
			r, planFile := g.plan(want)
			contains(t, "plan", r.stdout, c.bashVerdict,
				// dash: "[: root: unexpected operator", exit 2, for any user.
				"# bash[systemrestart with sh] skipped: only_if `[ \"$USER\" == \"root\" ]` failed",
				"(/bin/sh; exit 2 in ")
			g.mustToque(0, "apply", planFile)
			_, ran := g.marker("systemrestart.ran")
			if ran != (c.user == "root") {
				t.Errorf("USER=%s: systemrestart ran = %v", c.user, ran)
			}
			if _, ok := g.marker("systemrestart-sh.ran"); ok {
				t.Error("the /bin/sh-guarded resource ran")
			}
		})
	}
}

func TestE2EGuardsPowerShell(t *testing.T) {
	g := newGuardsEnv(t, "powershell")
	if ok, _ := testenv.Has(testenv.Pwsh); !ok {
		// The guards run in PowerShell, never silently in sh: without
		// pwsh the plan fails and says why. Then the live examples skip.
		r := g.mustToque(1, "-chdir="+g.example, "plan")
		contains(t, "plan without pwsh", r.stderr, "Guard cannot run", `"pwsh" not found`)
		testenv.MustHave(t, testenv.Pwsh)
	}
	r, planFile := g.plan(2)
	contains(t, "plan", r.stdout,
		"# powershell_script[defaultguard] will run: not_if `Get-Item -ErrorAction Stop",
		"# powershell_script[set execution policy] will run: not_if `(Get-Content",
		"architecture inherited")
	g.mustToque(0, "apply", planFile)
	r, _ = g.plan(0)
	contains(t, "second plan", r.stdout, "0 to run, 3 skipped")
}

func TestE2EGuardFlippedByAnEarlierResourceDiffersFromPlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("main.hcl", `
file "ROOT/flag" {
  content = "x"
}
file "ROOT/other" {
  content = "y"
  not_if  = "test -e ROOT/flag"
}
`)
	r := e.must(2, "plan", "-detailed-exitcode", "-out=plan.out")
	contains(t, "plan", r.stdout, "Plan: 2 to create")
	r = e.must(0, "apply", "plan.out")
	contains(t, "apply", r.stdout,
		"file["+e.root+"/other]: skipped",
		"note: differs from plan: not_if `test -e "+e.root+"/flag` now true",
		"1 created", "1 skipped")
	if _, err := os.Stat(filepath.Join(e.root, "other")); err == nil {
		t.Error("the resource whose guard flipped was converged")
	}
	b, err := os.ReadFile(filepath.Join(e.state, "reports", "last.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"differs_from_plan": "not_if`) {
		t.Errorf("report lacks the difference:\n%s", b)
	}
}

func TestE2EStaleGuardRefusesTheApply(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("gate", "", 0o644)
	e.write("gate2", "", 0o644)
	e.recipe("main.hcl", `
file "ROOT/a" {
  content = "x"
  only_if = "test -e ROOT/gate"
}
file "ROOT/b" {
  content = "x"
  not_if  = "test -e ROOT/gate2"
}
`)
	r := e.must(2, "plan", "-detailed-exitcode", "-out=plan.out")
	contains(t, "plan", r.stdout, "1 to create", "1 skipped")
	os.Remove(filepath.Join(e.root, "gate"))
	os.Remove(filepath.Join(e.root, "gate2"))
	before := e.snapshot()
	r = e.must(3, "apply", "plan.out")
	contains(t, "apply", r.stderr,
		"guard only_if `test -e "+e.root+"/gate`: passed at plan time, now fails",
		"guard not_if `test -e "+e.root+"/gate2`: true at plan time, now false")
	sameSnapshot(t, before, e.snapshot())
}

func TestE2EGuardBadInput(t *testing.T) {
	t.Parallel()
	testBadInput(t, []badInput{
		{"unknown guard_interpreter", "file \"/x\" {\n  guard_interpreter = \"zsh\"\n  only_if = \"true\"\n}\n", "bad.hcl:2"},
		{"null guard", "file \"/x\" {\n  content = \"a\"\n  only_if = null\n}\n", "bad.hcl:3"},
		{"number guard", "file \"/x\" {\n  not_if = 3\n}\n", "bad.hcl:2"},
		{"unknown key", "file \"/x\" {\n  only_if = {\n    command = \"true\"\n    cwdd = \"/\"\n  }\n}\n", "bad.hcl:4"},
		{"returns 300", "file \"/x\" {\n  only_if = {\n    command = \"true\"\n    returns = 300\n  }\n}\n", "bad.hcl:4"},
		{"umask 9", "file \"/x\" {\n  only_if = {\n    command = \"true\"\n    umask = \"9\"\n  }\n}\n", "bad.hcl:4"},
		{"not a runner", "file \"/x\" {\n  guard_interpreter = \"link\"\n  only_if = \"true\"\n}\n", "bad.hcl:2"},
	})
}

func TestE2EHangingGuardIsKilledAtItsTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("main.hcl", `
file "ROOT/a" {
  content = "x"
  only_if = {
    command = "(sleep 2; touch ROOT/survived) & echo $! > ROOT/pid; sleep 60"
    timeout = 1
  }
}
`)
	start := time.Now()
	r := e.must(1, "plan")
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("plan took %s", d)
	}
	contains(t, "plan", strings.Join(strings.Fields(r.stderr), " "), "Guard cannot run", "timed out after 1s", "process group was killed", "main.hcl:4")
	// Killed, the background subshell is gone at once; spared, it is gone
	// after touching the marker.
	testutil.WaitGone(t, testutil.ReadPid(t, filepath.Join(e.root, "pid")))
	if _, err := os.Stat(filepath.Join(e.root, "survived")); err == nil {
		t.Error("a process the guard started outlived its timeout")
	}
}
