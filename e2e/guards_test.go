package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testutil"
)

func contains(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
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
