package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/toquehq/toque/config"
)

// location is where a lock came from; relative cookbook sources in it
// resolve against it and may not leave the region it allows (see
// rewrite).
type location struct {
	kind string // "local", "git" or "http"
	// local: the lock's directory, as written relative to the policy's
	// directory (or absolute); and, absolute, the lock's directory and
	// the including policy's repository root (see repositoryRoot).
	dir, lockDir, root string
	inRepo             bool
	// git: the repository, the pinned commit and the lock's directory in
	// the tree ("" for the root).
	repo, commit, treeDir string
	// http: the base URL of the layout (no trailing slash).
	base string
}

func (l location) String() string {
	switch l.kind {
	case "git":
		return fmt.Sprintf("%s at %s", redactURL(l.repo), short(l.commit))
	case "http":
		return redactURL(l.base)
	}
	return l.dir
}

// rewrite turns a cookbook source written in a lock at loc into one that
// resolves from the including policy's directory. A relative path may
// climb out of the lock's directory (the usual chef-repo layout has
// policies/ and cookbooks/ side by side), but not out of:
//   - local: the lock's directory or the including policy's repository,
//     both with every link resolved;
//   - git: the repository's tree at the pinned commit;
//   - http: the layout's base URL (no "..").
func (l location) rewrite(name string, s SourceOptions) (SourceOptions, error) {
	switch {
	case s.Git != "":
		if s.Sha == "" {
			return s, fmt.Errorf("its git source has no sha")
		}
		return s, nil
	case s.URL != "":
		if s.Artifact == "" {
			return s, fmt.Errorf("its url source has no artifact")
		}
		return s, nil
	case s.Path != "" && s.Artifact != "":
		return s, fmt.Errorf("its source gives both path and artifact")
	case s.Path != "" || s.Artifact != "":
		rel := s.Path
		if rel == "" {
			rel = s.Artifact
		}
		clean, err := cleanRelative(rel)
		if err != nil {
			return s, fmt.Errorf("its path %w", err)
		}
		var out SourceOptions
		switch l.kind {
		case "local":
			if err := l.inside(clean); err != nil {
				return s, fmt.Errorf("its path %q %w", rel, err)
			}
			out.Path = joinLocal(l.dir, clean)
		case "git":
			p := path.Join(l.treeDir, clean)
			if p == ".." || strings.HasPrefix(p, "../") {
				return s, fmt.Errorf("its path %q leaves the repository (from %s)", rel, path.Join("/", l.treeDir))
			}
			out.Git, out.Sha = l.repo, l.commit
			out.Path = p
		case "http":
			if s.Path != "" {
				return s, fmt.Errorf("its source is a directory (path %q), which cannot be read over http; publish the included policy with toque export", s.Path)
			}
			if clean == ".." || strings.HasPrefix(clean, "../") {
				return s, fmt.Errorf("its artifact %q leaves the directory it is relative to", rel)
			}
			out.URL, out.Artifact = l.base, clean
			return out, nil
		}
		if s.Artifact != "" {
			out.Artifact, out.Path = out.Path, ""
		}
		return out, nil
	}
	return s, fmt.Errorf("it has no source")
}

// cleanRelative checks that p is a relative, slash-separated path and
// returns it cleaned; unlike config.CleanCookbookPath it may start with
// "..": the caller decides how far it may climb.
func cleanRelative(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("is empty")
	}
	if strings.Contains(p, "\\") || path.IsAbs(p) || filepath.IsAbs(p) {
		return "", fmt.Errorf("%q must be a relative, slash-separated path", p)
	}
	return path.Clean(p), nil
}

// inside checks that rel, from a local lock's directory, stays in the
// lock's directory or the including policy's repository: as written, and
// again with every link resolved when it exists (a link cannot lead out).
func (l location) inside(rel string) error {
	target := filepath.Join(l.lockDir, filepath.FromSlash(rel))
	region := fmt.Sprintf("both the included lock's directory (%s) and the including policy's repository (%s)", l.lockDir, l.root)
	if !l.inRepo {
		region = fmt.Sprintf("both the included lock's directory (%s) and the including policy's directory (%s; with no .git or %s at or above it, that is the policy's whole repository: mark the top of a repository that is not a git checkout with an empty %s file)", l.lockDir, l.root, RepoMarkerName, RepoMarkerName)
	}
	if !within(target, l.lockDir) && !within(target, l.root) {
		return fmt.Errorf("leaves %s", region)
	}
	real, err := filepath.EvalSymlinks(target)
	if err != nil {
		return nil // it is not there: reading it fails, saying so
	}
	for _, dir := range []string{l.lockDir, l.root} {
		if d, err := filepath.EvalSymlinks(dir); err == nil && within(real, d) {
			return nil
		}
	}
	return fmt.Errorf("leads, through a link, to %s, which leaves %s", real, region)
}

