package packages

import (
	"os"
	"path/filepath"
	"testing"
)

// The .rpm of a package whose architecture dnf did not say is found by
// its full name: foo's, beside foo-libs' of the same version.
func TestFetchedRPM(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"foo-1.0-1.el9.x86_64.rpm", "foo-libs-1.0-1.el9.x86_64.rpm"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := fetchedRPM(dir, &debRef{Name: "foo", Version: "1.0-1.el9"}); err != nil || got != "foo-1.0-1.el9.x86_64.rpm" {
		t.Errorf("foo: %q, %v", got, err)
	}
	if got, err := fetchedRPM(dir, &debRef{Name: "foo-libs", Version: "1.0-1.el9"}); err != nil || got != "foo-libs-1.0-1.el9.x86_64.rpm" {
		t.Errorf("foo-libs: %q, %v", got, err)
	}
	if _, err := fetchedRPM(dir, &debRef{Name: "bar", Version: "1.0-1"}); err == nil {
		t.Error("bar found")
	}
}
