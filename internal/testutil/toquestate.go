package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ToqueStateEnv are the settings that choose where toque keeps its state on
// the host: the state directory (apply's lock, journal, reports, backups;
// the policy cache), the host-wide apply lock, and the download cache.
// Unset, they default to the machine's own — /var/lib/toque and
// /run/toque/apply.lock as root — which another toque, or CI, may be using
// while the tests run.
var ToqueStateEnv = []string{"TOQUE_STATE_DIR", "TOQUE_HOST_LOCK", "TOQUE_CACHE_DIR"}

// IsolateToqueState is a TestMain for a package whose tests may run toque
// code that reads ToqueStateEnv from the process's environment: it points
// every one of them at a fresh scratch directory — for the test binary and
// every process it starts — runs the tests, removes the directory and
// returns the exit status for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(testutil.IsolateToqueState(m)) }
//
// Tests that want their own state set the variables again (t.Setenv) or
// give paths explicitly; none falls back to the machine's.
func IsolateToqueState(m *testing.M) int {
	dir, err := os.MkdirTemp("", "toque-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testutil: no scratch directory for toque's state:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	isolated = dir
	paths := map[string]string{
		"TOQUE_STATE_DIR": filepath.Join(dir, "state"),
		"TOQUE_HOST_LOCK": filepath.Join(dir, "run", "apply.lock"),
		"TOQUE_CACHE_DIR": filepath.Join(dir, "cache"),
	}
	for _, k := range ToqueStateEnv {
		if err := os.Setenv(k, paths[k]); err != nil {
			fmt.Fprintln(os.Stderr, "testutil:", err)
			return 1
		}
	}
	return m.Run()
}

// isolated is the scratch directory IsolateToqueState made, "" before.
var isolated string

// IsolatedToqueState returns the scratch directory IsolateToqueState
// pointed ToqueStateEnv at, and fails the test when the package's TestMain
// did not call it.
func IsolatedToqueState(t testing.TB) string {
	t.Helper()
	if isolated == "" {
		t.Fatal("this package's TestMain must call testutil.IsolateToqueState: its tests could otherwise reach the machine's own toque state")
	}
	return isolated
}

// MustBeUnder fails the test at once when path, which toque resolved for
// what ("the host-wide apply lock"), is not inside dir, the test's scratch
// directory: a test must never use the machine's own toque state.
func MustBeUnder(t testing.TB, dir, what, path string) {
	t.Helper()
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		t.Fatalf("%s resolves to %s, outside the test's scratch directory %s: the test would use the machine's own toque state (another toque, or CI, may be using it); give it a path of the test's", what, path, dir)
	}
}