// within reports whether p is dir or below it (both absolute and clean).
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// RepoMarkerName is the file that marks the top of a repository of
// policies and cookbooks that is not a git checkout (an exported tree, a
// copy in a container): an empty regular file.
const RepoMarkerName = ".toque-repo"

// repositoryRoot is the including policy's repository: the nearest
// directory at or above dir holding .git (a directory, or the file of a
// worktree or submodule: git's top level) or a RepoMarkerName file, else
// dir itself. Cookbook paths of locks included by path may lead anywhere
// inside it, and nowhere outside.
func repositoryRoot(dir string) (root string, inRepo bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, false
	}
	for d := abs; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		if isMarker(filepath.Join(d, RepoMarkerName)) {
			return d, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs, false
		}
		d = parent
	}
}

// isMarker reports whether path is a repository marker: a regular file
// (not a link, nor a directory), owned by root or the user toque runs as
// (another user's file would let that user widen the repository).
func isMarker(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && (st.Uid == 0 || int(st.Uid) == os.Geteuid())
}

func joinLocal(dir, rel string) string {
	if dir == "" || dir == "." {
		return rel
	}
	return filepath.ToSlash(filepath.Join(filepath.FromSlash(dir), filepath.FromSlash(rel)))
}

// describeSource is a one-line description of a cookbook source.
func describeSource(s SourceOptions) string {
	switch {
	case s.Git != "" && s.Artifact != "":
		return fmt.Sprintf("git %s at %s, artifact %s", s.Git, short(s.Sha), s.Artifact)
	case s.Git != "":
		p := s.Path
		if p == "" {
			p = "."
		}
		return fmt.Sprintf("git %s at %s, path %s", s.Git, short(s.Sha), p)
	case s.URL != "":
		return fmt.Sprintf("%s/%s", strings.TrimRight(s.URL, "/"), s.Artifact)
	case s.Artifact != "":
		return "artifact " + s.Artifact
	}
	return "path " + s.Path
}

// artifactManifest is the document at cookbook_artifacts/NAME/IDENTIFIER:
// the cookbook's files, whose bytes are at file_store/CHECKSUM next to the
// cookbook_artifacts directory.
type artifactManifest struct {
	Name       string         `json:"name"`
	Version    string         `json:"version"`
	Identifier string         `json:"identifier"`
	Files      []CookbookFile `json:"files"`
}

// artifactBase splits "X/cookbook_artifacts/NAME/ID" into "X".
func artifactBase(artifact string) (string, error) {
	parts := strings.Split(artifact, "/")
	if len(parts) < 3 || parts[len(parts)-3] != "cookbook_artifacts" {
		return "", fmt.Errorf("artifact %q is not a cookbook_artifacts/NAME/IDENTIFIER path", artifact)
	}
	return strings.Join(parts[:len(parts)-3], "/"), nil
}

// maxCookbookBytes bounds the bytes of one cookbook written into the
// cache from git or an artifact, so a hostile source cannot fill the disk.
var maxCookbookBytes int64 = 1 << 30

// store keeps materialised cookbooks by name and identifier.
type store struct {
	dir  string // {cache}/cookbooks
	git  *gitClient
	http *httpClient
}

func (s *store) pathOf(name, id string) string { return filepath.Join(s.dir, name+"-"+id) }

