package e2e

import (
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
