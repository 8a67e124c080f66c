package vcs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// upstream is a repository to clone in a test: a work tree whose commits
// are pushed to a bare repository, the URL the recipes name.
type upstream struct {
	t    *testing.T
	work string
	URL  string
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	testutil.IsolateGit(t)
	u := &upstream{t: t, work: t.TempDir(), URL: filepath.Join(t.TempDir(), "repo.git")}
	testutil.Git(t, u.work, "init", "--quiet", "--initial-branch=main")
	testutil.Git(t, u.work, "init", "--quiet", "--bare", "--initial-branch=main", u.URL)
	testutil.Git(t, u.work, "remote", "add", "origin", u.URL)
	u.commit("one", map[string]string{"a.txt": "one\n"})
	return u
}

// commit commits files with message on the branch checked out and
// pushes it; it returns the commit.
func (u *upstream) commit(msg string, files map[string]string) string {
	u.t.Helper()
	testutil.WriteFiles(u.t, u.work, files)
	testutil.Git(u.t, u.work, "add", "-A")
	testutil.Git(u.t, u.work, "commit", "--quiet", "--allow-empty", "-m", msg)
	testutil.Git(u.t, u.work, "push", "--quiet", "--all", "origin")
	testutil.Git(u.t, u.work, "push", "--quiet", "--tags", "origin")
	return testutil.Git(u.t, u.work, "rev-parse", "HEAD")
}

func gitRes(t *testing.T, typ *gitType, action string, vals map[string]any) *resources.Resource {
	t.Helper()
	return resourcetest.NewRes(t, typ, action, vals)
}

func head(t *testing.T, dir string) string { return testutil.Git(t, dir, "rev-parse", "HEAD") }

// A clone, a sync over new commits (listed in the plan with their
// subjects), and no-ops after each.
func TestGitSync(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	dest := filepath.Join(t.TempDir(), "app")
	r := gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL, "revision": "main"})
	c1 := head(t, u.work)

	step := resourcetest.Apply(t, typ, env, r, resources.Create)
	rev := step.Change("revision")
	if rev == nil || rev.After.AsString() != c1 || !strings.Contains(rev.Note, "branch main at "+c1[:12]+": one") {
		t.Fatalf("create: %+v", step.Changes)
	}
	if step.Change("repository") == nil || len(step.Provides) != 1 || step.Provides[0].Value != dest {
		t.Errorf("create: changes %v provides %+v", resourcetest.ChangedProps(step), step.Provides)
	}
	if head(t, dest) != c1 || testutil.Git(t, dest, "branch", "--show-current") != "main" || resourcetest.ReadFile(t, filepath.Join(dest, "a.txt")) != "one\n" {
		t.Fatalf("clone: HEAD %s, branch %s", head(t, dest), testutil.Git(t, dest, "branch", "--show-current"))
	}
	if up := testutil.Git(t, dest, "rev-parse", "--abbrev-ref", "main@{upstream}"); up != "origin/main" {
		t.Errorf("upstream %q", up)
	}

	u.commit("two", map[string]string{"a.txt": "two\n"})
	c3 := u.commit("three", map[string]string{"b.txt": "three\n"})
	step = resourcetest.Apply(t, typ, env, r, resources.Update)
	if rev := step.Change("revision"); rev.Before.AsString() != c1 || rev.After.AsString() != c3 {
		t.Errorf("revision %v -> %v", rev.Before, rev.After)
	}
	commits := step.Change("commits")
	if commits == nil || !strings.HasSuffix(commits.After.AsString(), " two\n") || !strings.Contains(commits.After.AsString(), c3[:12]+" three\n") || commits.Before.AsString() != "" {
		t.Errorf("commits %+v", commits)
	}
	if !strings.Contains(step.Reason, "moves from "+c1[:12]+" to "+c3[:12]+" (2 commits)") {
		t.Errorf("reason %q", step.Reason)
	}
	if head(t, dest) != c3 || resourcetest.ReadFile(t, filepath.Join(dest, "b.txt")) != "three\n" {
		t.Errorf("HEAD %s", head(t, dest))
	}
}

