package policy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseLock: any bytes give a lock or an error, never a panic; a lock
// accepted has plain names only and encodes again.
func FuzzParseLock(f *testing.F) {
	f.Add([]byte(`{"name": "p", "cookbook_locks": {"a": {"version": "1.0.0", "identifier": "x"}}}`))
	f.Add([]byte(`{"name": "p", "cookbook_locks": {"../../evil": {}}}`))
	f.Add([]byte(`{"name": "p", "included_policy_locks": [{"name": "b", "included_policy_locks": [null]}], "attribute_origins": [null]}`))
	f.Add([]byte(`{"name": "p", "default_attributes": {"a": [1, {"b": 1e400}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLock(b)
		if err != nil {
			return
		}
		for n := range l.CookbookLocks {
			if strings.Contains(n, "/") || strings.Contains(n, "..") || n == "" {
				t.Fatalf("accepted the cookbook name %q", n)
			}
		}
		l.ComputeRevisionID()
		if _, err := l.Marshal(); err != nil {
			t.Fatalf("an accepted lock does not encode: %v", err)
		}
	})
}

// FuzzExtractTar: a hostile archive never makes extractTar panic nor write
// outside its directory, and every link it leaves passes
// linkTargetInside.
func FuzzExtractTar(f *testing.F) {
	for _, entries := range [][][2]string{
		{{"t/", ""}, {"t/a", "A"}, {"t/cur", "->a"}},
		{{"d", "->sub"}, {"d/f", "through"}},
		{{"x", "->../../x"}},
		{{"a", "A"}, {"b", "=>a"}},
		{{"../escape", "E"}},
	} {
		f.Add(tarOf(&testing.T{}, entries).Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		base := t.TempDir()
		dest := filepath.Join(base, "cb")
		_ = extractTar(bytes.NewReader(b), dest)
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "cb" {
				t.Fatalf("extraction wrote %s beside its directory", e.Name())
			}
		}
		filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.Type()&os.ModeSymlink == 0 {
				return nil
			}
			target, _ := os.Readlink(p)
			rel, _ := filepath.Rel(dest, p)
			if err := linkTargetInside(filepath.ToSlash(rel), target); err != nil {
				t.Fatalf("left a link it should have refused: %v", err)
			}
			return nil
		})
	})
}
