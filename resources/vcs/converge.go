package vcs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// Steps: a create makes the working tree (init, fetch, check out: a
// clone), an update fetches and checks out the planned commit. Each
// checks the commit it leaves checked out is the one the step names.
func (t *gitType) Steps() resources.Steps {
	return resources.Steps{Create: t.create, Update: t.update}
}

// owner is the uid and gid a new directory gets: the recipe's user and
// group, -1 for toque's own.
func owner(desired *resources.Resource) (int, int, error) {
	uid, gid := -1, -1
	var err error
	if u := desired.String("user"); u != "" {
		if uid, err = props.LookupUID(u); err != nil {
			return 0, 0, err
		}
	}
	if g := desired.String("group"); g != "" {
		if gid, err = props.LookupGID(g); err != nil {
			return 0, 0, err
		}
	}
	return uid, gid, nil
}

// runner is a git run in dir as the recipe's user and group.
func (t *gitType) runner(env *resources.Env, desired *resources.Resource, dir string) gitRun {
	return gitRun{dir: dir, user: desired.String("user"), group: desired.String("group"), url: desired.String("repository"),
		timeout: props.Seconds(desired.Get("timeout")), logger: env.Log(), fileSubmodules: t.fileSubmodules}
}

func (t *gitType) create(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) (err error) {
	dest := desired.String("destination")
	target, err := plannedCommit(step)
	if err != nil {
		return err
	}
	uid, gid, err := owner(desired)
	if err != nil {
		return fmt.Errorf("%s: %w", dest, err)
	}
	dir := dest
	export := desired.Action == "export"
	if export {
		// A clone beside it, named into place whole once its .git is gone.
		dir = filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+".toque-git")
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing %s, left by an earlier run: %w", dir, err)
		}
	}
	made, err := files.MakeDir(dir, 0o755, uid, gid)
	if err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	if !made && !export {
		if err := sameDirectory(dest, current); err != nil {
			return err
		}
	}
	defer func() {
		if err == nil {
			return
		}
		if made {
			os.RemoveAll(dir)
		} else {
			emptyDir(dir)
		}
		err = fmt.Errorf("%w; what the clone had made in %s was removed", err, dest)
	}()
	g := t.runner(env, desired, dir)
	g.args = []string{"init", "--quiet", "--template="}
	if _, err := g.run(ctx); err != nil {
		return fmt.Errorf("making a repository in %s: %w", dir, err)
	}
	g.args = []string{"remote", "add", "--", desired.String("remote"), desired.String("repository")}
	if _, err := g.run(ctx); err != nil {
		return fmt.Errorf("adding the remote in %s: %w", dir, err)
	}
	if err := t.checkout(ctx, g, desired, current, target); err != nil {
		return err
	}
	if !export {
		return nil
	}
	if err := stripGit(dir); err != nil {
		return err
	}
	return renameNoReplace(dir, dest)
}

func (t *gitType) update(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	dest := desired.String("destination")
	if err := sameDirectory(dest, current); err != nil {
		return err
	}
	g := t.runner(env, desired, dest)
	if step.HasGroup("repository") {
		remote := desired.String("remote")
		g.args = []string{"remote", "set-url", "--", remote, desired.String("repository")}
		if v, ok := current.Values["repository"]; !ok || v == cty.NilVal || v.IsNull() {
			g.args = []string{"remote", "add", "--", remote, desired.String("repository")}
		}
		if _, err := g.run(ctx); err != nil {
			return fmt.Errorf("setting the URL of remote %s in %s: %w", remote, dest, err)
		}
	}
	if !step.HasGroup("revision") {
		return nil
	}
	target, err := plannedCommit(step)
	if err != nil {
		return err
	}
	return t.checkout(ctx, g, desired, current, target)
}

// plannedCommit is the commit the step checks out.
func plannedCommit(step *resources.Step) (string, error) {
	c := step.Change("revision")
	if c == nil || !c.After.IsKnown() || c.After.IsNull() || !fullCommit.MatchString(c.After.AsString()) {
		return "", errors.New("the step names no commit to check out (a bug in the git type)")
	}
	return c.After.AsString(), nil
}

