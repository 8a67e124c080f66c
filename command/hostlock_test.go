package command

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

func TestHostLockPath(t *testing.T) {
	t.Setenv(HostLockEnv, "/tmp/x/apply.lock")
	env := Env{}.withDefaults() // the process's, which t.Setenv sets
	if got := hostLock(env); got != "/tmp/x/apply.lock" {
		t.Errorf("with %s set: %q", HostLockEnv, got)
	}
	t.Setenv(HostLockEnv, "")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	want := "/run/user/1000/toque/apply.lock"
	if os.Geteuid() == 0 {
		want = "/run/toque/apply.lock"
	}
	if got := hostLock(env); got != want {
		t.Errorf("default: %q, want %q", got, want)
	}
	if os.Geteuid() != 0 {
		t.Setenv("XDG_RUNTIME_DIR", "relative")
		if got, want := hostLock(env), filepath.Join(os.TempDir(), fmt.Sprintf("toque-%d", os.Geteuid()), "apply.lock"); got != want {
			t.Errorf("without a usable runtime directory: %q, want %q", got, want)
		}
	}
}

// Whatever a test of this package leaves to the defaults resolves inside
// the scratch directory TestMain made, never to the machine's own state.
func TestDefaultsAreTheTestsScratch(t *testing.T) {
	dir := testutil.IsolatedToqueState(t)
	env := Env{}.withDefaults()
	testutil.MustBeUnder(t, dir, "the host-wide apply lock", hostLock(env))
	testutil.MustBeUnder(t, dir, "the state directory", stateDir(env, ""))
}