// The plan names a commit; apply checks that commit out even when the
// branch moved since (the framework calls such a plan stale first: the
// reading's target differs).
func TestGitChecksOutThePlannedCommit(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	dest := filepath.Join(t.TempDir(), "app")
	r := gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL})
	st, step := resourcetest.Plan(t, typ, r)
	planned := step.Change("revision").After.AsString()
	moved := u.commit("moved", nil)
	if again := resourcetest.Load(t, typ, r); again.Extra[xTarget] != moved || again.Extra[xTarget] == st.Extra[xTarget] {
		t.Fatalf("a fresh reading does not see the branch move: %v", again.Extra)
	}
	if err := resources.ConvergeStep(context.Background(), typ, env, r, st, step); err != nil {
		t.Fatal(err)
	}
	if head(t, dest) != planned {
		t.Fatalf("checked out %s, planned %s", head(t, dest), planned)
	}
}

// Local changes to tracked files are named in the plan and discarded;
// a rewound branch shows the commits left behind as removed lines.
func TestGitSyncLocalChangesAndRewind(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	dest := filepath.Join(t.TempDir(), "app")
	c1 := head(t, u.work)
	u.commit("two", map[string]string{"a.txt": "two\n"})
	r := gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL})
	resourcetest.Apply(t, typ, env, r, resources.Create)
	resourcetest.WriteFile(t, filepath.Join(dest, "a.txt"), "local edit\n", 0o644)
	resourcetest.WriteFile(t, filepath.Join(dest, "untracked"), "mine\n", 0o644)

	testutil.Git(t, u.work, "reset", "--quiet", "--hard", c1)
	testutil.Git(t, u.work, "push", "--quiet", "--force", "origin", "main")
	step := resourcetest.Apply(t, typ, env, r, resources.Update)
	if !strings.Contains(step.Reason, "discards the local changes to 1 tracked file (a.txt)") {
		t.Errorf("reason %q", step.Reason)
	}
	if c := step.Change("commits"); c == nil || !strings.HasSuffix(c.Before.AsString(), " two\n") || c.After.AsString() != "" {
		t.Errorf("commits %+v", c)
	}
	if head(t, dest) != c1 || resourcetest.ReadFile(t, filepath.Join(dest, "a.txt")) != "one\n" || resourcetest.ReadFile(t, filepath.Join(dest, "untracked")) != "mine\n" {
		t.Errorf("HEAD %s", head(t, dest))
	}
}

// Tags (light and annotated) and commit ids check out detached; a
// missing branch and an abbreviated commit are errors on revision.
func TestGitRevisions(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	c1 := head(t, u.work)
	testutil.Git(t, u.work, "tag", "-a", "-m", "release", "v1")
	c2 := u.commit("two", nil)
	testutil.Git(t, u.work, "tag", "light")
	u.commit("three", nil)

	for _, c := range []struct{ rev, want string }{{"v1", c1}, {"light", c2}, {c1, c1}, {"refs/tags/v1", c1}} {
		dest := filepath.Join(t.TempDir(), "app")
		r := gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL, "revision": c.rev})
		resourcetest.Apply(t, typ, env, r, resources.Create)
		if head(t, dest) != c.want || testutil.Git(t, dest, "branch", "--show-current") != "" {
			t.Errorf("%s: HEAD %s branch %q, want %s detached", c.rev, head(t, dest), testutil.Git(t, dest, "branch", "--show-current"), c.want)
		}
	}
	dest := filepath.Join(t.TempDir(), "app")
	r := gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL, "revision": c1, "checkout_branch": "deploy"})
	resourcetest.Apply(t, typ, env, r, resources.Create)
	if testutil.Git(t, dest, "branch", "--show-current") != "deploy" {
		t.Errorf("checkout_branch: %s", testutil.Git(t, dest, "branch", "--show-current"))
	}

	for _, c := range []struct{ rev, want string }{
		{"nope", `has no branch or tag "nope"`},
		{c1[:10], "give its full id"},
		{strings.Repeat("ab", 20), "has no commit " + strings.Repeat("ab", 20)},
	} {
		r := gitRes(t, typ, "sync", map[string]any{"destination": filepath.Join(t.TempDir(), "x"), "repository": u.URL, "revision": c.rev})
		st := resourcetest.Load(t, typ, r)
		_, err := resources.PlanStep(typ, r, st)
		var pe *resources.PropertyError
		if !errors.As(err, &pe) || pe.Property != "revision" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error on revision containing %q", c.rev, err, c.want)
		}
	}
}

