package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testutil"
)

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

// A batch load_current_value that hangs fails the plan after one timeout,
// not one per resource.
func TestE2ECustomTypeBatchHangs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("main.hcl", `
resource_type "slow" {
  property "v" { type = string }
  load_current_value {
    batch   = true
    timeout = 1
    code    = "sleep 30"
  }
  action "create" {
    converge_if_changed { code = "true" }
  }
}
slow "a" { v = "1" }
slow "b" { v = "2" }
slow "c" { v = "3" }
slow "d" { v = "4" }
`)
	start := time.Now()
	r := e.must(1, "plan")
	contains(t, "plan", flat(r.stderr), "did not finish within 1s", "Cannot read slow[a]", "Cannot read slow[d]")
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the plan took %s: the hanging batch ran again per resource", d)
	}
}
