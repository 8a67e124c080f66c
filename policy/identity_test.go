package policy

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	// The documented form: sha256 over PATH NUL HEX(sha256(bytes)) LF,
	// sorted by path. Existing locks depend on it.
	var want bytes.Buffer
	for _, p := range []string{"metadata.hcl", "recipes/default.hcl", "templates/a.tpl"} {
		sum := sha256.Sum256([]byte(files[p]))
		want.WriteString(p + "\x00" + hex.EncodeToString(sum[:]) + "\n")
	}
	if sum := sha256.Sum256(want.Bytes()); ida != hex.EncodeToString(sum[:]) {
		t.Fatalf("identifier %s is not the documented form", ida)
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
}

func TestCookbookDirectoryThatIsALink(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "shared", "web")
	testutil.WriteFiles(t, real, cookbookFiles(".", "web", "1.0.0", ""))
	link := filepath.Join(root, "policy", "cookbooks", "web")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../shared/web", link); err != nil {
		t.Fatal(err)
	}
	viaLink, err := CookbookIdentifier(link)
	if err != nil {
		t.Fatal(err)
	}
	direct, _ := CookbookIdentifier(real)
	empty := FilesIdentifier(nil)
	if viaLink != direct || viaLink == empty {
		t.Fatalf("through the link %s, directly %s (empty is %s)", viaLink, direct, empty)
	}
	testutil.WriteFiles(t, real, map[string]string{"recipes/default.hcl": "# changed\n"})
	if now, _ := CookbookIdentifier(link); now == viaLink {
		t.Fatal("a change behind the link left the identifier as it was")
	}
	if _, err := CookbookIdentifier(filepath.Join(root, "nowhere")); err == nil {
		t.Fatal("a missing directory has an identifier")
	}
	testutil.WriteFiles(t, root, map[string]string{"afile": "x"})
	if _, err := CookbookIdentifier(filepath.Join(root, "afile")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a file as a cookbook: %v", err)
	}
}

func TestLinksInsideACookbook(t *testing.T) {
	base := map[string]string{
		"metadata.hcl":        "name = \"c\"\nversion = \"1.0.0\"\n",
		"templates/v1.tpl":    "one",
		"templates/v2.tpl":    "two",
		"templates/sub/x.tpl": "x",
		".git/config":         "hidden",
	}
	mk := func(t *testing.T, links map[string]string) (string, error) {
		dir := t.TempDir()
		testutil.WriteFiles(t, dir, base)
		// Something to find outside, beside the cookbook.
		testutil.WriteFiles(t, filepath.Dir(dir), map[string]string{"x": "outside"})
		for p, target := range links {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
		}
		return CookbookIdentifier(dir)
	}
	plain, err := mk(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	toV1, err := mk(t, map[string]string{"templates/current.tpl": "v1.tpl"})
	if err != nil {
		t.Fatal(err)
	}
	toV2, err := mk(t, map[string]string{"templates/current.tpl": "v2.tpl"})
	if err != nil {
		t.Fatal(err)
	}
	if toV1 == plain || toV1 == toV2 {
		t.Fatalf("links are not part of the identifier: plain %s, v1 %s, v2 %s", plain, toV1, toV2)
	}
	for _, ok := range []map[string]string{
		{"templates/dir": "sub"},
		{"templates/self": "."},
		{"a/b/up": "../../templates/v1.tpl"},
		{"templates/chain": "current.tpl", "templates/current.tpl": "v1.tpl"},
	} {
		if _, err := mk(t, ok); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		name  string
		links map[string]string
		want  string
	}{
		{"absolute", map[string]string{"files/passwd": "/etc/passwd"}, "absolute"},
		{"climbing out", map[string]string{"files/x": "../../x"}, "outside the cookbook"},
		{"dangling", map[string]string{"files/x": "nothing-here"}, "leads nowhere"},
		{"into a hidden directory", map[string]string{"files/x": "../.git/config"}, "does not cover"},
		// Read lexically, a/b/e -> d/../x is a/b/x; but d is a link to the
		// root, so it really leads to the cookbook's parent.
		{"out through another link", map[string]string{"a/b/d": "../..", "a/b/e": "d/../x"}, "outside the cookbook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := mk(t, tc.links); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// tarOf builds an archive of entries: a path ending in "/" is a
// directory, a value starting with "->" a symbolic link, with "=>" a hard
// link, anything else a file.
func tarOf(t *testing.T, entries [][2]string) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e[0], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e[1]))}
		switch {
		case strings.HasSuffix(e[0], "/"):
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		case strings.HasPrefix(e[1], "->"):
			h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, e[1][2:]
		case strings.HasPrefix(e[1], "=>"):
			h.Typeflag, h.Size, h.Linkname = tar.TypeLink, 0, e[1][2:]
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e[1]))
		}
	}
	tw.Close()
	return &buf
}