// checkout and export make a missing working tree and leave an existing
// one; export leaves no .git; what is not a repository is refused.
func TestGitCheckoutExportAndRefusals(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	dir := t.TempDir()

	dest := filepath.Join(dir, "co")
	resourcetest.Apply(t, typ, env, gitRes(t, typ, "checkout", map[string]any{"destination": dest, "repository": u.URL}), resources.Create)
	u.commit("two", nil)
	if _, step := resourcetest.Plan(t, typ, gitRes(t, typ, "checkout", map[string]any{"destination": dest, "repository": u.URL})); step.Kind != resources.NoOp {
		t.Errorf("checkout of an existing tree: %s", step.Kind)
	}

	exp := filepath.Join(dir, "export")
	resourcetest.Apply(t, typ, env, gitRes(t, typ, "export", map[string]any{"destination": exp, "repository": u.URL}), resources.Create)
	if resourcetest.ReadFile(t, filepath.Join(exp, "a.txt")) != "one\n" {
		t.Error("export wrote no files")
	}
	if _, err := os.Lstat(filepath.Join(exp, ".git")); !os.IsNotExist(err) {
		t.Errorf("export left .git: %v", err)
	}
	resourcetest.NoTempFiles(t, dir)

	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	resourcetest.Apply(t, typ, env, gitRes(t, typ, "sync", map[string]any{"destination": empty, "repository": u.URL}), resources.Create)

	full := filepath.Join(dir, "full")
	testutil.WriteFiles(t, full, map[string]string{"precious": "x"})
	resourcetest.PlanErr(t, typ, gitRes(t, typ, "sync", map[string]any{"destination": full, "repository": u.URL}), "neither empty nor a git repository")
	resourcetest.PlanErr(t, typ, gitRes(t, typ, "sync", map[string]any{"destination": filepath.Join(full, "precious"), "repository": u.URL}), "not a directory")
	if err := os.Symlink(dest, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	resourcetest.PlanErr(t, typ, gitRes(t, typ, "sync", map[string]any{"destination": filepath.Join(dir, "link"), "repository": u.URL}), "symbolic link")

	_, step := resourcetest.Plan(t, typ, gitRes(t, typ, "sync", map[string]any{"destination": filepath.Join(dir, "no/such/app"), "repository": u.URL}))
	if len(step.Needs) != 1 || step.Needs[0].Value != filepath.Join(dir, "no/such") {
		t.Errorf("needs %+v", step.Needs)
	}
}

// A URL that changed is set on the remote; the working tree is moved
// to the new repository's commit.
func TestGitRepositoryChanges(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	dest := filepath.Join(t.TempDir(), "app")
	resourcetest.Apply(t, typ, env, gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL}), resources.Create)
	mirror := filepath.Join(t.TempDir(), "mirror.git")
	testutil.Git(t, u.work, "clone", "--quiet", "--bare", u.URL, mirror)
	step := resourcetest.Apply(t, typ, env, gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": mirror}), resources.Update)
	if c := step.Change("repository"); c == nil || c.Before.AsString() != u.URL || c.After.AsString() != mirror || step.Change("revision") != nil {
		t.Errorf("changes %+v", step.Changes)
	}
	if got := testutil.Git(t, dest, "remote", "get-url", "origin"); got != mirror {
		t.Errorf("remote URL %s", got)
	}
}

// No hook runs: neither the working tree's own (.git/hooks, or a
// core.hooksPath its config names), nor a template's.
func TestGitRunsNoHooks(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	dest := filepath.Join(t.TempDir(), "app")
	r := gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL})
	resourcetest.Apply(t, typ, env, r, resources.Create)
	marker := filepath.Join(t.TempDir(), "pwned")
	hook := "#!/bin/sh\ntouch " + marker + "\n"
	for _, h := range []string{"post-checkout", "reference-transaction", "post-merge"} {
		testutil.WriteFiles(t, dest, map[string]string{".git/hooks/" + h: hook, "myhooks/" + h: hook})
		os.Chmod(filepath.Join(dest, ".git/hooks", h), 0o755)
		os.Chmod(filepath.Join(dest, "myhooks", h), 0o755)
	}
	testutil.Git(t, dest, "config", "core.hooksPath", filepath.Join(dest, "myhooks"))
	testutil.Git(t, dest, "config", "core.fsmonitor", "touch "+marker+" #")
	u.commit("two", nil)
	resourcetest.Apply(t, typ, env, r, resources.Update)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hook of the repository ran")
	}
}