// cookbookDir returns the directory holding the locked cookbook: the
// source directory itself for a local path, else a verified copy in the
// store, fetched when missing. policyDir is the lock's directory.
func (s *store) cookbookDir(ctx context.Context, policyDir, name string, cl *CookbookLock) (string, error) {
	src := cl.SourceOptions
	if src.Git == "" && src.URL == "" && src.Artifact == "" {
		if src.Path == "" {
			return "", fmt.Errorf("the lock gives no source")
		}
		p := filepath.FromSlash(src.Path)
		if !filepath.IsAbs(p) {
			p = filepath.Join(policyDir, p)
		}
		return p, nil
	}
	if !config.ValidCookbookName(name) || !hexRe.MatchString(cl.Identifier) || len(cl.Identifier) != 64 {
		return "", fmt.Errorf("the lock's name or identifier is malformed")
	}
	dest := s.pathOf(name, cl.Identifier)
	if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
		return dest, nil
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return "", fmt.Errorf("making the cookbook cache: %w", err)
	}
	tmp, err := os.MkdirTemp(s.dir, ".fetch-*")
	if err != nil {
		return "", fmt.Errorf("making the cookbook cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "cb")
	switch {
	case src.Git != "" && src.Artifact == "":
		if err := s.git.exportTree(ctx, src.Git, src.Sha, src.Path, work); err != nil {
			return "", err
		}
	default:
		if err := s.fetchArtifact(ctx, policyDir, src, work); err != nil {
			return "", err
		}
	}
	id, err := CookbookIdentifier(work)
	if err != nil {
		return "", err
	}
	if id != cl.Identifier {
		return "", fmt.Errorf("the fetched cookbook has identifier %s, but the lock records %s: the source (%s) no longer holds the locked content", short(id), short(cl.Identifier), describeSource(src))
	}
	if err := os.Rename(work, dest); err != nil {
		if fi, serr := os.Stat(dest); serr == nil && fi.IsDir() {
			return dest, nil
		}
		return "", fmt.Errorf("storing the cookbook: %w", err)
	}
	return dest, nil
}

// fetchArtifact materialises a cookbook from a manifest and its file store.
func (s *store) fetchArtifact(ctx context.Context, policyDir string, src SourceOptions, dest string) error {
	base, err := artifactBase(src.Artifact)
	if err != nil {
		return err
	}
	var read func(rel string) ([]byte, error)
	switch {
	case src.URL != "":
		read = func(rel string) ([]byte, error) { return s.http.get(ctx, joinURL(src.URL, rel)) }
	case src.Git != "":
		read = func(rel string) ([]byte, error) { return s.git.readFile(ctx, src.Git, src.Sha, rel) }
	default:
		read = func(rel string) ([]byte, error) {
			p := filepath.FromSlash(rel)
			if !filepath.IsAbs(p) {
				p = filepath.Join(policyDir, p)
			}
			return os.ReadFile(p)
		}
	}
	mb, err := read(src.Artifact)
	if err != nil {
		return fmt.Errorf("reading the cookbook manifest: %w", err)
	}
	var m artifactManifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return fmt.Errorf("the cookbook manifest %s is not valid: %w", src.Artifact, err)
	}
	var links []CookbookFile
	var total int64
	for _, f := range m.Files {
		clean, err := config.CleanCookbookPath(f.Path)
		if err != nil || clean != f.Path || hiddenPath(f.Path) || !hexRe.MatchString(f.Checksum) || len(f.Checksum) != 64 {
			return fmt.Errorf("the cookbook manifest %s lists a bad file %q", src.Artifact, f.Path)
		}
		if f.Link != "" {
			if textSHA256(f.Link) != f.Checksum {
				return fmt.Errorf("the cookbook manifest %s lists the link %q with a checksum that is not its target's", src.Artifact, f.Path)
			}
			links = append(links, f)
			continue
		}
		b, err := read(path.Join(base, "file_store", f.Checksum))
		if err != nil {
			return fmt.Errorf("reading %s of the cookbook: %w", f.Path, err)
		}
		if total += int64(len(b)); total > maxCookbookBytes {
			return fmt.Errorf("the cookbook is larger than %d bytes", maxCookbookBytes)
		}
		if got := digestOf(b); got != "sha256:"+f.Checksum {
			return fmt.Errorf("%s of the cookbook does not match its checksum", f.Path)
		}
		target := filepath.Join(dest, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	return placeLinks(dest, links)
}

// hiddenPath reports whether a component of p (slash-separated) starts
// with '.': such entries are not part of a cookbook's identifier, so a
// manifest may not bring them.
func hiddenPath(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}
