package policy

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/internal/shellexec"
)

// redactURL hides credentials in a URL: a password becomes "redacted", and
// so does a bare user name on http(s) (where it is usually a token). Other
// strings are returned as they are.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	} else if u.Scheme == "http" || u.Scheme == "https" {
		u.User = url.User("redacted")
	} else {
		return s
	}
	return u.String()
}

// gitClient runs the git binary (by argv, never a shell) against bare
// mirrors kept in dir, and caches files read at a commit.
type gitClient struct {
	dir    string // {cache}/git
	logger hclog.Logger
	// fetched remembers mirrors fetched during this run, so one run
	// fetches a repository at most once.
	fetched map[string]bool
}

func newGitClient(cacheDir string, logger hclog.Logger) *gitClient {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &gitClient{dir: filepath.Join(cacheDir, "git"), logger: logger.Named("git"), fetched: map[string]bool{}}
}

// gitError is a failed git command, its output redacted.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" && e.err != nil {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", e.args[0], msg)
}

func (e *gitError) Unwrap() error { return e.err }

func (g *gitClient) run(ctx context.Context, gitDir string, redactFrom string, args ...string) (string, error) {
	argv := []string{"git"}
	if gitDir != "" {
		argv = append(argv, "--git-dir="+gitDir)
	}
	argv = append(argv, args...)
	res, err := shellexec.Run(ctx, shellexec.Spec{
		Argv:        argv,
		Env:         map[string]string{"GIT_TERMINAL_PROMPT": "0"},
		Timeout:     10 * time.Minute,
		OutputLimit: 64 << 20,
	})
	if err != nil {
		stderr := ""
		if res != nil {
			stderr = res.Stderr
		}
		if redactFrom != "" {
			stderr = strings.ReplaceAll(stderr, redactFrom, redactURL(redactFrom))
		}
		return "", &gitError{args: args, stderr: stderr, err: err}
	}
	return res.Stdout, nil
}

// mirrorDir is the bare mirror of repo, keyed by its redacted URL.
func (g *gitClient) mirrorDir(repo string) string {
	sum := sha256.Sum256([]byte(redactURL(repo)))
	return filepath.Join(g.dir, hex.EncodeToString(sum[:12])+".git")
}

// ensureMirror makes the bare mirror of repo when there is none; the
// boolean says whether it was just made (and so is up to date).
func (g *gitClient) ensureMirror(ctx context.Context, repo string) (string, bool, error) {
	dir := g.mirrorDir(repo)
	if fi, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil && fi.Mode().IsRegular() {
		return dir, false, nil
	}
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		return "", false, fmt.Errorf("making the git cache: %w", err)
	}
	tmp, err := os.MkdirTemp(g.dir, ".clone-*")
	if err != nil {
		return "", false, fmt.Errorf("making the git cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	g.logger.Debug("cloning", "url", redactURL(repo))
	if _, err := g.run(ctx, "", repo, "clone", "--mirror", "--quiet", "--", repo, filepath.Join(tmp, "m.git")); err != nil {
		return "", false, fmt.Errorf("cloning %s: %w", redactURL(repo), err)
	}
	if err := os.Rename(filepath.Join(tmp, "m.git"), dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "HEAD")); serr == nil {
			return dir, true, nil // made concurrently
		}
		return "", false, fmt.Errorf("storing the mirror of %s: %w", redactURL(repo), err)
	}
	g.fetched[dir] = true
	return dir, true, nil
}

// fetch updates the mirror from repo (at most once per run).
func (g *gitClient) fetch(ctx context.Context, dir, repo string) error {
	if g.fetched[dir] {
		return nil
	}
	g.logger.Debug("fetching", "url", redactURL(repo))
	if _, err := g.run(ctx, dir, repo, "fetch", "--prune", "--quiet", "--", repo, "+refs/*:refs/*"); err != nil {
		return fmt.Errorf("fetching %s: %w", redactURL(repo), err)
	}
	g.fetched[dir] = true
	return nil
}

