package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/plan"
)

// TestVerify holds Apply's first phase alone: what it refuses, and that it
// refuses before anything exists on disk.
func TestVerify(t *testing.T) {
	reg := testRegistry()
	good := func(t *testing.T) *plan.Plan { return makePlan(t, reg, tfile(filepath.Join(t.TempDir(), "f"), "x")) }
	cases := []struct {
		name    string
		plan    func(t *testing.T) *plan.Plan
		applier func(a *Applier)
		wantErr string // "" when verify must pass
	}{
		{"a plan to apply", good, nil, ""},
		{"no plan", func(*testing.T) *plan.Plan { return nil }, nil, "no plan to apply"},
		{"an errored plan", func(t *testing.T) *plan.Plan {
			p := good(t)
			p.Errored = true
			return p
		}, nil, "the plan is marked errored"},
		{"no registry", good, func(a *Applier) { a.Registry = nil }, "no resource type registry"},
		{"no state directory", good, func(a *Applier) { a.StateDir = "" }, "no state directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, _ := newApplier(t, reg)
			if c.applier != nil {
				c.applier(a)
			}
			err := a.verify(c.plan(t))
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("verify: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("verify error %v, want one saying %q", err, c.wantErr)
			}
			if a.StateDir != "" {
				if _, err := os.Lstat(a.StateDir); !os.IsNotExist(err) {
					t.Errorf("verify touched the state directory: %v", err)
				}
			}
		})
	}
}
