package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/toquehq/toque/config"
)

// Options configure a Workspace.
type Options struct {
	// CacheDir holds bare git mirrors, files read from git, locks fetched
	// from servers and materialised cookbooks.
	CacheDir string
	// HTTPClient, when set, lends its Transport to fetches from policy
	// servers (for a custom TLS configuration); nil means the default
	// transport, which verifies TLS certificates. Its redirect policy and
	// timeout are not used: toque's are (see HTTP and httpClient).
	HTTPClient *http.Client
	// HTTP bounds those fetches: timeouts, attempts, size.
	HTTP HTTPOptions
	// Token, when set, is sent as a bearer token to the servers and remote
	// URLs policy.hcl names, over https or to a loopback address only (see
	// TokenEnv).
	Token  string
	Logger hclog.Logger
}

// Workspace is one policy directory and the cache its sources are fetched
// into.
type Workspace struct {
	Dir string
	// Parser holds policy.hcl and the cookbook files read, for rendering
	// diagnostics.
	Parser *hclparse.Parser
	opts   Options
	git    *gitClient
	http   *httpClient
	store  *store
}

// NewWorkspace prepares the policy workflow for dir.
func NewWorkspace(dir string, opts Options) *Workspace {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	g := newGitClient(opts.CacheDir, opts.Logger)
	h := newHTTPClient(opts.HTTPClient, opts.Token, opts.HTTP)
	return &Workspace{
		Dir:    dir,
		Parser: hclparse.NewParser(),
		opts:   opts,
		git:    g,
		http:   h,
		store:  &store{dir: filepath.Join(opts.CacheDir, "cookbooks"), git: g, http: h},
	}
}

// trustIncludes lets the token go to the servers and remote URLs of the
// includes l records for its own policy.hcl (not those of included locks).
func (w *Workspace) trustIncludes(l *Lock) {
	for _, inc := range l.IncludedPolicyLocks {
		w.http.trust(inc.SourceOptions.Server)
		w.http.trust(inc.SourceOptions.Remote)
	}
}

// LockPath is the lock file of the workspace.
func (w *Workspace) LockPath() string { return filepath.Join(w.Dir, LockFileName) }

// InstallOptions choose what install may move.
type InstallOptions struct {
	// Update moves pins: every pin when Names is empty, else only those of
	// the named includes and cookbooks.
	Update bool
	Names  []string
}

func (o InstallOptions) moves(name string) bool {
	if !o.Update {
		return false
	}
	if len(o.Names) == 0 {
		return true
	}
	for _, n := range o.Names {
		if n == name {
			return true
		}
	}
	return false
}

// ownCookbook is a cookbook block of policy.hcl, resolved.
type ownCookbook struct {
	spec  *CookbookSpec
	lock  *CookbookLock
	input *Input
}

// included is an include, fetched.
type included struct {
	spec   *IncludeSpec
	lock   *Lock
	loc    location
	source IncludeSource
	input  *Input
}

func (i *included) origin() string {
	return fmt.Sprintf("include_policy %q (revision %s) at %s:%d", i.spec.Name, short(i.lock.RevisionID), PolicyFileName, i.spec.DeclRange.Start.Line)
}

// InstallResult is what Install did.
type InstallResult struct {
	Lock *Lock
	// Changes is what moved from the lock there was (none: everything is
	// added).
	Changes *LockChanges
	// Written says whether policy.lock.json was written: it is not when
	// its bytes would stay the same.
	Written bool
}

// Install resolves policy.hcl into a lock and writes policy.lock.json. Pins
// the existing lock records are kept for every source that did not change,
// except those opts says to move. Nothing is written when there are errors,
// nor when the lock would not change.
func (w *Workspace) Install(ctx context.Context, opts InstallOptions) (*InstallResult, hcl.Diagnostics) {
	lock, diags := w.Resolve(ctx, opts)
	if diags.HasErrors() || lock == nil {
		return nil, diags
	}
	var prev *Lock
	before, err := os.ReadFile(w.LockPath())
	if err == nil {
		prev, _ = ParseLock(before) // an unreadable lock: everything is new
	}
	res := &InstallResult{Lock: lock, Changes: DiffLocks(prev, lock)}
	b, err := lock.Marshal()
	if err == nil && !bytes.Equal(b, before) {
		err = WriteFileAtomic(w.LockPath(), b, 0o644)
		res.Written = err == nil
	}
	if err != nil {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot write the lock",
			Detail:   err.Error() + ".",
		})
	}
	return res, diags
}