func TestExtractTarLinks(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name    string
		entries [][2]string
		want    string
	}{
		{"a link inside", [][2]string{{"t/", ""}, {"t/a", "A"}, {"t/cur", "->a"}}, ""},
		{"absolute link", [][2]string{{"x", "->" + outside}}, "absolute"},
		{"link out", [][2]string{{"x", "->../../x"}}, "outside the cookbook"},
		// The classic: a link, then a file written through it.
		{"file through a link", [][2]string{{"d", "->sub"}, {"d/f", "through"}}, "file exists"},
		{"link through a link", [][2]string{{"d", "->sub"}, {"sub/", ""}, {"d/l", "->x"}}, "not a directory"},
		{"hard link", [][2]string{{"a", "A"}, {"b", "=>a"}}, "regular files, directories and links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "cb")
			err := extractTar(tarOf(t, tc.entries), dest)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("extraction wrote outside its directory: %v", entries)
			}
		})
	}
	t.Run("a cookbook too large", func(t *testing.T) {
		defer func(n int64) { maxCookbookBytes = n }(maxCookbookBytes)
		maxCookbookBytes = 10
		dest := filepath.Join(t.TempDir(), "cb")
		err := extractTar(tarOf(t, [][2]string{{"a", "12345"}, {"b", "123456"}}), dest)
		if err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a link target is read from the archive", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "cb")
		if err := extractTar(tarOf(t, [][2]string{{"t/a", "A"}, {"t/cur", "->a"}}), dest); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dest, "t", "cur")); err != nil || string(b) != "A" {
			t.Fatalf("read through the link: %q %v", b, err)
		}
	})
}

// TestGitCookbookWithLinks installs a git cookbook holding a link: the
// link is materialised, pinned and exported; one leading out is refused.
func TestGitCookbookWithLinks(t *testing.T) {
	testutil.IsolateGit(t)
	r := newRepo(t)
	files := cookbookFiles("web", "web", "1.0.0", "")
	files["web/templates/v1.tpl"] = "one"
	r.commit(files, "web")
	if err := os.Symlink("v1.tpl", filepath.Join(r.work, "web/templates/current.tpl")); err != nil {
		t.Fatal(err)
	}
	good := r.commit(nil, "a link inside")
	if err := os.Symlink("../../../secret", filepath.Join(r.work, "web/templates/evil.tpl")); err != nil {
		t.Fatal(err)
	}
	bad := r.commit(nil, "a link out")

	policy := func(sha string) string {
		return "name = \"p\"\nrun_list = [\"web\"]\ncookbook \"web\" {\n  git = \"" + r.URL + "\"\n  path = \"web\"\n  sha = \"" + sha + "\"\n}\n"
	}
	dir := t.TempDir()
	cache := filepath.Join(t.TempDir(), "cache")
	writeFile(t, filepath.Join(dir, PolicyFileName), policy(good))
	w := ws(t, dir, cache)
	l := install(t, w, InstallOptions{})
	_, in, diags := w.LoadLock(context.Background())
	if diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	if b, err := os.ReadFile(filepath.Join(in.Cookbooks[0].Dir, "templates", "current.tpl")); err != nil || string(b) != "one" {
		t.Fatalf("through the link: %q %v", b, err)
	}
	// Exported, the link is in the manifest and comes back from it.
	out := filepath.Join(t.TempDir(), "export")
	if _, err := w.Export(context.Background(), out, ""); err != nil {
		t.Fatal(err)
	}
	manifest := mustRead(t, filepath.Join(out, "cookbook_artifacts", "web", l.CookbookLocks["web"].Identifier))
	if !bytes.Contains(manifest, []byte(`"link": "v1.tpl"`)) {
		t.Fatalf("manifest without the link:\n%s", manifest)
	}
	var got []CookbookFile
	s := &store{dir: filepath.Join(t.TempDir(), "cookbooks"), git: w.git, http: w.http}
	dest, err := s.cookbookDir(context.Background(), out, "web", &CookbookLock{Version: "1.0.0", Identifier: l.CookbookLocks["web"].Identifier,
		SourceOptions: SourceOptions{Artifact: "cookbook_artifacts/web/" + l.CookbookLocks["web"].Identifier}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err = CookbookFiles(dest); err != nil || len(got) != 4 {
		t.Fatalf("from the artifact: %+v %v", got, err)
	}

	writeFile(t, filepath.Join(dir, PolicyFileName), policy(bad))
	assertDiags(t, installErr(t, ws(t, dir, cache), InstallOptions{}), []string{"Cannot fetch a git cookbook"}, []string{"templates/evil.tpl", "outside the cookbook"})
}

// TestLinkedCookbookGoesStale: a policy's cookbook directory that is a
// link is pinned by what it points to, and a change there makes the lock
// stale.
func TestLinkedCookbookGoesStale(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, filepath.Join(root, "shared", "web"), cookbookFiles(".", "web", "1.0.0", ""))
	dir := filepath.Join(root, "policy")
	writeFile(t, filepath.Join(dir, PolicyFileName), "name = \"p\"\nrun_list = [\"web\"]\ncookbook \"web\" {\n  path = \"cookbooks/web\"\n}\n")
	os.MkdirAll(filepath.Join(dir, "cookbooks"), 0o755)
	if err := os.Symlink("../../shared/web", filepath.Join(dir, "cookbooks", "web")); err != nil {
		t.Fatal(err)
	}
	w := ws(t, dir, filepath.Join(root, "cache"))
	l := install(t, w, InstallOptions{})
	if id := l.CookbookLocks["web"].Identifier; id == FilesIdentifier(nil) {
		t.Fatalf("the linked cookbook is pinned as empty (%s)", id)
	}
	writeFile(t, filepath.Join(root, "shared", "web", "recipes", "default.hcl"), "# changed behind the link\n")
	_, _, diags := ws(t, dir, filepath.Join(root, "cache")).LoadLock(context.Background())
	assertDiags(t, diags, []string{"The policy lock is stale"}, []string{"Cookbook web was edited", "toque update web"})
}
