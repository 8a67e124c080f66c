package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// publishBase writes (or rewrites) the base policy in r's work tree with
// its cookbook at version, installs it and commits everything.
func publishBase(t *testing.T, r *repo, cache, version string) (commit, revision string) {
	t.Helper()
	dir := filepath.Join(r.work, "policies", "base")
	basePolicy(t, dir, "base", "base", version, "default_attributes = { base = { version = \""+version+"\" } }\n")
	l := install(t, ws(t, dir, cache), InstallOptions{})
	return r.commit(nil, "base "+version), l.RevisionID
}

func gitParent(t *testing.T, dir, source string) {
	t.Helper()
	basePolicy(t, dir, "app", "app", "1.0.0", "include_policy \"base\" {\n"+source+"\n}\n")
}

func TestGitInclude(t *testing.T) {
	testutil.IsolateGit(t)
	r := newRepo(t)
	cache := filepath.Join(t.TempDir(), "cache")
	c1, rev1 := publishBase(t, r, cache, "0.1.0")
	c2, rev2 := publishBase(t, r, cache, "0.2.0")
	r.tag("v2")
	c3, rev3 := publishBase(t, r, cache, "0.3.0")

	includedRevision := func(l *Lock) (string, string) {
		return l.IncludedPolicyLocks[0].SourceOptions.Sha, l.IncludedPolicyLocks[0].RevisionID
	}
	src := func(extra string) string {
		return "git = \"" + r.URL + "\"\npath = \"policies/base/policy.lock.json\"\n" + extra
	}

	t.Run("pinned sha", func(t *testing.T) {
		dir := t.TempDir()
		gitParent(t, dir, src("sha = \""+c1[:10]+"\""))
		l := install(t, ws(t, dir, filepath.Join(t.TempDir(), "cache")), InstallOptions{})
		if sha, rev := includedRevision(l); sha != c1 || rev != rev1 {
			t.Fatalf("pinned %s rev %s, want %s rev %s", sha, rev, c1, rev1)
		}
		if got := l.CookbookLocks["base"].Version; got != "0.1.0" {
			t.Errorf("base cookbook %s, want 0.1.0", got)
		}
		// update cannot move an explicit sha.
		l = install(t, ws(t, dir, filepath.Join(t.TempDir(), "cache")), InstallOptions{Update: true})
		if sha, _ := includedRevision(l); sha != c1 {
			t.Errorf("update moved an explicit sha to %s", sha)
		}
		// The locked cookbook comes from the git tree at the pin.
		_, in, diags := ws(t, dir, cache).LoadLock(context.Background())
		if diags.HasErrors() {
			t.Fatal(diagText(diags))
		}
		if len(in.Cookbooks) != 2 || in.Cookbooks[0].Name != "base" || in.Cookbooks[0].Version != "0.1.0" {
			t.Errorf("cookbooks %+v", in.Cookbooks)
		}
	})

	t.Run("moving branch only update follows", func(t *testing.T) {
		r2 := newRepo(t)
		cache := filepath.Join(t.TempDir(), "cache")
		m1, _ := publishBase(t, r2, cache, "1.0.0")
		dir := t.TempDir()
		gitParent(t, dir, "git = \""+r2.URL+"\"\npath = \"policies/base/policy.lock.json\"\nref = \"main\"")
		install(t, ws(t, dir, cache), InstallOptions{})
		m2, rev := publishBase(t, r2, cache, "1.1.0")

		l := install(t, ws(t, dir, cache), InstallOptions{})
		if sha, _ := includedRevision(l); sha != m1 {
			t.Fatalf("install moved the pin to %s, want it kept at %s", sha, m1)
		}
		l = install(t, ws(t, dir, cache), InstallOptions{Update: true, Names: []string{"app"}})
		if sha, _ := includedRevision(l); sha != m1 {
			t.Fatalf("update app moved the base pin to %s", sha)
		}
		l = install(t, ws(t, dir, cache), InstallOptions{Update: true, Names: []string{"base"}})
		if sha, r := includedRevision(l); sha != m2 || r != rev {
			t.Fatalf("update base pinned %s, want %s", sha, m2)
		}
		if l.CookbookLocks["base"].Version != "1.1.0" {
			t.Errorf("base cookbook %s after update", l.CookbookLocks["base"].Version)
		}
	})

	t.Run("tag", func(t *testing.T) {
		dir := t.TempDir()
		gitParent(t, dir, src("ref = \"v2\""))
		l := install(t, ws(t, dir, cache), InstallOptions{})
		if sha, rev := includedRevision(l); sha != c2 || rev != rev2 {
			t.Fatalf("tag v2 pinned %s, want %s", sha, c2)
		}
	})

	t.Run("main-only repo", func(t *testing.T) {
		dir := t.TempDir()
		gitParent(t, dir, src("ref = \"main\""))
		l := install(t, ws(t, dir, cache), InstallOptions{})
		if sha, rev := includedRevision(l); sha != c3 || rev != rev3 {
			t.Fatalf("main pinned %s, want %s", sha, c3)
		}
		for _, tc := range []struct{ name, extra, summary string }{
			{"no ref", "", "Git source without a ref or sha"},
			{"no master", "ref = \"master\"", "Cannot resolve a git include"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				d := t.TempDir()
				gitParent(t, d, src(tc.extra))
				diags := installErr(t, ws(t, d, cache), InstallOptions{})
				if len(diags) != 1 || diags[0].Summary != tc.summary {
					t.Fatalf("diags %s", diagText(diags))
				}
			})
		}
	})

	t.Run("missing file", func(t *testing.T) {
		dir := t.TempDir()
		gitParent(t, dir, "git = \""+r.URL+"\"\npath = \"policies/nope.lock.json\"\nref = \"main\"")
		diags := installErr(t, ws(t, dir, cache), InstallOptions{})
		if len(diags) != 1 || diags[0].Summary != "Cannot read an included lock" || !strings.Contains(diags[0].Detail, "policies/nope.lock.json") {
			t.Fatalf("diags %s", diagText(diags))
		}
	})

	t.Run("stale cache fetches the pinned commit", func(t *testing.T) {
		r3 := newRepo(t)
		oldCache := filepath.Join(t.TempDir(), "cache")
		publishBase(t, r3, oldCache, "1.0.0")
		dir := t.TempDir()
		gitParent(t, dir, "git = \""+r3.URL+"\"\npath = \"policies/base/policy.lock.json\"\nref = \"main\"")
		install(t, ws(t, dir, oldCache), InstallOptions{}) // oldCache's mirror now stops at 1.0.0
		// A colleague publishes 1.1.0 and updates the lock with their own cache.
		n2, _ := publishBase(t, r3, filepath.Join(t.TempDir(), "cache"), "1.1.0")
		install(t, ws(t, dir, filepath.Join(t.TempDir(), "cache")), InstallOptions{Update: true})
		// Install with the stale cache honours the recorded commit, fetching it.
		l := install(t, ws(t, dir, oldCache), InstallOptions{})
		if sha, _ := includedRevision(l); sha != n2 {
			t.Fatalf("pinned %s, want the recorded %s", sha, n2)
		}
	})

	t.Run("credentials are redacted", func(t *testing.T) {
		if got := redactURL("https://user:s3cret@example.com/p.git"); got != "https://user:redacted@example.com/p.git" {
			t.Errorf("redact password: %s", got)
		}
		if got := redactURL("https://tok3n@example.com/p.git"); got != "https://redacted@example.com/p.git" {
			t.Errorf("redact token: %s", got)
		}
		if got := redactURL("ssh://git@example.com/p.git"); got != "ssh://git@example.com/p.git" {
			t.Errorf("ssh user: %s", got)
		}
		dir := t.TempDir()
		gitParent(t, dir, "git = \"https://user:s3cret@127.0.0.1:1/p.git\"\npath = \"x.lock.json\"\nref = \"main\"")
		diags := installErr(t, ws(t, dir, cache), InstallOptions{})
		if strings.Contains(diagText(diags), "s3cret") {
			t.Fatalf("secret in diagnostics: %s", diagText(diags))
		}
	})
}