// Resolve computes the lock Install would write.
func (w *Workspace) Resolve(ctx context.Context, opts InstallOptions) (*Lock, hcl.Diagnostics) {
	p, diags := ReadPolicy(w.Dir, w.Parser)
	if p == nil || diags.HasErrors() {
		return nil, diags
	}
	for _, inc := range p.Includes {
		w.http.trust(inc.Server)
		w.http.trust(inc.Remote)
	}
	var prev *Lock
	if _, err := os.Stat(w.LockPath()); err == nil {
		l, _, err := ReadLock(w.LockPath())
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Existing lock ignored",
				Detail:   fmt.Sprintf("%s. Every source is resolved afresh.", err),
			})
		} else {
			prev = l
		}
	}
	if opts.Update {
		known := map[string]bool{}
		for _, c := range p.Cookbooks {
			known[c.Name] = true
		}
		for _, i := range p.Includes {
			known[i.Name] = true
		}
		for _, n := range opts.Names {
			if !known[n] {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Nothing to update",
					Detail:   fmt.Sprintf("policy.hcl has no include_policy or cookbook named %q.", n),
				})
			}
		}
		if diags.HasErrors() {
			return nil, diags
		}
	}

	var own []*ownCookbook
	for _, spec := range p.Cookbooks {
		var prevCB *CookbookLock
		if prev != nil {
			prevCB = prev.CookbookLocks[spec.Name]
		}
		oc, d := w.resolveCookbook(ctx, spec, prevCB, opts.moves(spec.Name))
		diags = append(diags, d...)
		if oc != nil {
			own = append(own, oc)
		}
	}
	var incs []*included
	for _, spec := range p.Includes {
		var prevInc *IncludedLock
		if prev != nil {
			for _, pi := range prev.IncludedPolicyLocks {
				if pi.Name == spec.Name {
					prevInc = pi
				}
			}
		}
		inc, d := w.fetchInclude(ctx, spec, prevInc, opts.moves(spec.Name))
		diags = append(diags, d...)
		if inc != nil {
			incs = append(incs, inc)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	lock, d := merge(p, own, incs)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return nil, diags
	}

	// Inputs: policy.hcl, own local cookbooks, locks included by path, and
	// the local cookbooks those locks bring.
	inputs := []*Input{{Kind: "policy", Path: PolicyFileName, Digest: digestOf(p.Bytes)}}
	for _, oc := range own {
		if oc.input != nil {
			inputs = append(inputs, oc.input)
		}
	}
	for _, inc := range incs {
		if inc.input != nil {
			inputs = append(inputs, inc.input)
		}
	}
	// Every cookbook must be at hand: fetch what is missing, check local
	// ones against the identifiers their locks record.
	names := make([]string, 0, len(lock.CookbookLocks))
	for n := range lock.CookbookLocks {
		names = append(names, n)
	}
	sort.Strings(names)
	ownNames := map[string]bool{}
	for _, oc := range own {
		ownNames[oc.spec.Name] = true
	}
	for _, n := range names {
		cl := lock.CookbookLocks[n]
		if ownNames[n] {
			continue
		}
		dir, err := w.store.cookbookDir(ctx, w.Dir, n, cl)
		if err == nil && cl.SourceOptions.Git == "" && cl.SourceOptions.URL == "" && cl.SourceOptions.Artifact == "" {
			var id string
			id, err = CookbookIdentifier(dir)
			if err == nil && id != cl.Identifier {
				err = fmt.Errorf("it changed since the including lock was made (identifier %s, now %s); run toque install where that policy lives, then here", short(cl.Identifier), short(id))
			}
			inputs = append(inputs, &Input{Kind: "cookbook", Name: n, Path: cl.SourceOptions.Path, Digest: id})
		}
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot get an included cookbook",
				Detail:   fmt.Sprintf("The cookbook %q (%s, from %s) is not usable: %s.", n, describeSource(cl.SourceOptions), cl.Origin, err),
			})
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	lock.Inputs = inputs
	lock.InputsDigest = inputsDigest(inputs)
	return lock, diags
}

