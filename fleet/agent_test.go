package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An agent's digest is kept in the cache and used again while the file
// is the same; a file written since is digested again.
func TestAgentDigestCache(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip("cannot find the test binary:", err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, cache := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "toque-linux-amd64")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	find := func() *Agent {
		t.Helper()
		as, err := FindAgents(dir, "", "linux/amd64", cache)
		if err != nil {
			t.Skip("the test binary is no agent here:", err)
		}
		return as.ByPlatform["linux/amd64"]
	}
	first := find()
	if first == nil || !first.Detects {
		t.Fatalf("agent %+v: want one that takes -detect", first)
	}
	kept, _ := filepath.Glob(filepath.Join(cache, "agent-*"))
	if len(kept) != 1 {
		t.Fatalf("want the digest kept, got %v", kept)
	}
	// A kept digest that says otherwise is believed while the file is
	// the same (this is how the test sees it used).
	old, _ := os.ReadFile(kept[0])
	fake := strings.Repeat("0", 64)
	if err := os.WriteFile(kept[0], []byte(strings.Replace(string(old), first.Digest, fake, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if a := find(); a.Digest != fake {
		t.Fatalf("the kept digest was not used: %s", a.Digest)
	}
	// The file written again (same content, new change time): digested.
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if a := find(); a.Digest != first.Digest {
		t.Fatalf("digest %s after the file changed, want %s", a.Digest, first.Digest)
	}
}
