package planner_test

import (
	"os"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// TestMain points toque's state directory, host-wide lock and download
// cache at a scratch directory for every test of the package: a built-in
// type that caches what it reads (remote_file's downloads) never writes
// into the machine's /var/lib/toque.
func TestMain(m *testing.M) { os.Exit(testutil.IsolateToqueState(m)) }
