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
