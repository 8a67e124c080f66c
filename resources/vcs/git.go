package vcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// gitType is the built-in "git" type, Chef's: a working tree of a git
// repository at one commit. Load reads the destination (as the user who
// owns it), resolves the revision with git ls-remote (as the recipe's
// user) and reads the commits between the two from a temporary bare
// repository (commits.go); Plan compares the commit checked out and the
// remote's URL; the steps clone, fetch and check out that exact commit.
type gitType struct {
	schema *resources.Schema
	// fileSubmodules lets submodules use the file transport: tests, whose
	// repositories are local. Never set in toque itself.
	fileSubmodules bool
}

// GitType returns the built-in "git" resource type.
func GitType() resources.Type { return newGitType() }

// Defaults of git.
const (
	defaultGitTimeout = 600
	defaultRemote     = "origin"
)

func newGitType() *gitType {
	return &gitType{schema: &resources.Schema{
		Name:        "git",
		Description: "Manages a working tree of a git repository at one exact commit.",
		Properties: []*resources.Property{
			{Name: "destination", Type: cty.String, NameProperty: true, Identity: true, Required: true, Namespace: resources.NamespacePath,
				Normalize: props.NormalizePath, Validate: props.ValidateAbsPath,
				Description: "Absolute path of the working tree; defaults to the block label."},
			{Name: "repository", Type: cty.String, Required: true, LoadInput: true, Group: "repository",
				Validate: validateString(checkRepository), SensitiveWhen: sensitiveURL,
				Description: "The repository's URL (https, http, ssh, git, file, scp-like user@host:path) or absolute path; compared with the remote's URL in the working tree."},
			{Name: "revision", Type: cty.String, Default: cty.StringVal("HEAD"), LoadInput: true, Group: "revision",
				Validate:    validateString(checkRevision),
				Description: "A branch, a tag, HEAD (the repository's default branch) or a full commit id; the plan resolves it to a commit, which apply checks out exactly."},
			{Name: "commits", Type: cty.String, NonState: true, Content: true, Group: "revision", Validate: readOnly("commits", "the commits a sync moves the working tree over"),
				Description: "The commits a sync moves over, one line each (id and subject): read by toque and shown as a diff; a recipe does not set it."},
			{Name: "remote", Type: cty.String, NonState: true, Default: cty.StringVal(defaultRemote), Validate: validateString(checkRemote),
				Description: "The name of the remote in the working tree."},
			{Name: "depth", Type: cty.Number, NonState: true, Validate: props.PositiveInt("depth"),
				Description: "Fetch only this many commits of history (a shallow clone)."},
			{Name: "enable_submodules", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Also check out the submodules, recursively (git submodule update --init --recursive)."},
			{Name: "checkout_branch", Type: cty.String, NonState: true, Validate: validateString(checkBranch),
				Description: "A local branch to check the commit out on; unset: the branch revision names, or a detached HEAD for a tag or commit."},
			{Name: "user", Type: cty.String, NonState: true, HostCheck: props.CheckUser,
				Description: "The user git runs as, who owns the working tree (root by default)."},
			{Name: "group", Type: cty.String, NonState: true, HostCheck: props.CheckGroup,
				Description: "The group git runs as and a new working tree belongs to."},
			{Name: "timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultGitTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds one git command may take."},
		},
		Actions:       []string{"sync", "checkout", "export"},
		DefaultAction: "sync",
	}}
}

func (t *gitType) Schema() *resources.Schema { return t.schema }

func sensitiveURL(v cty.Value) bool {
	return v.IsKnown() && !v.IsNull() && v.Type() == cty.String && props.HasCredentials(v.AsString())
}

func readOnly(name, what string) func(cty.Value) error {
	return func(v cty.Value) error {
		if v.IsNull() {
			return nil
		}
		return fmt.Errorf("%s is %s, read by toque; a recipe does not set it", name, what)
	}
}

// The kinds of thing Load finds at destination (Extra kind).
const (
	kindAbsent     = "absent"
	kindRepository = "repository"
	kindEmpty      = "empty directory"
	kindDirectory  = "directory"
)

// Extra keys of a git reading.
const (
	xKind       = "kind"
	xOwner      = "owner"      // uid of destination
	xProblem    = "problem"    // why git cannot act there (Plan refuses)
	xParent     = "parent"     // "missing" when destination's parent is
	xTarget     = "target"     // the commit revision resolves to
	xTargetRef  = "target_ref" // the ref it was resolved from ("" for a commit id)
	xUnresolved = "unresolved" // why revision did not resolve
	xBranch     = "branch"     // the branch checked out, "" when detached
	xDirty      = "dirty"      // tracked files with local changes, NUL-separated
	xReadAs     = "read_as"    // who read the remote, when not user
)

// gitReading is what Load hands Plan beyond the fingerprint (State.Local):
// what follows from the commits the fingerprint names (the target, the
// commit checked out) and the repository's history, which a commit's id
// fixes.
type gitReading struct {
	// arriving is the commits a sync brings, one line each; subject the
	// target commit's subject.
	arriving, subject string
	// dev and ino are destination's, when it exists: a step acts on the
	// directory Load read, or on none.
	dev, ino uint64
}

// gitReadingOf is st's gitReading, made on first use.
func gitReadingOf(st *resources.State) *gitReading {
	if g, ok := st.Local.(*gitReading); ok {
		return g
	}
	g := &gitReading{}
	st.Local = g
	return g
}

// Load reads destination and, when the action may change it, resolves
// revision and reads the commits between.
func (t *gitType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	dest := r.String("destination")
	if err := props.CtxErr(ctx, "reading "+dest); err != nil {
		return nil, err
	}
	st := &resources.State{Values: map[string]cty.Value{}, Extra: map[string]string{}}
	owner, err := readDestination(dest, st)
	if err != nil {
		return nil, err
	}
	action := r.EffectiveAction()
	kind := st.Extra[xKind]
	switch {
	case action == "nothing",
		action == "export" && kind != kindAbsent,
		action == "checkout" && kind == kindRepository,
		kind != kindAbsent && kind != kindEmpty && kind != kindRepository:
		return st, nil // nothing to resolve: Plan needs no remote
	}
	remoteAs, problem := remoteIdentity(r, st)
	if problem != "" {
		st.Extra[xProblem] = problem
		return st, nil
	}
	timeout := props.Seconds(r.Get("timeout"))
	head := ""
	if kind == kindRepository || kind == kindEmpty {
		destAs, problem := destIdentity(owner, r.String("user"))
		if problem != "" {
			st.Extra[xProblem] = problem
			return st, nil
		}
		if kind == kindRepository {
			if head, err = t.readRepository(ctx, r, dest, destAs, timeout, st); err != nil {
				return nil, err
			}
		}
	}
	if !r.Get("repository").IsKnown() || !r.Get("revision").IsKnown() || r.String("repository") == "" {
		return st, nil // known at apply: read then
	}
	url := r.String("repository")
	target, ref, why, err := t.resolve(ctx, url, r.String("revision"), remoteAs, timeout)
	if err != nil {
		return nil, err
	}
	if why != "" {
		st.Extra[xUnresolved] = why
		return st, nil
	}
	st.Extra[xTarget], st.Extra[xTargetRef] = target, ref
	if action == "sync" && head == target {
		return st, nil
	}
	return st, t.readCommits(ctx, url, target, head, remoteAs, timeout, st)
}

// readDestination records what is at dest (Extra kind, owner, parent)
// and returns its owner.
func readDestination(dest string, st *resources.State) (uint32, error) {
	var s unix.Stat_t
	err := unix.Lstat(dest, &s)
	if errors.Is(err, unix.ENOENT) {
		st.Extra[xKind] = kindAbsent
		if _, err := os.Lstat(filepath.Dir(dest)); errors.Is(err, fs.ErrNotExist) {
			st.Extra[xParent] = "missing"
		}
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", dest, err)
	}
	st.Exists = true
	st.Extra[xOwner] = strconv.FormatUint(uint64(s.Uid), 10)
	gitReadingOf(st).dev, gitReadingOf(st).ino = uint64(s.Dev), uint64(s.Ino)
	switch s.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFLNK:
		st.Extra[xKind] = "symbolic link"
		return s.Uid, nil
	default:
		st.Extra[xKind] = "file"
		return s.Uid, nil
	}
	var g unix.Stat_t
	if err := unix.Lstat(filepath.Join(dest, ".git"), &g); err == nil && g.Mode&unix.S_IFMT == unix.S_IFDIR {
		st.Extra[xKind] = kindRepository
		return s.Uid, nil
	}
	f, err := os.Open(dest)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", dest, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) == 0 && (err == nil || errors.Is(err, io.EOF)) {
		st.Extra[xKind] = kindEmpty
		st.Exists = false
		return s.Uid, nil
	}
	st.Extra[xKind] = kindDirectory
	return s.Uid, nil
}

