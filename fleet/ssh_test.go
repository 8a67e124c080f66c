package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/internal/trust"
)

// toque's own options come first (ssh keeps the first value of each), so
// a user's or inventory's ForwardAgent yes cannot hand the agent to every
// host of a fleet.
func TestRouteOptionsForwardNothing(t *testing.T) {
	r := &Route{Alias: "web-01", Options: []Option{{"ForwardAgent", "yes"}}}
	first := map[string]string{}
	for _, o := range r.options() {
		if _, ok := first[o.Name]; !ok {
			first[o.Name] = o.Value
		}
	}
	for _, k := range []string{"ForwardAgent", "ForwardX11", "ForwardX11Trusted"} {
		if first[k] != "no" {
			t.Errorf("%s is %q first, want no", k, first[k])
		}
	}
}

// A control directory under a parent other users may write (no sticky
// bit) is refused: it could be swapped for one whose sockets answer. The
// next candidate, $TMPDIR's, is taken.
func TestControlDirAncestors(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	safe := t.TempDir()
	if err := trust.Ancestors(safe); err != nil {
		// (As nobody, the harness's temporary directory is one; the
		// next candidate would be the machine's /tmp.)
		t.Skipf("the test's temporary directory is not a safe parent itself: %v", err)
	}
	want := filepath.Join(safe, fmt.Sprintf("toque-fleet-%d", os.Getuid()))
	if len(want)+1+16 > maxSocketPath {
		t.Skipf("the test's temporary directory %s is too long a path for ssh's sockets (the next candidate would be the machine's /tmp)", safe)
	}
	t.Setenv("TMPDIR", safe)
	d, err := ControlDir(open)
	if err != nil || d != want {
		t.Errorf("control directory %s (%v), want %s, not under the world-writable %s", d, err, want, open)
	}
}
