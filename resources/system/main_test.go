package system

import (
	"os"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/resources/internal/hostexec"
)

// TestMain points toque's state directory, host-wide lock and download
// cache at a scratch directory for every test of the package, never the
// machine's /var/lib/toque or /run/toque.
func TestMain(m *testing.M) { os.Exit(testutil.IsolateToqueState(m)) }

// planAsRoot makes the types of this package plan as toque does as root
// for the rest of the test (they refuse at plan what only root may do):
// the tests that use it plan against a throwaway root, never the host,
// and run as any user. Such tests do not run in parallel.
func planAsRoot(t *testing.T) {
	t.Helper()
	old := hostexec.EffectiveUID
	hostexec.EffectiveUID = func() int { return 0 }
	t.Cleanup(func() { hostexec.EffectiveUID = old })
}