// identity is who a git process runs as: user and group, "" for
// toque's own.
type identity struct{ user, group string }

// remoteIdentity is who runs git against the remote: the recipe's user
// and group, or toque's own. A user or group that does not exist yet (an
// earlier resource of the plan makes it: the planner made it a need) is
// replaced by toque's own for the plan's reading, and Extra says so;
// apply reads again as them once they exist.
func remoteIdentity(r *resources.Resource, st *resources.State) (identity, string) {
	var id identity
	if user := r.String("user"); user != "" {
		uid, err := props.LookupUID(user)
		switch {
		case err != nil:
			st.Extra[xReadAs] = "toque's own user: user " + user + " does not exist yet"
		case uid != os.Geteuid() && hostexec.EffectiveUID() != 0:
			return id, hostexec.NeedsRoot("running git as user " + user).Error()
		default:
			id.user = user
		}
	}
	if group := r.String("group"); group != "" {
		if _, err := props.LookupGID(group); err == nil {
			id.group = group
		}
	}
	return id, ""
}

// destIdentity is who runs git in the repository at destination: the
// user who owns it, who must be the recipe's user when one is set. A
// repository's configuration can run commands (core.sshCommand,
// core.fsmonitor, credential helpers); git refuses a repository another
// user owns for that reason, and toque never acts on one as anyone but
// its owner.
func destIdentity(owner uint32, user string) (string, string) {
	if user != "" {
		uid, err := props.LookupUID(user)
		if err != nil {
			return "", fmt.Sprintf("user %s does not exist yet", user)
		}
		if uint32(uid) != owner {
			return "", fmt.Sprintf("the repository belongs to %s, not to user %s: git acts on a repository only as the user who owns it", props.OwnerName(owner), user)
		}
		return user, ""
	}
	if int64(owner) != int64(os.Geteuid()) {
		return "", fmt.Sprintf("the repository belongs to %s: set user = %q (git acts on a repository only as the user who owns it)", props.OwnerName(owner), props.OwnerName(owner))
	}
	return "", ""
}