// ext:: and the other remote helpers never run, whatever the
// environment says (GIT_ALLOW_PROTOCOL), nor file submodules unless
// allowed; a submodule's ext:: URL does not run either.
func TestGitDangerousTransports(t *testing.T) {
	u := newUpstream(t)
	marker := filepath.Join(t.TempDir(), "pwned")

	sub := newUpstream(t)
	testutil.Git(t, u.work, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", sub.URL, "lib")
	u.commit("with a submodule", nil)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	r := gitRes(t, typ, "sync", map[string]any{"destination": filepath.Join(t.TempDir(), "app"), "repository": u.URL, "enable_submodules": true})
	resourcetest.ConvergeErr(t, typ, env, r, "submodules")

	typ.fileSubmodules = true
	dest := filepath.Join(t.TempDir(), "app")
	r = gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL, "enable_submodules": true})
	resourcetest.Apply(t, typ, env, r, resources.Create)
	if resourcetest.ReadFile(t, filepath.Join(dest, "lib", "a.txt")) != "one\n" {
		t.Error("the submodule was not checked out")
	}

	// A submodule whose URL is ext:: (set in .gitmodules) is refused.
	testutil.Git(t, u.work, "config", "-f", ".gitmodules", "submodule.lib.url", "ext::sh -c touch% "+marker)
	u.commit("ext submodule", nil)
	dest = filepath.Join(t.TempDir(), "app")
	r = gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL, "enable_submodules": true})
	resourcetest.ConvergeErr(t, typ, env, r, "submodules")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a submodule's ext:: URL ran its command")
	}

	// What toque's environment says does not open the door either.
	t.Setenv("GIT_ALLOW_PROTOCOL", "ext:file:ssh:https")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'protocol.ext.allow'='always'")
	t.Setenv("GIT_DIR", "/nonexistent")
	g := gitRun{args: []string{"ls-remote", "--", "ext::sh -c touch% " + marker}}
	if _, err := g.run(context.Background()); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("ext:: with GIT_ALLOW_PROTOCOL set: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("ext:: ran its command")
	}
}

// A repository another user owns is read and changed only as that user.
func TestGitOwnership(t *testing.T) {
	resourcetest.RequireRoot(t)
	u := newUpstream(t)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	dest := filepath.Join(t.TempDir(), "app")
	resourcetest.Apply(t, typ, env, gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL}), resources.Create)
	other := resourcetest.SomeoneElse()
	resourcetest.PlanErr(t, typ, gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL, "user": other}), "belongs to root, not to user "+other)
	if err := os.Chown(dest, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	u.commit("two", nil)
	resourcetest.PlanErr(t, typ, gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL}), "set user")
}

func TestGitBadInput(t *testing.T) {
	typ := newGitType()
	for _, c := range []struct {
		prop string
		v    string
		want string
	}{
		{"repository", "https://example.com/a.git", ""},
		{"repository", "git@example.com:a/b.git", ""},
		{"repository", "ssh://git@example.com:22/a.git", ""},
		{"repository", "/srv/git/a.git", ""},
		{"repository", "file:///srv/git/a.git", ""},
		{"repository", "--upload-pack=touch /tmp/x", `starts with "-"`},
		{"repository", "-oProxyCommand=x:y", `starts with "-"`},
		{"repository", "ext::sh -c touch% /tmp/x", "remote helper"},
		{"repository", "fd::17", "remote helper"},
		{"repository", "ftp://example.com/a.git", `"ftp" transport`},
		{"repository", "ssh://-oProxyCommand=x/a.git", `starting with "-"`},
		{"repository", "-oProxyCommand=x@h:a", `starts with "-"`},
		{"repository", "relative/a.git", "relative path"},
		{"repository", "https://example.com/a\n.git", "control character"},
		{"revision", "main", ""},
		{"revision", "release/1.2", ""},
		{"revision", strings.Repeat("a", 40), ""},
		{"revision", "--output=/etc/passwd", `starts with "-"`},
		{"revision", "a..b", "not a valid git reference"},
		{"revision", "a b", "holds"},
		{"remote", "-x", "not a remote name"},
		{"remote", "up stream", "not a remote name"},
		{"checkout_branch", "HEAD", "cannot be"},
		{"checkout_branch", "--force", `starts with "-"`},
		{"depth", "0", "greater than 0"},
		{"commits", "x", "read by toque"},
		{"destination", "relative", "not an absolute path"},
	} {
		p := typ.Schema().Property(c.prop)
		v := cty.StringVal(c.v)
		var err error
		if p.Type == cty.Number {
			v = cty.MustParseNumberVal(c.v)
		}
		if p.Normalize != nil {
			v, err = p.Normalize(v)
		}
		if err == nil && p.Validate != nil {
			err = p.Validate(v)
		}
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s = %q: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
}

// A revision known only at apply (lazy) is planned as such: the plan
// names no commit it could not resolve.
func TestGitLazyRevision(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	dest := filepath.Join(t.TempDir(), "app")
	r := gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL, "revision": cty.UnknownVal(cty.String)})
	_, step := resourcetest.Plan(t, typ, r)
	if rev := step.Change("revision"); rev == nil || rev.After.IsKnown() || step.Kind != resources.Create || !strings.Contains(step.Reason, "known at apply") {
		t.Fatalf("step %s %q %+v", step.Kind, step.Reason, step.Changes)
	}
}

