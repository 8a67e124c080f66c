package vcs

import (
	"os"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// TestMain points toque's state directory, host-wide lock and download
// cache at a scratch directory for every test of the package, never the
// machine's /var/lib/toque or /run/toque.
func TestMain(m *testing.M) { os.Exit(testutil.IsolateToqueState(m)) }