// resolveCookbook reads a cookbook block's source.
func (w *Workspace) resolveCookbook(ctx context.Context, spec *CookbookSpec, prev *CookbookLock, move bool) (*ownCookbook, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	fail := func(summary, detail string, rng hcl.Range) (*ownCookbook, hcl.Diagnostics) {
		return nil, diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()})
	}
	oc := &ownCookbook{spec: spec}
	var dir string
	var src SourceOptions
	switch {
	case spec.Git != "":
		red := redactURL(spec.Git)
		commit := ""
		if prev != nil && !move && prev.SourceOptions.Git == red && prev.SourceOptions.Path == spec.Path &&
			prev.SourceOptions.Ref == spec.Ref && prev.SourceOptions.Artifact == "" && prev.SourceOptions.Sha != "" &&
			(spec.Sha == "" || strings.HasPrefix(prev.SourceOptions.Sha, spec.Sha)) {
			commit = prev.SourceOptions.Sha
		}
		var err error
		if commit == "" {
			commit, err = w.git.resolve(ctx, spec.Git, spec.Sha, spec.Ref)
			if err != nil {
				return fail("Cannot resolve a git cookbook", fmt.Sprintf("The cookbook %q: %s.", spec.Name, err), spec.DeclRange)
			}
		}
		var id string
		dir, id, err = w.store.fromGit(ctx, spec.Name, spec.Git, commit, spec.Path)
		if err != nil {
			return fail("Cannot fetch a git cookbook", fmt.Sprintf("The cookbook %q: %s.", spec.Name, err), spec.DeclRange)
		}
		src = SourceOptions{Git: red, Ref: spec.Ref, Sha: commit, Path: spec.Path}
		oc.lock = &CookbookLock{Identifier: id}
	default:
		dir = filepath.FromSlash(spec.Path)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(w.Dir, dir)
		}
		id, err := CookbookIdentifier(dir)
		if err != nil {
			return fail("Cannot read a cookbook", fmt.Sprintf("The cookbook %q: %s.", spec.Name, err), spec.rangeOf("path"))
		}
		src = SourceOptions{Path: filepath.ToSlash(spec.Path)}
		oc.lock = &CookbookLock{Identifier: id}
		oc.input = &Input{Kind: "cookbook", Name: spec.Name, Path: src.Path, Digest: id}
	}
	cb, d := config.ReadCookbook(dir, w.Parser)
	diags = append(diags, d...)
	if cb == nil || d.HasErrors() {
		return nil, diags
	}
	// A cookbook that does not parse would fail the first plan; it is
	// refused now, with every file's diagnostics.
	if d := checkCookbookSyntax(cb, w.Parser); d.HasErrors() {
		return nil, append(diags, d...)
	}
	if cb.Name != spec.Name {
		return fail("Cookbook name mismatch", fmt.Sprintf("The block names the cookbook %q, but its metadata.hcl says name = %q. Use the same name in both.", spec.Name, cb.Name), spec.DeclRange)
	}
	if spec.Version != "" && spec.Version != cb.Version {
		return fail("Cookbook version mismatch", fmt.Sprintf("policy.hcl asks for %s %s, but its source holds version %s.", spec.Name, spec.Version, cb.Version), spec.rangeOf("version"))
	}
	oc.lock.Version = cb.Version
	oc.lock.DottedDecimalIdentifier = dottedDecimal(oc.lock.Identifier)
	oc.lock.SourceOptions = src
	oc.lock.Source = describeSource(src)
	oc.lock.Origin = fmt.Sprintf("%s:%d", PolicyFileName, spec.DeclRange.Start.Line)
	return oc, diags
}