func TestGitCookbook(t *testing.T) {
	testutil.IsolateGit(t)
	r := newRepo(t)
	c1 := r.commit(cookbookFiles("cb/web", "web", "1.0.0", ""), "web 1.0.0")
	r.commit(cookbookFiles("cb/web", "web", "1.1.0", ""), "web 1.1.0")
	cache := filepath.Join(t.TempDir(), "cache")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "policy.hcl"), "name = \"p\"\nrun_list = [\"web\"]\ncookbook \"web\" {\n  git = \""+r.URL+"\"\n  path = \"cb/web\"\n  sha = \""+c1[:12]+"\"\n}\n")
	l := install(t, ws(t, dir, cache), InstallOptions{})
	cl := l.CookbookLocks["web"]
	if cl.Version != "1.0.0" || cl.SourceOptions.Sha != c1 {
		t.Fatalf("web %+v", cl)
	}
	// Nothing of a git cookbook is a local input: the commit pins it.
	for _, in := range l.Inputs {
		if in.Kind == "cookbook" {
			t.Errorf("git cookbook recorded as a local input: %+v", in)
		}
	}
	if _, _, diags := ws(t, dir, cache).LoadLock(context.Background()); diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	if b, err := os.ReadFile(filepath.Join(dir, LockFileName)); err != nil || strings.Contains(string(b), "\"path\": \"cb/web\"") == false {
		t.Errorf("lock lacks the path in the repository: %v", err)
	}
}
