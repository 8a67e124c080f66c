package packages

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/debtest"
	"github.com/toquehq/toque/resources"
)

// deadRepoURL is an http repository on a loopback port nothing listens
// on: apt-get update's fetch of it fails with "connection refused", a
// failure apt 2.6 reports as W: lines while it exits 0.
func deadRepoURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/"
}

// TestAptUpdateFailedFetch: apt-get update that could not fetch an index
// fails the resource, naming the fetch, and writes no success stamp —
// whether every source failed or one of two; a stamp that was there keeps
// its time.
func TestAptUpdateFailedFetch(t *testing.T) {
	debtest.Require(t)
	good := filepath.Join(t.TempDir(), "repo")
	debtest.Repo(t, good, debtest.Pkg{Name: "toque-fixture", Version: "1.0"})
	for _, c := range []struct {
		name    string
		sources func(dead string) string
	}{
		{"every source fails", func(dead string) string { return "deb [trusted=yes] " + dead + " ./\n" }},
		{"one of two fails", func(dead string) string {
			return "deb [trusted=yes] file:" + good + " ./\ndeb [trusted=yes] " + dead + " ./\n"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := debtest.NewRoot(t)
			// apt retries a refused connection with a growing wait (7 s);
			// the failure is the same without.
			os.WriteFile(filepath.Join(root.Dir, "etc/apt/apt.conf.d/99retries"), []byte("Acquire::Retries \"0\";\n"), 0o644)
			dead := deadRepoURL(t)
			os.WriteFile(filepath.Join(root.Dir, "etc/apt/sources.list"), []byte(c.sources(dead)), 0o644)
			upd := newAptUpdateType(&aptProvider{env: root.Env, readTimeout: time.Minute}, root.Dir)
			stamp := filepath.Join(root.Dir, updateStamp)

			_, step, err := runType(t, upd, normalized(t, upd.schema, "lists", "periodic", nil), true)
			if step == nil || step.Kind != resources.Run {
				t.Fatalf("plan: %v %+v", err, step)
			}
			if err == nil || !strings.Contains(err.Error(), "Failed to fetch "+dead) {
				t.Fatalf("apply: %v", err)
			}
			if _, serr := os.Stat(stamp); !os.IsNotExist(serr) {
				t.Fatalf("the success stamp was written after a failed update: %v", serr)
			}

			// An old stamp keeps its time: periodic stays due.
			old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
			os.MkdirAll(filepath.Dir(stamp), 0o755)
			os.WriteFile(stamp, nil, 0o644)
			os.Chtimes(stamp, old, old)
			if _, _, err := runType(t, upd, normalized(t, upd.schema, "lists", "update", nil), true); err == nil {
				t.Fatal("update succeeded")
			}
			if fi, err := os.Stat(stamp); err != nil || !fi.ModTime().Equal(old) {
				t.Fatalf("the stamp's time changed: %v %v", fi.ModTime(), err)
			}
		})
	}
}

// TestFailedFetches: what an apt without APT::Update::Error-Mode (which
// then exits 0) says of a failed fetch is a failure; its other warnings
// are not. The lines are apt 2.6's, in the C locale.
func TestFailedFetches(t *testing.T) {
	out := strings.Join([]string{
		"Ign:1 http://127.0.0.1:9 ./ InRelease",
		"Err:1 http://127.0.0.1:9 ./ InRelease",
		"  Could not connect to 127.0.0.1:9 (127.0.0.1). - connect (111: Connection refused)",
		"Reading package lists...",
		"W: Failed to fetch http://alice:s3cr3t@127.0.0.1:9/./InRelease  Could not connect to 127.0.0.1:9 (127.0.0.1). - connect (111: Connection refused)",
		"W: Some index files failed to download. They have been ignored, or old ones used instead.",
		"W: GPG error: https://deb.example.com stable InRelease: The following signatures were invalid: EXPKEYSIG 1234 Example",
		"W: Target Packages (main/binary-amd64/Packages) is configured multiple times in /etc/apt/sources.list:1 and /etc/apt/sources.list.d/x.list:1",
		"N: Skipping acquire of configured file 'main/binary-i386/Packages' as repository 'https://deb.example.com stable InRelease' doesn't support architecture 'i386'",
	}, "\n")
	failed, others := failedFetches(out)
	if len(failed) != 3 || !strings.HasPrefix(failed[0], "W: Failed to fetch http://***@127.0.0.1:9/") || !strings.HasPrefix(failed[2], "W: GPG error") {
		t.Errorf("failed %q", failed)
	}
	if len(others) != 1 || !strings.Contains(others[0], "configured multiple times") {
		t.Errorf("others %q", others)
	}
	if f, o := failedFetches("Get:1 file:/srv/repo ./ Packages [268 B]\nReading package lists...\n"); f != nil || o != nil {
		t.Errorf("a clean update: %q %q", f, o)
	}
}