// fromGit materialises the cookbook at commit:sub of repo in the store and
// returns its directory and identifier. A small index maps (repo, commit,
// sub) to the identifier, so a warm cache runs no git command.
func (s *store) fromGit(ctx context.Context, name, repo, commit, sub string) (string, string, error) {
	key := sha256.Sum256([]byte(redactURL(repo) + "\x00" + commit + "\x00" + sub))
	idx := filepath.Join(s.dir, "index", hex.EncodeToString(key[:16]))
	if b, err := os.ReadFile(idx); err == nil {
		id := strings.TrimSpace(string(b))
		dest := s.pathOf(name, id)
		if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
			return dest, id, nil
		}
	}
	if err := os.MkdirAll(filepath.Join(s.dir, "index"), 0o755); err != nil {
		return "", "", fmt.Errorf("making the cookbook cache: %w", err)
	}
	tmp, err := os.MkdirTemp(s.dir, ".fetch-*")
	if err != nil {
		return "", "", fmt.Errorf("making the cookbook cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "cb")
	if err := s.git.exportTree(ctx, repo, commit, sub, work); err != nil {
		return "", "", err
	}
	id, err := CookbookIdentifier(work)
	if err != nil {
		return "", "", err
	}
	dest := s.pathOf(name, id)
	if fi, err := os.Stat(dest); err != nil || !fi.IsDir() {
		if err := os.Rename(work, dest); err != nil {
			return "", "", fmt.Errorf("storing the cookbook: %w", err)
		}
	}
	_ = WriteFileAtomic(idx, []byte(id+"\n"), 0o644)
	return dest, id, nil
}

// fetchInclude fetches the lock an include names, keeping prev's pin when
// the source did not change and move is false.
func (w *Workspace) fetchInclude(ctx context.Context, spec *IncludeSpec, prev *IncludedLock, move bool) (*included, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	inc := &included{spec: spec}
	fail := func(summary, detail string) (*included, hcl.Diagnostics) {
		return nil, diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: spec.DeclRange.Ptr()})
	}
	var ps *IncludeSource
	if prev != nil && !move {
		ps = &prev.SourceOptions
	}
	var b []byte
	switch spec.Kind {
	case "path":
		p := filepath.FromSlash(spec.Path)
		if !filepath.IsAbs(p) {
			p = filepath.Join(w.Dir, p)
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			cand := filepath.Join(p, spec.Name+".lock.json")
			if _, err := os.Stat(cand); err != nil {
				if _, err2 := os.Stat(filepath.Join(p, LockFileName)); err2 == nil {
					cand = filepath.Join(p, LockFileName)
				}
			}
			p = cand
		}
		var err error
		b, err = os.ReadFile(p)
		if err != nil {
			return fail("Cannot read an included lock", fmt.Sprintf("The include %q: %s. Give the path of a lock file, or of a directory holding %s.lock.json.", spec.Name, err, spec.Name))
		}
		rel := p
		if !filepath.IsAbs(spec.Path) {
			if r, err := filepath.Rel(w.Dir, p); err == nil {
				rel = r
			}
		}
		rel = filepath.ToSlash(rel)
		lockDir, err := filepath.Abs(filepath.Dir(p))
		if err != nil {
			return fail("Cannot read an included lock", fmt.Sprintf("The include %q: %s.", spec.Name, err))
		}
		root, inRepo := repositoryRoot(w.Dir)
		inc.loc = location{kind: "local", dir: path.Dir(rel), lockDir: lockDir, root: root, inRepo: inRepo}
		inc.source = IncludeSource{Path: filepath.ToSlash(spec.Path), SHA256: digestOf(b)}
		inc.input = &Input{Kind: "include", Name: spec.Name, Path: rel, Digest: digestOf(b)}
	case "git":
		red := redactURL(spec.Git)
		commit := ""
		if ps != nil && ps.Git == red && ps.Path == spec.Path && ps.Ref == spec.Ref && ps.Sha != "" &&
			(spec.Sha == "" || strings.HasPrefix(ps.Sha, spec.Sha)) {
			commit = ps.Sha
		}
		var err error
		if commit == "" {
			commit, err = w.git.resolve(ctx, spec.Git, spec.Sha, spec.Ref)
			if err != nil {
				return fail("Cannot resolve a git include", fmt.Sprintf("The include %q: %s.", spec.Name, err))
			}
		}
		b, err = w.git.readFile(ctx, spec.Git, commit, spec.Path)
		if err != nil {
			return fail("Cannot read an included lock", fmt.Sprintf("The include %q: %s.", spec.Name, err))
		}
		dir := path.Dir(spec.Path)
		if dir == "." {
			dir = ""
		}
		inc.loc = location{kind: "git", repo: red, commit: commit, treeDir: dir}
		inc.source = IncludeSource{Git: red, Path: spec.Path, Ref: spec.Ref, Sha: commit}
	case "server":
		server := strings.TrimRight(spec.Server, "/")
		rev := spec.PolicyRevisionID
		if rev == "" && ps != nil && ps.Server == redactURL(server) && ps.PolicyName == spec.PolicyName && ps.PolicyGroup == spec.PolicyGroup && ps.PolicyRevisionID != "" {
			rev = ps.PolicyRevisionID
		}
		var err error
		if rev != "" {
			b, err = w.serverRevision(ctx, server, spec.PolicyName, rev)
			if err != nil {
				return fail("Cannot fetch an included policy", fmt.Sprintf("The include %q: %s.", spec.Name, explainHTTP(err, fmt.Sprintf("policy %q at revision %s", spec.PolicyName, rev))))
			}
		} else {
			b, err = w.http.get(ctx, joinURL(server, "policy_groups", spec.PolicyGroup, "policies", spec.PolicyName))
			if err != nil {
				return fail("Cannot fetch an included policy", fmt.Sprintf("The include %q: %s.", spec.Name, explainHTTP(err, fmt.Sprintf("policy %q in policy group %q", spec.PolicyName, spec.PolicyGroup))))
			}
		}
		inc.loc = location{kind: "http", base: server}
		inc.source = IncludeSource{Server: redactURL(server), PolicyName: spec.PolicyName, PolicyGroup: spec.PolicyGroup}
	case "remote":
		var err error
		b, err = w.http.get(ctx, spec.Remote)
		if err != nil {
			return fail("Cannot fetch an included lock", fmt.Sprintf("The include %q: %s.", spec.Name, explainHTTP(err, "the lock file")))
		}
		d := digestOf(b)
		if ps != nil && ps.Remote == redactURL(spec.Remote) && ps.SHA256 != "" && ps.SHA256 != d {
			return fail("Included lock changed", fmt.Sprintf("The lock at %s is not the one the lock pinned (%s, now %s). Run toque update %s to take the new one.", redactURL(spec.Remote), ps.SHA256, d, spec.Name))
		}
		base := spec.Remote[:strings.LastIndex(spec.Remote, "/")]
		inc.loc = location{kind: "http", base: base}
		inc.source = IncludeSource{Remote: redactURL(spec.Remote), SHA256: d}
	}
	l, err := ParseLock(b)
	if err != nil {
		return fail("Invalid included lock", fmt.Sprintf("The include %q (from %s): %s.", spec.Name, inc.describe(), err))
	}
	if got := l.ComputeRevisionID(); got != l.RevisionID {
		return fail("Included lock does not match its revision id", fmt.Sprintf("The include %q (from %s) says revision %s, but its content gives %s: it was edited by hand or damaged. Regenerate it with toque install.", spec.Name, inc.describe(), short(l.RevisionID), short(got)))
	}
	if spec.Kind == "server" {
		if spec.PolicyRevisionID != "" && !strings.HasPrefix(l.RevisionID, spec.PolicyRevisionID) {
			return fail("Wrong revision", fmt.Sprintf("The server answered revision %s for policy %q, not %s.", short(l.RevisionID), spec.PolicyName, spec.PolicyRevisionID))
		}
		if l.Name != spec.PolicyName {
			return fail("Wrong policy", fmt.Sprintf("The server answered a lock of policy %q, not %q.", l.Name, spec.PolicyName))
		}
		inc.source.PolicyRevisionID = l.RevisionID
		w.cacheServerLock(l.RevisionID, b)
	}
	if spec.RevisionID != "" && !strings.HasPrefix(l.RevisionID, spec.RevisionID) {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unexpected included revision",
			Detail:   fmt.Sprintf("The include %q expects revision %s, but %s holds revision %s. Update revision_id, or point the include at the expected lock.", spec.Name, spec.RevisionID, inc.describe(), l.RevisionID),
			Subject:  spec.rangeOf("revision_id").Ptr(),
		})
	}
	inc.lock = l
	return inc, diags
}

func (i *included) describe() string {
	switch i.spec.Kind {
	case "path":
		return i.spec.Path
	case "git":
		return fmt.Sprintf("%s %s at %s", i.source.Git, i.spec.Path, short(i.source.Sha))
	case "server":
		return redactURL(i.spec.Server)
	}
	return redactURL(i.spec.Remote)
}

// serverRevision fetches a policy revision, from the cache when it was
// fetched before (a revision never changes).
func (w *Workspace) serverRevision(ctx context.Context, server, name, rev string) ([]byte, error) {
	cached := filepath.Join(w.opts.CacheDir, "locks", rev+".json")
	if len(rev) == 64 {
		if b, err := os.ReadFile(cached); err == nil {
			if l, err := ParseLock(b); err == nil && l.Name == name && l.ComputeRevisionID() == rev {
				return b, nil
			}
		}
	}
	return w.http.get(ctx, joinURL(server, "policies", name, "revisions", rev))
}

func (w *Workspace) cacheServerLock(rev string, b []byte) {
	if len(rev) != 64 || !hexRe.MatchString(rev) {
		return
	}
	dir := filepath.Join(w.opts.CacheDir, "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	_ = WriteFileAtomic(filepath.Join(dir, rev+".json"), b, 0o644)
}