// readRepository reads the repository at dest, as user: the commit and
// branch checked out, the tracked files with local changes, the
// remote's URL. It returns the commit ("" for a repository without one).
func (t *gitType) readRepository(ctx context.Context, r *resources.Resource, dest, user string, timeout time.Duration, st *resources.State) (string, error) {
	g := gitRun{dir: dest, user: user, timeout: timeout, fileSubmodules: t.fileSubmodules}
	g.args = []string{"--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=no", "--ignore-submodules=dirty"}
	out, err := g.run(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the repository at %s: %w", dest, err)
	}
	head, branch, dirty := parseStatus(out)
	if head != "" {
		st.Values["revision"] = cty.StringVal(head)
	}
	st.Extra[xBranch] = branch
	if len(dirty) > 0 {
		st.Extra[xDirty] = strings.Join(dirty, "\x00")
	}
	g.args = []string{"config", "--default", "", "--get", "remote." + r.String("remote") + ".url"}
	out, err = g.run(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the remote of the repository at %s: %w", dest, err)
	}
	if u := strings.TrimSpace(out); u != "" {
		st.Values["repository"] = cty.StringVal(u)
	}
	return head, nil
}

// parseStatus reads git status --porcelain=v2 --branch -z: the commit
// checked out, the branch ("" when detached) and the changed paths.
func parseStatus(out string) (head, branch string, dirty []string) {
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.HasPrefix(f, "# branch.oid "):
			if h := strings.TrimPrefix(f, "# branch.oid "); fullCommit.MatchString(h) {
				head = h
			}
		case strings.HasPrefix(f, "# branch.head "):
			if b := strings.TrimPrefix(f, "# branch.head "); b != "(detached)" {
				branch = b
			}
		case strings.HasPrefix(f, "1 "):
			if p := strings.SplitN(f, " ", 9); len(p) == 9 {
				dirty = append(dirty, p[8])
			}
		case strings.HasPrefix(f, "2 "):
			if p := strings.SplitN(f, " ", 10); len(p) == 10 {
				dirty = append(dirty, p[9])
			}
			i++ // the original path follows
		case strings.HasPrefix(f, "u "):
			if p := strings.SplitN(f, " ", 11); len(p) == 11 {
				dirty = append(dirty, p[10])
			}
		}
	}
	return head, branch, dirty
}

