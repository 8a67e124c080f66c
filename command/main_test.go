package command

import (
	"os"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// TestMain points toque's state directory, host-wide lock and download
// cache at a scratch directory for every test of the package: an Env left
// to the process's environment, and the resource types that read it
// themselves, never reach /var/lib/toque or /run/toque/apply.lock.
func TestMain(m *testing.M) { os.Exit(testutil.IsolateToqueState(m)) }
