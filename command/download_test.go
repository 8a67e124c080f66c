package command

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// TestDownloadsGoWhereTheCommandsEnvSays: an in-process plan of a
// remote_file caches its download under the state directory the
// command's own environment names, not the process's (which, as root
// outside tests, is the machine's /var/lib/toque).
func TestDownloadsGoWhereTheCommandsEnvSays(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello\n")
	}))
	defer srv.Close()
	dir, root := t.TempDir(), t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"main.hcl": fmt.Sprintf(`
remote_file %q {
  source         = "%s/motd"
  allow_internal = true
}
`, filepath.Join(root, "motd"), srv.URL)})
	scratch := t.TempDir()
	if code, out, errs := runToqueState(t, dir, scratch, nil, "plan"); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errs)
	}
	blobs, _ := filepath.Glob(filepath.Join(scratch, "cache", "downloads", "sha256", "*"))
	if len(blobs) != 1 {
		t.Errorf("the command's download cache holds %v, want the one download", blobs)
	}
	processCache := filepath.Join(os.Getenv("TOQUE_CACHE_DIR"), "downloads", "sha256")
	if ents, _ := os.ReadDir(processCache); len(ents) > 0 {
		t.Errorf("the process's download cache %s got %d files", processCache, len(ents))
	}
}
