package policy

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// TestInstallRefusesCookbookThatDoesNotParse: install reads every recipe,
// attribute file, resource type and template of the policy's cookbooks
// (local and git) and refuses one that does not parse, with each error at
// its file, line and column; no lock is written.
func TestInstallRefusesCookbookThatDoesNotParse(t *testing.T) {
	cases := []struct {
		name, file, content string
		summary             string
		line                int
	}{
		{"recipe", "recipes/server.hcl", "file \"/x\" {\n  content = \n}\n", "Invalid expression", 2},
		{"attribute file", "attributes/default.hcl", "default \"web\" {\n  port = [1,\n}\n", "Invalid expression", 3},
		{"resource type", "resources/site.hcl", "resource_type \"x\" {\n  property \"a\" {\n", "Unclosed configuration block", 2},
		{"template", "templates/sub/site.tpl", "listen ${port\n", "Unclosed template interpolation sequence", 1},
		{"JSON recipe", "recipes/other.hcl.json", "{\"file\": nope}", "Invalid JSON keyword", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			basePolicy(t, dir, "p", "web", "1.0.0", "")
			testutil.WriteFiles(t, dir, map[string]string{"cookbooks/web/" + c.file: c.content})
			w := ws(t, dir, t.TempDir())
			diags := installErr(t, w, InstallOptions{})
			if len(diags) != 1 || diags[0].Summary != c.summary {
				t.Fatalf("diags:\n%s", diagText(diags))
			}
			s := diags[0].Subject
			if s == nil || s.Filename != filepath.Join(dir, "cookbooks/web", c.file) || s.Start.Line != c.line {
				t.Errorf("at %v, want %s:%d", s, c.file, c.line)
			}
			if w.Parser.Files()[s.Filename] == nil {
				t.Errorf("the parser does not hold %s: its snippet cannot be shown", s.Filename)
			}
			if _, err := readLockErr(dir); err == nil {
				t.Error("a lock was written")
			}
		})
	}
	t.Run("git cookbook", func(t *testing.T) {
		testutil.IsolateGit(t)
		r := newRepo(t)
		files := cookbookFiles("web", "web", "1.0.0", "file \"/x\" {\n")
		sha := r.commit(files, "broken")
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, PolicyFileName), fmt.Sprintf("name = \"p\"\nrun_list = [\"web\"]\ncookbook \"web\" {\n  git  = %q\n  path = \"web\"\n  sha  = %q\n}\n", r.URL, sha))
		diags := installErr(t, ws(t, dir, t.TempDir()), InstallOptions{})
		if len(diags) != 1 || diags[0].Summary != "Unclosed configuration block" || !strings.HasSuffix(diags[0].Subject.Filename, filepath.Join("recipes", "default.hcl")) {
			t.Fatalf("diags:\n%s", diagText(diags))
		}
	})
}

func readLockErr(dir string) (*Lock, error) {
	l, _, err := ReadLock(filepath.Join(dir, LockFileName))
	return l, err
}

// TestStaleLocalCookbook: a lock made stale by an edited local cookbook
// says so in one line, naming the update that fixes it; UpdateLocal locks
// the edited cookbooks again, and nothing else; a lock stale for another
// reason is left for plan to report.
func TestStaleLocalCookbook(t *testing.T) {
	dir := t.TempDir()
	basePolicy(t, dir, "p", "web", "1.0.0", "")
	testutil.WriteFiles(t, dir, cookbookFiles("cookbooks/db", "db", "1.0.0", ""))
	writeFile(t, filepath.Join(dir, PolicyFileName), "name = \"p\"\nrun_list = [\"web\", \"db\"]\ncookbook \"web\" {\n  path = \"cookbooks/web\"\n}\ncookbook \"db\" {\n  path = \"cookbooks/db\"\n}\n")
	cache := t.TempDir()
	before := install(t, ws(t, dir, cache), InstallOptions{})

	writeFile(t, filepath.Join(dir, "cookbooks/web/recipes/default.hcl"), "# edited\n")
	_, _, diags := ws(t, dir, cache).LoadLock(context.Background())
	assertDiags(t, diags, []string{"The policy lock is stale"}, []string{`Cookbook web was edited since the lock was written: run toque update web, or plan -update-local.`})
	if strings.Contains(diags[0].Detail, "\n") {
		t.Errorf("not one line: %q", diags[0].Detail)
	}
	writeFile(t, filepath.Join(dir, "cookbooks/db/recipes/default.hcl"), "# edited too\n")
	_, _, diags = ws(t, dir, cache).LoadLock(context.Background())
	assertDiags(t, diags, []string{"The policy lock is stale"}, []string{`Cookbooks db and web were edited`, "run toque update db web"})

	names, res, diags := ws(t, dir, cache).UpdateLocal(context.Background())
	if diags.HasErrors() || strings.Join(names, " ") != "db web" || res == nil || !res.Written {
		t.Fatalf("UpdateLocal: %v %+v %s", names, res, diagText(diags))
	}
	if len(res.Changes.Cookbooks) != 2 || res.Lock.CookbookLocks["web"].Identifier == before.CookbookLocks["web"].Identifier {
		t.Errorf("changes %+v", res.Changes)
	}
	if _, _, diags := ws(t, dir, cache).LoadLock(context.Background()); diags.HasErrors() {
		t.Fatalf("still stale: %s", diagText(diags))
	}
	if names, res, diags := ws(t, dir, cache).UpdateLocal(context.Background()); names != nil || res != nil || diags != nil {
		t.Errorf("an up-to-date lock was updated: %v %+v %v", names, res, diags)
	}

	// policy.hcl changed too: only install fixes it, and says so.
	writeFile(t, filepath.Join(dir, "cookbooks/web/recipes/default.hcl"), "# edited again\n")
	writeFile(t, filepath.Join(dir, PolicyFileName), "# a comment\n"+string(mustRead(t, filepath.Join(dir, PolicyFileName))))
	if names, res, diags := ws(t, dir, cache).UpdateLocal(context.Background()); names != nil || res != nil || diags != nil {
		t.Errorf("UpdateLocal moved a lock stale for another reason: %v %+v %v", names, res, diags)
	}
	_, _, diags = ws(t, dir, cache).LoadLock(context.Background())
	assertDiags(t, diags, []string{"The policy lock is stale"}, []string{"policy.hcl changed", `the cookbook "web" (cookbooks/web) changed`, "Run toque install"})

	// A cookbook that no longer parses is not locked again.
	install(t, ws(t, dir, cache), InstallOptions{})
	writeFile(t, filepath.Join(dir, "cookbooks/web/recipes/default.hcl"), "file \"/x\" {\n")
	_, _, diags = ws(t, dir, cache).UpdateLocal(context.Background())
	if len(errorsOf(diags)) != 1 || diags[0].Summary != "Unclosed configuration block" {
		t.Fatalf("diags:\n%s", diagText(diags))
	}
}