// With user set (as root), git runs as that user: the working tree is
// theirs, and the next sync reads and moves it as them.
func TestGitAsUser(t *testing.T) {
	resourcetest.RequireRoot(t)
	u := newUpstream(t)
	// nobody must reach the upstream, which is theirs (git reads a local
	// repository only as its owner), and the destination's parent.
	for _, d := range []string{filepath.Dir(u.URL), filepath.Dir(filepath.Dir(u.URL))} {
		os.Chmod(d, 0o755)
	}
	filepath.WalkDir(u.URL, func(p string, _ fs.DirEntry, _ error) error { return os.Lchown(p, 65534, 65534) })
	// The test's own pushes (as root) to it: toque's git never sees this.
	global := filepath.Join(t.TempDir(), "gitconfig")
	resourcetest.WriteFile(t, global, "[safe]\n\tdirectory = *\n", 0o644)
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	parent := t.TempDir()
	os.Chmod(parent, 0o777)
	os.Chmod(filepath.Dir(parent), 0o755)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	dest := filepath.Join(parent, "app")
	r := gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL, "user": "65534", "group": "65534"})
	resourcetest.Apply(t, typ, env, r, resources.Create)
	var st syscall.Stat_t
	for _, p := range []string{dest, filepath.Join(dest, ".git"), filepath.Join(dest, "a.txt")} {
		if err := syscall.Lstat(p, &st); err != nil || st.Uid != 65534 {
			t.Errorf("%s: uid %d (%v)", p, st.Uid, err)
		}
	}
	c2 := u.commit("two", nil)
	resourcetest.Apply(t, typ, env, r, resources.Update)
	if head(t, dest) != c2 {
		t.Errorf("HEAD %s, want %s", head(t, dest), c2)
	}
}

// A user an earlier resource makes does not exist at plan: the revision
// is read as toque's own user, and the plan says so.
func TestGitUserNotYetMade(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	r := gitRes(t, typ, "sync", map[string]any{"destination": filepath.Join(t.TempDir(), "app"), "repository": u.URL, "user": "toque-no-such-user"})
	_, step := resourcetest.Plan(t, typ, r)
	if rev := step.Change("revision"); rev == nil || rev.After.AsString() != head(t, u.work) || !strings.Contains(rev.Note, "user toque-no-such-user does not exist yet") {
		t.Fatalf("step %+v", step.Changes)
	}
}

// A step acts on the directory Load read: one swapped in since is left
// alone.
func TestGitActsOnTheDirectoryRead(t *testing.T) {
	u := newUpstream(t)
	typ := newGitType()
	env := resourcetest.TestEnv(t)
	dest := filepath.Join(t.TempDir(), "app")
	r := gitRes(t, typ, "sync", map[string]any{"destination": dest, "repository": u.URL})
	resourcetest.Apply(t, typ, env, r, resources.Create)
	u.commit("two", nil)
	st, step := resourcetest.Plan(t, typ, r)
	moved := dest + ".moved"
	if err := os.Rename(dest, moved); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, filepath.Dir(dest), "clone", "--quiet", u.URL, dest)
	before := head(t, dest)
	if err := resources.ConvergeStep(context.Background(), typ, env, r, st, step); err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Fatalf("converge on a swapped directory: %v", err)
	}
	if head(t, dest) != before {
		t.Error("the swapped-in directory was changed")
	}
}
