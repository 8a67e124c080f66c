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

const e2eHash = "$6$toquesalt$B/z3PiLDhw/N3ppNyPd9SHpsFAjF4qI6WvXWusj6bTN1w3XDVcvZeBwPDoEbUu8EbLf2og0ZQ3oC9BlluTbtB0"

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
