package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// loadWith reads a file resource at path, in the batch of reads rd when
// it is set.
func loadWith(t *testing.T, rd *resources.Reads, path string, vals map[string]any) (*resources.State, error) {
	t.Helper()
	ft := FileType()
	v := map[string]any{"path": path, "content": "x"}
	for k, x := range vals {
		v[k] = x
	}
	ctx := context.Background()
	if rd != nil {
		ctx = resources.WithReads(ctx, rd)
	}
	return ft.Load(ctx, resourcetest.NewRes(t, ft, "", v).LoadView())
}

// sameState compares what a plan takes from two readings.
func sameState(a, b *resources.State) bool {
	return a.Exists == b.Exists && reflect.DeepEqual(a.Values, b.Values) &&
		reflect.DeepEqual(a.Extra, b.Extra) && reflect.DeepEqual(a.Private, b.Private)
}

// TestDirCacheReadsAsLookupPathDoes: reading the files of a directory
// through a DirCache holds that directory once, finds exactly what a read
// without it finds (present, absent, a link, a private file, a missing
// directory), and closes every descriptor on Close.
func TestDirCacheReadsAsLookupPathDoes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	rd, c := newReads()
	for _, name := range []string{"a", "secret", "link", "absent", "nodir/x"} {
		path := filepath.Join(dir, name)
		want, werr := loadWith(t, nil, path, nil)
		got, gerr := loadWith(t, rd, path, nil)
		if (werr == nil) != (gerr == nil) || werr == nil && !sameState(got, want) {
			t.Errorf("%s: through the cache %+v %v, without %+v %v", name, got, gerr, want, werr)
		}
	}
	if n := len(c.dirs); n != 1 {
		t.Errorf("the cache holds %d directories, want 1 (%v)", n, c.dirs)
	}
	rd.Close()
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open after Close, %d before", after, before)
	}
}

// TestDirCacheFollowsNoLink: a parent directory that is a symbolic link
// is never held by the cache; the read takes the step-by-step walk and
// finds what it finds without the cache.
func TestDirCacheFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "f"), []byte("f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "via")); err != nil {
		t.Fatal(err)
	}
	rd, c := newReads()
	defer rd.Close()
	path := filepath.Join(dir, "via", "f")
	want, werr := loadWith(t, nil, path, nil)
	got, gerr := loadWith(t, rd, path, nil)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || werr == nil && !sameState(got, want) {
		t.Errorf("through the cache %+v %v, without %+v %v", got, gerr, want, werr)
	}
	if _, held := c.dirs[filepath.Join(dir, "via")]; held {
		t.Errorf("the cache holds a directory reached through a link")
	}
}

// TestDirCacheIsBounded: past dirCacheMax directories, reads hold their
// directory for themselves, and nothing is left open.
func TestDirCacheIsBounded(t *testing.T) {
	root := t.TempDir()
	before := openFDs(t)
	rd, c := newReads()
	for i := range dirCacheMax + 10 {
		d := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := loadWith(t, rd, filepath.Join(d, "f"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.dirs) != dirCacheMax {
		t.Errorf("the cache holds %d directories, want %d", len(c.dirs), dirCacheMax)
	}
	rd.Close()
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open after Close, %d before", after, before)
	}
}

// newReads is a batch of reads and its directory cache.
func newReads() (*resources.Reads, *DirCache) {
	rd := resources.NewReads()
	return rd, dirCacheOf(resources.WithReads(context.Background(), rd))
}
