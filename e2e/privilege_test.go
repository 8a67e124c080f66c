package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

// As a user other than root, the plan refuses what apply could not do:
// writing a directory that user may not write, giving a file to another
// owner, running a command as another user. Nothing reaches apply.
func TestE2EPlanAsNonRootRefusesWhatNeedsRoot(t *testing.T) {
	t.Parallel()
	testenv.MustHave(t, testenv.Root, testenv.Nobody) // to run toque as nobody
	e := newEnv(t)
	// The binary, the recipes and a state directory reachable by nobody.
	os.Chmod(filepath.Dir(toqueBin), 0o755)
	home := filepath.Join(filepath.Dir(e.dir), "nobody")
	os.MkdirAll(home, 0o700)
	os.Chown(home, 65534, 65534)
	open := filepath.Join(e.root, "open")
	os.MkdirAll(open, 0o755)
	os.Chown(open, 65534, 65534)
	closed := filepath.Join(e.root, "closed")
	os.MkdirAll(closed, 0o755) // root's
	e.recipe("a.hcl", `
file "ROOT/open/mine" { content = "ok" }
file "ROOT/closed/x" { content = "no" }
file "ROOT/open/given" {
  content = "x"
  owner   = "root"
}
execute "as-root" {
  command = "true"
  user    = "root"
}
`)
	before := e.snapshot()
	cmd := exec.Command(toqueBin, "-chdir="+e.dir, "plan", "-out="+filepath.Join(home, "plan.out"))
	cmd.Env = append(os.Environ(), "TOQUE_STATE_DIR="+filepath.Join(home, "state"), "TOQUE_HOST_LOCK="+filepath.Join(home, "host.lock"), "HOME="+home, "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1, got %v\n%s", err, out)
	}
	flat := strings.Join(strings.Fields(string(out)), " ")
	for _, want := range []string{
		"may not write the directory " + closed,
		"giving " + e.root + "/open/given to owner root needs root",
		"running a command as user root needs root",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(flat, e.root+"/open/mine") && strings.Contains(flat, "mine: toque runs as uid") {
		t.Errorf("a file nobody may write is refused:\n%s", out)
	}
	sameSnapshot(t, before, e.snapshot())
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

// As any user but root, the plan refuses to change accounts: the shadow
// tools run only as root. Nothing reaches apply.
func TestE2EAccountsNeedRoot(t *testing.T) {
	t.Parallel()
	testenv.MustHave(t, testenv.Root, testenv.Nobody) // to run toque as nobody
	e := newEnv(t)
	os.Chmod(filepath.Dir(toqueBin), 0o755)
	home := filepath.Join(filepath.Dir(e.dir), "nobody")
	os.MkdirAll(home, 0o700)
	os.Chown(home, 65534, 65534)
	e.recipe("a.hcl", `user "toq-nobody-made" {
  shell = "/bin/sh"
}
group "toq-nobody-group" {}
`)
	before := hostFingerprint(t)
	cmd := exec.Command(toqueBin, "-chdir="+e.dir, "plan")
	cmd.Env = append(os.Environ(), "TOQUE_STATE_DIR="+filepath.Join(home, "state"), "TOQUE_HOST_LOCK="+filepath.Join(home, "host.lock"), "HOME="+home, "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1, got %v\n%s", err, out)
	}
	flat := strings.Join(strings.Fields(string(out)), " ")
	for _, want := range []string{
		"changing the user database (create user toq-nobody-made) needs root, and toque runs as uid 65534",
		"changing the group database (create group toq-nobody-group) needs root",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if after := hostFingerprint(t); after != before {
		t.Errorf("the host changed:\n%s\n%s", before, after)
	}
}
