package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

func TestCookbookIdentifier(t *testing.T) {
	files := map[string]string{"metadata.hcl": "name = \"c\"\nversion = \"1.0.0\"\n", "recipes/default.hcl": "", "templates/a.tpl": "x"}
	a, b := t.TempDir(), t.TempDir()
	testutil.WriteFiles(t, a, files)
	testutil.WriteFiles(t, b, files)
	testutil.WriteFiles(t, b, map[string]string{".git/HEAD": "ignored", ".swp": "ignored"})
	ida, err := CookbookIdentifier(a)
	if err != nil {
		t.Fatal(err)
	}
	idb, _ := CookbookIdentifier(b)
	if ida != idb || len(ida) != 64 {
		t.Fatalf("same content, identifiers %s %s", ida, idb)
	}
	testutil.WriteFiles(t, b, map[string]string{"templates/a.tpl": "y"})
	if idc, _ := CookbookIdentifier(b); idc == ida {
		t.Fatal("changed content, same identifier")
	}
	os.Rename(filepath.Join(b, "templates/a.tpl"), filepath.Join(b, "templates/b.tpl"))
	testutil.WriteFiles(t, b, map[string]string{"templates/b.tpl": "x"})
	if idd, _ := CookbookIdentifier(b); idd == ida {
		t.Fatal("renamed file, same identifier")
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(a, "files-link")); err != nil {
		t.Fatal(err)
	}
	if _, err := CookbookIdentifier(a); err == nil || !strings.Contains(err.Error(), "regular files") {
		t.Fatalf("symlink accepted: %v", err)
	}
}