func (g *gitClient) revParse(ctx context.Context, dir, rev string) (string, bool) {
	out, err := g.run(ctx, dir, "", "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(out), true
}

// resolve is the commit sha names in repo (a full or abbreviated sha),
// else the commit ref names.
func (g *gitClient) resolve(ctx context.Context, repo, sha, ref string) (string, error) {
	if sha != "" {
		return g.resolveSha(ctx, repo, sha)
	}
	return g.resolveRef(ctx, repo, ref)
}

// resolveRef returns the commit ref (a branch, a tag, or a full ref name)
// names in repo now, after fetching.
func (g *gitClient) resolveRef(ctx context.Context, repo, ref string) (string, error) {
	dir, fresh, err := g.ensureMirror(ctx, repo)
	if err != nil {
		return "", err
	}
	if !fresh {
		if err := g.fetch(ctx, dir, repo); err != nil {
			return "", err
		}
	}
	for _, cand := range []string{"refs/heads/" + ref, "refs/tags/" + ref, ref} {
		if strings.HasPrefix(cand, "-") {
			continue
		}
		if c, ok := g.revParse(ctx, dir, cand); ok {
			return c, nil
		}
	}
	return "", fmt.Errorf("%s has no branch or tag %q", redactURL(repo), ref)
}

// resolveSha returns the full commit for sha (a prefix of at least 7 hex
// digits), fetching when the mirror does not have it.
func (g *gitClient) resolveSha(ctx context.Context, repo, sha string) (string, error) {
	dir, fresh, err := g.ensureMirror(ctx, repo)
	if err != nil {
		return "", err
	}
	if c, ok := g.revParse(ctx, dir, sha); ok {
		return c, nil
	}
	if !fresh {
		if err := g.fetch(ctx, dir, repo); err != nil {
			return "", err
		}
		if c, ok := g.revParse(ctx, dir, sha); ok {
			return c, nil
		}
	}
	return "", fmt.Errorf("%s has no commit %s", redactURL(repo), sha)
}

// haveCommit makes sure the mirror of repo holds commit, fetching once when
// it does not (a stale cache).
func (g *gitClient) haveCommit(ctx context.Context, repo, commit string) (string, error) {
	dir, fresh, err := g.ensureMirror(ctx, repo)
	if err != nil {
		return "", err
	}
	if _, ok := g.revParse(ctx, dir, commit); ok {
		return dir, nil
	}
	if !fresh {
		if err := g.fetch(ctx, dir, repo); err != nil {
			return "", err
		}
		if _, ok := g.revParse(ctx, dir, commit); ok {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%s has no commit %s (was it removed by a force-push?); run toque update to move the pin", redactURL(repo), commit)
}

// readFile returns file p (slash-separated, inside the tree) at commit.
// Files read are cached by commit and path: a commit never changes.
func (g *gitClient) readFile(ctx context.Context, repo, commit, p string) ([]byte, error) {
	sum := sha256.Sum256([]byte(p))
	cached := filepath.Join(g.dir, "files", commit, hex.EncodeToString(sum[:12]))
	if b, err := os.ReadFile(cached); err == nil {
		return b, nil
	}
	dir, err := g.haveCommit(ctx, repo, commit)
	if err != nil {
		return nil, err
	}
	out, err := g.run(ctx, dir, "", "cat-file", "blob", commit+":"+p)
	if err != nil {
		return nil, fmt.Errorf("%s has no file %s at commit %s", redactURL(repo), p, short(commit))
	}
	b := []byte(out)
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err == nil {
		_ = WriteFileAtomic(cached, b, 0o644)
	}
	return b, nil
}

// exportTree writes the tree at commit:sub into dest (which must not
// exist). Links are made last (see extractTar); anything that is not a
// file, a directory or a link is refused.
func (g *gitClient) exportTree(ctx context.Context, repo, commit, sub, dest string) error {
	dir, err := g.haveCommit(ctx, repo, commit)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".archive-*.tar")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	treeish := commit
	if sub != "" && sub != "." {
		treeish = commit + ":" + sub
	}
	if _, err := g.run(ctx, dir, "", "archive", "--format=tar", "-o", tmp.Name(), treeish); err != nil {
		return fmt.Errorf("%s has no directory %s at commit %s", redactURL(repo), sub, short(commit))
	}
	f, err := os.Open(tmp.Name())
	if err != nil {
		return err
	}
	defer f.Close()
	return extractTar(f, dest)
}

// extractTar writes the archive's files and directories into dest, then
// its symbolic links, each checked by linkTargetInside: as no link exists
// while files are written, no file is written through one. Whether a
// link's target, once the tree is complete, really is inside is checked
// when the tree is hashed (CookbookFiles).
func extractTar(r io.Reader, dest string) error {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	var links []CookbookFile
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return placeLinks(dest, links)
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		name := path.Clean(h.Name)
		if name == "." || h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("the archive holds %q, outside the cookbook", h.Name)
		}
		target := filepath.Join(dest, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			n, err := io.Copy(out, io.LimitReader(tr, maxCookbookBytes-total+1))
			total += n
			if err == nil && total > maxCookbookBytes {
				err = fmt.Errorf("the cookbook is larger than %d bytes", maxCookbookBytes)
			}
			if err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		case tar.TypeSymlink:
			links = append(links, CookbookFile{Path: name, Link: h.Linkname})
		default:
			return fmt.Errorf("%s: a cookbook holds regular files, directories and links inside itself only", name)
		}
	}
}

// placeLinks makes links (paths below dest, slash-separated) after every
// file is in place. A link's target must pass linkTargetInside, and no
// directory on the way to it may be a link, so a link is never made
// through another one.
func placeLinks(dest string, links []CookbookFile) error {
	for _, l := range links {
		if err := linkTargetInside(l.Path, l.Link); err != nil {
			return err
		}
		dir := dest
		parts := strings.Split(l.Path, "/")
		for _, part := range parts[:len(parts)-1] {
			dir = filepath.Join(dir, part)
			fi, err := os.Lstat(dir)
			switch {
			case os.IsNotExist(err):
				if err := os.Mkdir(dir, 0o755); err != nil {
					return err
				}
			case err != nil:
				return err
			case !fi.IsDir():
				return fmt.Errorf("%s: its directory %s is not a directory", l.Path, part)
			}
		}
		if err := os.Symlink(l.Link, filepath.Join(dir, parts[len(parts)-1])); err != nil {
			return fmt.Errorf("%s: %w", l.Path, err)
		}
	}
	return nil
}
