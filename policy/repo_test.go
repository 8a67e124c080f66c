package policy

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// chefRepo lays out base/ (a policy whose cookbook "common" is at
// commonPath, relative to base/) and app/ (including base by path) under
// repo, with the common cookbook at repo/cookbooks/common, and installs
// base. It returns app's workspace.
func chefRepo(t *testing.T, repo, commonPath string) *Workspace {
	t.Helper()
	cache := filepath.Join(t.TempDir(), "cache")
	testutil.WriteFiles(t, repo, cookbookFiles("cookbooks/common", "common", "1.0.0", ""))
	writeFile(t, filepath.Join(repo, "base", PolicyFileName), "name = \"base\"\nrun_list = [\"common\"]\ncookbook \"common\" {\n  path = \""+commonPath+"\"\n}\n")
	install(t, ws(t, filepath.Join(repo, "base"), cache), InstallOptions{})
	basePolicy(t, filepath.Join(repo, "app"), "app", "app", "1.0.0", "include_policy \"base\" {\n  path = \"../base\"\n}\n")
	return ws(t, filepath.Join(repo, "app"), cache)
}

func TestPathIncludeCookbooksInsideTheRepository(t *testing.T) {
	testutil.IsolateGit(t)
	gitInit := func(t *testing.T, dir string) {
		os.MkdirAll(dir, 0o755)
		testutil.Git(t, dir, "init", "--quiet", "-b", "main")
	}

	t.Run("../cookbooks/common inside the repository", func(t *testing.T) {
		repo := filepath.Join(t.TempDir(), "chef-repo")
		gitInit(t, repo)
		w := chefRepo(t, repo, "../cookbooks/common")
		l := install(t, w, InstallOptions{})
		if got := l.CookbookLocks["common"].SourceOptions.Path; got != "../cookbooks/common" {
			t.Fatalf("common's path from app %q", got)
		}
		if _, in, diags := w.LoadLock(context.Background()); diags.HasErrors() || len(in.Cookbooks) != 2 {
			t.Fatalf("load: %s", diagText(diags))
		}
		writeFile(t, filepath.Join(repo, "cookbooks/common/recipes/default.hcl"), "# changed\n")
		_, _, diags := w.LoadLock(context.Background())
		assertDiags(t, diags, []string{"The policy lock is stale"}, []string{`the cookbook "common" (../cookbooks/common) changed`})
	})

	t.Run("a worktree's .git file marks the repository too", func(t *testing.T) {
		repo := filepath.Join(t.TempDir(), "chef-repo")
		writeFile(t, filepath.Join(repo, ".git"), "gitdir: /somewhere/else\n")
		install(t, chefRepo(t, repo, "../cookbooks/common"), InstallOptions{})
	})

	t.Run("a .toque-repo file marks the repository of a checkout without .git", func(t *testing.T) {
		repo := filepath.Join(t.TempDir(), "chef-repo")
		writeFile(t, filepath.Join(repo, RepoMarkerName), "")
		w := chefRepo(t, repo, "../cookbooks/common")
		l := install(t, w, InstallOptions{})
		if got := l.CookbookLocks["common"].SourceOptions.Path; got != "../cookbooks/common" {
			t.Fatalf("common's path from app %q", got)
		}
		if _, in, diags := w.LoadLock(context.Background()); diags.HasErrors() || len(in.Cookbooks) != 2 {
			t.Fatalf("load: %s", diagText(diags))
		}
	})

	t.Run("beyond the .toque-repo file", func(t *testing.T) {
		root := t.TempDir()
		repo := filepath.Join(root, "chef-repo")
		writeFile(t, filepath.Join(repo, RepoMarkerName), "")
		testutil.WriteFiles(t, root, cookbookFiles("outside/common", "common", "1.0.0", ""))
		w := chefRepo(t, repo, "../../outside/common")
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Unusable cookbook source in an included lock"},
			[]string{`its path "../../outside/common" leaves both`, "the including policy's repository (" + repo + ")"})
	})

	t.Run("a .toque-repo that is not a regular file marks nothing", func(t *testing.T) {
		repo := filepath.Join(t.TempDir(), "chef-repo")
		os.MkdirAll(filepath.Join(repo, RepoMarkerName), 0o755)
		w := chefRepo(t, repo, "../cookbooks/common")
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Unusable cookbook source in an included lock"},
			[]string{`its path "../cookbooks/common" leaves both`})
	})

	t.Run("without a repository, the policy's directory bounds it", func(t *testing.T) {
		repo := filepath.Join(t.TempDir(), "not-a-repo")
		w := chefRepo(t, repo, "../cookbooks/common")
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Unusable cookbook source in an included lock"},
			[]string{`"common"`, `its path "../cookbooks/common" leaves both`, "no .git or .toque-repo at or above it"})
	})

	t.Run("beyond the repository", func(t *testing.T) {
		root := t.TempDir()
		repo := filepath.Join(root, "chef-repo")
		gitInit(t, repo)
		testutil.WriteFiles(t, root, cookbookFiles("outside/common", "common", "1.0.0", ""))
		w := chefRepo(t, repo, "../../outside/common")
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Unusable cookbook source in an included lock"},
			[]string{`its path "../../outside/common" leaves both`, "the including policy's repository (" + repo + ")"})
	})

	t.Run("out through a link", func(t *testing.T) {
		root := t.TempDir()
		repo := filepath.Join(root, "chef-repo")
		gitInit(t, repo)
		testutil.WriteFiles(t, root, cookbookFiles("outside/common", "common", "1.0.0", ""))
		os.MkdirAll(filepath.Join(repo, "cookbooks"), 0o755)
		if err := os.Symlink(filepath.Join(root, "outside", "common"), filepath.Join(repo, "cookbooks", "linked")); err != nil {
			t.Fatal(err)
		}
		w := chefRepo(t, repo, "../cookbooks/linked")
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Unusable cookbook source in an included lock"},
			[]string{`its path "../cookbooks/linked" leads, through a link, to ` + filepath.Join(root, "outside", "common")})
	})
}

