package e2e

import (
	"testing"
	"time"
)

// Resource types written in HCL (resource_type), through the binary:
// examples/custom-types, the seed's two examples, staleness, guards,
// notifications, sensitivity, cookbooks and bad input.

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