// resolve is the commit revision names in the repository at url now
// (git ls-remote), and the ref it was found as: a tag first, then a
// branch, as git's own rev-parse; HEAD is the default branch. why says,
// instead, why it names none.
func (t *gitType) resolve(ctx context.Context, url, rev string, as identity, timeout time.Duration) (commit, ref, why string, err error) {
	if fullCommit.MatchString(rev) {
		return rev, "", "", nil // checked by the fetch that reads its subject
	}
	var patterns []string
	switch {
	case rev == "HEAD":
		patterns = []string{"HEAD"}
	case strings.HasPrefix(rev, "refs/"):
		patterns = []string{rev, rev + "^{}"}
	default:
		patterns = []string{"refs/tags/" + rev, "refs/tags/" + rev + "^{}", "refs/heads/" + rev}
	}
	g := gitRun{args: append([]string{"ls-remote", "--symref", "--", url}, patterns...), user: as.user, group: as.group, url: url, timeout: timeout, fileSubmodules: t.fileSubmodules}
	out, err := g.run(ctx)
	if err != nil {
		return "", "", "", fmt.Errorf("resolving revision %s of %s: %w", rev, props.RedactURL(url), err)
	}
	refs, headRef := parseLsRemote(out)
	for _, p := range patterns {
		name := strings.TrimSuffix(p, "^{}")
		if c, ok := refs[name+"^{}"]; ok {
			return c, name, "", nil // an annotated tag: its commit
		}
		if c, ok := refs[name]; ok {
			if name == "HEAD" {
				name = headRef
			}
			return c, name, "", nil
		}
	}
	why = fmt.Sprintf("%s has no branch or tag %q", props.RedactURL(url), rev)
	if len(rev) >= 4 && strings.Trim(rev, "0123456789abcdef") == "" {
		why += "; to name a commit, give its full id (40 hex digits): an abbreviated one cannot be resolved without fetching the whole history"
	}
	return "", "", why, nil
}

// parseLsRemote reads git ls-remote --symref: ref → commit, and the
// branch HEAD points to.
func parseLsRemote(out string) (map[string]string, string) {
	refs := map[string]string{}
	head := ""
	for _, line := range strings.Split(out, "\n") {
		a, b, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		if rest, isSym := strings.CutPrefix(a, "ref: "); isSym {
			if b == "HEAD" {
				head = rest
			}
			continue
		}
		if fullCommit.MatchString(a) {
			refs[b] = a
		}
	}
	return refs, head
}