func TestGitIncludeCookbooksInsideTheRepository(t *testing.T) {
	testutil.IsolateGit(t)
	r := newRepo(t)
	cache := filepath.Join(t.TempDir(), "cache")
	files := cookbookFiles("cookbooks/common", "common", "1.0.0", "")
	files["policies/base/policy.hcl"] = "name = \"base\"\nrun_list = [\"common\"]\ncookbook \"common\" {\n  path = \"../../cookbooks/common\"\n}\n"
	r.commit(files, "layout")
	base := filepath.Join(r.work, "policies", "base")
	install(t, ws(t, base, cache), InstallOptions{})
	good := r.commit(nil, "base lock")

	// A lock whose cookbook climbs above the repository's root.
	l := readLock(t, base)
	l.CookbookLocks["common"].SourceOptions.Path = "../../../common"
	b, _ := l.Marshal()
	writeFile(t, filepath.Join(base, LockFileName), string(b))
	bad := r.commit(nil, "escaping lock")

	include := func(sha string) *Workspace {
		dir := t.TempDir()
		basePolicy(t, dir, "app", "app", "1.0.0", "include_policy \"base\" {\n  git = \""+r.URL+"\"\n  path = \"policies/base/policy.lock.json\"\n  sha = \""+sha+"\"\n}\n")
		return ws(t, dir, cache)
	}
	w := include(good)
	lock := install(t, w, InstallOptions{})
	if src := lock.CookbookLocks["common"].SourceOptions; src.Path != "cookbooks/common" || src.Sha != good {
		t.Fatalf("common's source %+v", src)
	}
	if _, in, diags := w.LoadLock(context.Background()); diags.HasErrors() || len(in.Cookbooks) != 2 {
		t.Fatalf("load: %s", diagText(diags))
	}
	assertDiags(t, installErr(t, include(bad), InstallOptions{}), []string{"Unusable cookbook source in an included lock"},
		[]string{`its path "../../../common" leaves the repository (from /policies/base)`})
}
