package e2e

import (
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// isolatedGit isolates git (ours and toque's) and gives toque a cache of
// its own.
func isolatedGit(t *testing.T) {
	t.Helper()
	home := testutil.IsolateGit(t)
	t.Setenv("TOQUE_CACHE_DIR", filepath.Join(home, "cache"))
}