// checkout fetches target from the remote into g's repository (the ref
// it was resolved from, and target itself when that did not bring it),
// checks it out, forcing over local changes, on checkout_branch, on the
// branch revision names, or detached, checks HEAD is target, and updates
// the submodules when asked.
func (t *gitType) checkout(ctx context.Context, g gitRun, desired *resources.Resource, current *resources.State, target string) error {
	dir, remote, ref := g.dir, desired.String("remote"), current.Extra[xTargetRef]
	depth := desired.Int("depth")
	fetch := []string{"fetch", "--quiet"}
	if depth > 0 {
		fetch = append(fetch, fmt.Sprintf("--depth=%d", depth), "--no-tags", "--", remote)
		switch {
		case strings.HasPrefix(ref, "refs/heads/"):
			fetch = append(fetch, "+"+ref+":refs/remotes/"+remote+"/"+strings.TrimPrefix(ref, "refs/heads/"))
		case strings.HasPrefix(ref, "refs/tags/"):
			fetch = append(fetch, "+"+ref+":"+ref)
		default:
			fetch = append(fetch, target)
		}
	} else {
		fetch = append(fetch, "--tags", "--", remote)
	}
	g.args = fetch
	if _, err := g.run(ctx); err != nil {
		return fmt.Errorf("fetching %s into %s: %w", shownRepo(desired), dir, err)
	}
	has := func() bool {
		g.args = []string{"cat-file", "-e", target + "^{commit}"}
		_, err := g.run(ctx)
		return err == nil
	}
	if !has() {
		g.args = []string{"fetch", "--quiet", "--no-tags"}
		if depth > 0 {
			g.args = append(g.args, fmt.Sprintf("--depth=%d", depth))
		}
		g.args = append(g.args, "--", remote, target)
		if _, err := g.run(ctx); err != nil || !has() {
			return fmt.Errorf("%s no longer has the planned commit %s (was it force-pushed away?); nothing was checked out: run toque plan again", shownRepo(desired), target)
		}
	}
	branch := desired.String("checkout_branch")
	tracked := ""
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		tracked = b
		if branch == "" {
			branch = b
		}
	}
	if branch != "" {
		g.args = []string{"checkout", "--quiet", "--force", "-B", branch, target}
	} else {
		g.args = []string{"checkout", "--quiet", "--force", "--detach", target}
	}
	if _, err := g.run(ctx); err != nil {
		return fmt.Errorf("checking out %s in %s: %w", target, dir, err)
	}
	if tracked != "" && tracked == branch {
		// Like a clone's branch: it tracks the remote's (best effort: a
		// shallow fetch of a tag has no remote-tracking branch).
		g.args = []string{"branch", "--quiet", "--set-upstream-to=" + remote + "/" + tracked, branch}
		_, _ = g.run(ctx)
	}
	g.args = []string{"rev-parse", "--verify", "HEAD^{commit}"}
	out, err := g.run(ctx)
	if got := strings.TrimSpace(out); err != nil || got != target {
		return fmt.Errorf("after checking out %s in %s, HEAD is %q: %v", target, dir, got, err)
	}
	if !desired.Bool("enable_submodules") {
		return nil
	}
	g.args = []string{"submodule", "--quiet", "sync", "--recursive"}
	if _, err := g.run(ctx); err != nil {
		return fmt.Errorf("syncing the submodules of %s: %w", dir, err)
	}
	g.args = []string{"submodule", "--quiet", "update", "--init", "--recursive", "--force"}
	if depth > 0 {
		g.args = append(g.args, fmt.Sprintf("--depth=%d", depth))
	}
	if _, err := g.run(ctx); err != nil {
		return fmt.Errorf("checking out the submodules of %s: %w", dir, err)
	}
	return nil
}

func shownRepo(desired *resources.Resource) string {
	return props.RedactURL(desired.String("repository"))
}

// stripGit removes what makes dir a repository: its .git, and the .git
// file of each submodule.
func stripGit(dir string) error {
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		return fmt.Errorf("removing %s/.git: %w", dir, err)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
}

// emptyDir removes what is in dir (a directory that was empty before
// the clone), never following a link.
func emptyDir(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// sameDirectory checks that dest is still the directory Load read (the
// step was planned from it): another one swapped in is not acted on.
func sameDirectory(dest string, current *resources.State) error {
	g, ok := current.Local.(*gitReading)
	var s unix.Stat_t
	if err := unix.Lstat(dest, &s); err != nil || !ok || s.Mode&unix.S_IFMT != unix.S_IFDIR || uint64(s.Dev) != g.dev || uint64(s.Ino) != g.ino {
		return fmt.Errorf("%s: %w", dest, files.ErrChanged)
	}
	return nil
}
