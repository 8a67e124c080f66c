package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// remoteFileType is the built-in "remote_file" type: a file whose content
// is downloaded (fetch.go). Its state is the file's sha256 (checksum), mode
// and owner; the plan records the digest of the bytes apply will write.
type remoteFileType struct {
	schema *resources.Schema
	// cacheDir returns the download cache's directory.
	cacheDir func(context.Context) string
	// net is what tests change in how downloads connect (netpolicy.go).
	net netHooks
}

// Defaults of remote_file.
const (
	defaultFetchTimeout = 60
	defaultMaxSize      = 1 << 30
)

// RemoteFileType returns the built-in "remote_file" type, caching
// downloads in CacheDir.
func RemoteFileType() resources.Type { return newRemoteFileType(CacheDir) }

func newRemoteFileType(cacheDir func(context.Context) string) *remoteFileType {
	return &remoteFileType{cacheDir: cacheDir, schema: &resources.Schema{
		Name:        "remote_file",
		Description: "Manages a file whose content is downloaded from a URL.",
		Properties: []*resources.Property{
			PathProperty("path", "Absolute path of the file; defaults to the block label."),
			{Name: "content", Type: cty.String, Content: true, Group: "content",
				Validate: func(cty.Value) error {
					return errors.New("remote_file takes its content from source; set source (and checksum), or use a file resource")
				},
				Description: "Read only: the downloaded text, which the plan shows as a diff. Set source instead."},
			{Name: "checksum", Type: cty.String, Group: "content", Normalize: props.NormalizeChecksum, LoadInput: true,
				Description: "The sha256 of the content, 64 hex digits: a file that has it is not downloaded again, and other bytes are refused. Unset: the plan downloads the source and records its sha256."},
			ModeProperty("0644", `Permission bits: an octal string ("0644") or a symbolic mode ("go-w"); unset leaves an existing file's mode as it is.`),
			OwnerProperty("Owning user, by name or numeric id; unset leaves it as it is."),
			GroupProperty("Owning group, by name or numeric id; unset leaves it as it is."),
			{Name: "source", Type: cty.DynamicPseudoType, NonState: true, Required: true, Normalize: normalizeSources,
				SensitiveWhen: sourcesHaveCredentials,
				Description:   "The URL (http or https) to download, or a list of URLs tried in order. A URL carrying a user or password is hidden as sensitive in every output."},
			{Name: "headers", Type: cty.Map(cty.String), NonState: true, Sensitive: true, Validate: validateHeaders,
				Description: "HTTP request headers (Authorization…); always hidden as sensitive."},
			{Name: "use_etag", Type: cty.Bool, NonState: true, Default: cty.True,
				Description: "Make the download conditional on the ETag the URL served last (If-None-Match)."},
			{Name: "use_last_modified", Type: cty.Bool, NonState: true, Default: cty.True,
				Description: "Make the download conditional on the Last-Modified the URL served last (If-Modified-Since)."},
			{Name: "timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultFetchTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds one attempt may take, body included."},
			{Name: "retries", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(0), Validate: props.NonNegativeInt("retries"),
				Description: "How many more attempts a transient failure (network, 5xx, a cut body) gets, per URL."},
			{Name: "max_size", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultMaxSize), Validate: props.PositiveInt("max_size"),
				Description: "The largest download accepted, in bytes (1 GiB by default)."},
			{Name: "ca_file", Type: cty.String, NonState: true, Validate: props.ValidateAbsPath,
				Description: "A PEM file of CA certificates trusted besides the system's. TLS is always verified."},
			{Name: "allow_internal", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Let the download connect to internal addresses (loopback, link-local, private, shared, multicast): for an internal mirror. A redirect from an address on the internet to an internal one is refused even then."},
			{Name: "backup", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(5), Validate: props.NonNegativeInt("backup"),
				Description: "How many backups of replaced or deleted content to keep in the state directory; 0 keeps none."},
		},
		Actions:       []string{"create", "create_if_missing", "delete"},
		DefaultAction: "create",
	}}
}

func (t *remoteFileType) Schema() *resources.Schema { return t.schema }

// normalizeSources turns a URL or a list of URLs into a list, each an
// http or https URL with a host.
func normalizeSources(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return v, nil
	}
	var xs []string
	switch {
	case v.Type() == cty.String:
		xs = []string{v.AsString()}
	case v.Type().IsListType() || v.Type().IsTupleType():
		var err error
		if xs, err = props.ToStrings(v, "source"); err != nil {
			return cty.NilVal, err
		}
	default:
		return cty.NilVal, fmt.Errorf("source must be a URL or a list of URLs, not %s", v.Type().FriendlyName())
	}
	if len(xs) == 0 {
		return cty.NilVal, errors.New("source must name at least one URL")
	}
	for _, x := range xs {
		if err := props.ValidateHTTPURL(x); err != nil {
			return cty.NilVal, fmt.Errorf("source: %w", err)
		}
	}
	return props.StringListVal(xs), nil
}

// sourcesHaveCredentials is source's SensitiveWhen: a URL with a user or
// password.
func sourcesHaveCredentials(v cty.Value) bool {
	if v.Type() == cty.String {
		return props.HasCredentials(v.AsString())
	}
	if !v.CanIterateElements() {
		return false
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if !e.IsNull() && e.Type() == cty.String && props.HasCredentials(e.AsString()) {
			return true
		}
	}
	return false
}

func validateHeaders(v cty.Value) error {
	if v.IsNull() || !v.IsWhollyKnown() {
		return nil
	}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		name := k.AsString()
		if name == "" || strings.ContainsAny(name, " :\r\n\t") {
			return fmt.Errorf("headers: %q is not a header name", name)
		}
		if !e.IsNull() && strings.ContainsAny(e.AsString(), "\r\n") {
			return fmt.Errorf("headers: the value of %s holds a line break", name)
		}
	}
	return nil
}

// fetchedSource is what Load downloaded (or found cached) for Plan.
type fetchedSource struct {
	sha  string
	size int64
	// from is the source that served it; final is the URL its redirects
	// ended at, "" without redirects.
	from, final string
	// text is the content when it is text Plan may diff (UTF-8 that a
	// cty string holds byte for byte, at most 1 MiB); binary is set
	// otherwise.
	text   string
	binary bool
	// private says why the downloaded content must not be shown.
	private string
}

// fetchOptionsOf is r's download, wanting sha when set.
func fetchOptionsOf(r *resources.Resource, want string) fetchOptions {
	o := fetchOptions{
		urls:            props.StringList(r.Get("source")),
		useETag:         r.Bool("use_etag"),
		useLastModified: r.Bool("use_last_modified"),
		timeout:         props.Seconds(r.Get("timeout")),
		retries:         r.Int("retries"),
		maxSize:         int64(r.Int("max_size")),
		caFile:          r.String("ca_file"),
		want:            want,
		allowInternal:   r.Bool("allow_internal"),
	}
	if h := r.Get("headers"); !h.IsNull() && h.IsWhollyKnown() {
		o.headers = map[string]string{}
		for it := h.ElementIterator(); it.Next(); {
			k, v := it.Element()
			if !v.IsNull() {
				o.headers[k.AsString()] = v.AsString()
			}
		}
	}
	return o
}

// Load reads the file at path (its sha256, mode, owner, and its text when
// small enough to diff), then, when the action may write it, the source:
// with checksum set and a file that has it, nothing is downloaded; with
// checksum set otherwise, the bytes come from the cache or a download
// that must match it; without checksum, a (conditional) download decides,
// and its sha256 is part of the reading (Extra source_sha256), so bytes
// that change after the plan make it stale.
func (t *remoteFileType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	path := r.String("path")
	if err := props.CtxErr(ctx, "reading "+path); err != nil {
		return nil, err
	}
	st, err := loadLocalFile(path)
	if err != nil {
		return nil, err
	}
	action := r.EffectiveAction()
	if action == "delete" || action == "nothing" || (action == "create_if_missing" && st.Exists) {
		return st, nil
	}
	want := r.String("checksum")
	if want != "" && st.Values["checksum"] != cty.NilVal && st.Values["checksum"].AsString() == want {
		return st, nil // the file has it: no network
	}
	f, err := openCache(t.cacheDir(ctx))
	if err != nil {
		return nil, err
	}
	f.net = t.net
	res, err := f.fetch(ctx, fetchOptionsOf(r, want))
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", path, err)
	}
	fs := &fetchedSource{sha: res.sha, size: res.size, from: res.from, final: res.final}
	if props.HasCredentials(strings.Join(props.StringList(r.Get("source")), " ")) || r.IsSet("headers") {
		fs.private = "downloaded with credentials (in source or headers): the content is not shown"
	}
	if res.size <= maxDiffBytes {
		b, err := readBlob(f, res.sha)
		if err != nil {
			return nil, err
		}
		if text := string(b); utf8.ValidString(text) && cty.StringVal(text).AsString() == text && !strings.ContainsRune(text, 0) {
			fs.text = text
		} else {
			fs.binary = true
		}
	} else {
		fs.binary = true
	}
	fsw(st).fetched = fs
	if fs.private != "" {
		st.Private = withPrivate(st.Private, "content", fs.private)
	}
	if want == "" {
		if st.Extra == nil {
			st.Extra = map[string]string{}
		}
		st.Extra["source_sha256"] = res.sha
		st.Extra["source_size"] = fmt.Sprint(res.size)
	}
	return st, nil
}

// maxDiffBytes is the largest content shown as a diff (the planner's
// MaxDiffSize).
const maxDiffBytes = 1 << 20

// readBlob reads the cached bytes of sha, checking them.
func readBlob(f *fetcher, sha string) ([]byte, error) {
	b, err := os.ReadFile(f.blob(sha))
	if err != nil {
		return nil, fmt.Errorf("reading the download cache: %w", err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != sha {
		os.Remove(f.blob(sha))
		return nil, fmt.Errorf("the download cache's copy of sha256 %s is damaged; it was removed, plan again", sha)
	}
	return b, nil
}

// loadLocalFile reads the file at path as the file type does (through held
// directories, a link not followed), but keeps its sha256 rather than its
// content, and its text only when it is small enough to diff.
func loadLocalFile(path string) (*resources.State, error) {
	f, err := lookupPath(path, false)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.close()
	st := stateOf(f)
	if !f.exists || f.link != "" || f.st.Mode&unix.S_IFMT != unix.S_IFREG {
		return st, nil
	}
	file, fst, err := openAt(f.dir, f.name, unix.O_RDONLY, unix.S_IFREG, idOf(&f.st))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer file.Close()
	h := sha256.New()
	var head strings.Builder
	if _, err := io.Copy(io.MultiWriter(h, &limitedBuilder{b: &head, max: maxDiffBytes + 1}), file); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	si := statInfoOf(&fst)
	setOwnerValues(st.Values, si, true)
	fsw(st).obj = idOf(&fst)
	st.Values["checksum"] = cty.StringVal(hex.EncodeToString(h.Sum(nil)))
	if text := head.String(); len(text) <= maxDiffBytes && utf8.ValidString(text) && cty.StringVal(text).AsString() == text {
		st.Values["content"] = cty.StringVal(text)
		if why := privateContent(f, si); why != "" {
			st.Private = map[string]string{"content": why}
		}
	}
	if why := hardLinkRisk(f, si); why != "" {
		st.Extra["refused"] = why
	}
	return st, nil
}

// limitedBuilder keeps the first max bytes written to it.
type limitedBuilder struct {
	b   *strings.Builder
	max int
}

func (l *limitedBuilder) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Plan decides what the action does; it never does I/O.
func (t *remoteFileType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	step, err := planWithMode(desired, current, 0o644, false, func(d *resources.Resource) (*resources.Step, error) { return t.plan(action, d, current) })
	return withPathNeeds(step, err, current, desired.String("path"), false, false)
}

func (t *remoteFileType) plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	path := desired.String("path")
	if current.Exists && current.Extra["kind"] != "file" {
		if action == "delete" && current.Extra["kind"] == "symlink" {
			return &resources.Step{Kind: resources.Delete, Reason: fmt.Sprintf("exists as a symbolic link to %s; delete removes the link, not what it points to", current.Extra["link_target"])}, nil
		}
		return nil, notAFileError(path, current)
	}
	if why := current.Extra["refused"]; why != "" && current.Exists && action != "delete" {
		return nil, errors.New(why)
	}
	switch action {
	case "delete":
		if !current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: "does not exist"}, nil
		}
		return &resources.Step{Kind: resources.Delete, Reason: "exists; delete removes it"}, nil
	case "create_if_missing":
		if current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: "exists; create_if_missing leaves it as it is"}, nil
		}
	}
	return t.convergeStep(desired, current)
}

// convergeStep is the create step: the content when the file's sha256 is
// not the target's, then mode and ownership as Diff says.
func (t *remoteFileType) convergeStep(desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	s := t.schema
	target := desired.String("checksum")
	if target == "" {
		target = current.Extra["source_sha256"]
	}
	if target == "" {
		return nil, errors.New("the source was not read (a bug in remote_file)")
	}
	var changes []resources.Change
	have := current.Values["checksum"]
	if !current.Exists || have == cty.NilVal || have.AsString() != target {
		changes = append(changes, t.contentChanges(current, target)...)
	}
	if !current.Exists {
		for _, c := range resources.CreateDiff(desired) {
			if c.Property != "checksum" {
				changes = append(changes, c)
			}
		}
		return &resources.Step{Kind: resources.Create, Reason: "does not exist", Changes: changes, Groups: s.Groups(changes)}, nil
	}
	for _, c := range resources.Diff(desired, current) {
		if c.Property != "checksum" {
			changes = append(changes, c)
		}
	}
	if len(changes) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "already in the desired state: its sha256 is the source's"}, nil
	}
	var names []string
	for _, c := range changes {
		if c.Property != "content" {
			names = append(names, c.Property)
		}
	}
	return &resources.Step{Kind: resources.Update, Reason: resources.Differ(names), Changes: changes, Groups: s.Groups(changes)}, nil
}

// contentChanges are the changes of writing the bytes of sha: the
// checksum, and the content too when it is text (for the diff).
func (t *remoteFileType) contentChanges(current *resources.State, sha string) []resources.Change {
	before := cty.NilVal
	if v, ok := current.Values["checksum"]; ok {
		before = v
	}
	sum := resources.Change{Property: "checksum", Before: before, After: cty.StringVal(sha)}
	fs := fsr(current).fetched
	if fs == nil {
		return []resources.Change{sum}
	}
	where := ""
	switch {
	case fs.final != "":
		where = "from " + fs.final + " (redirected from " + fs.from + "), "
	case fs.from != "":
		where = "from " + fs.from + ", "
	}
	switch {
	case fs.private != "":
		// Downloaded with credentials: what came is as secret as they are.
		sum.Note = fmt.Sprintf("%s%s, %s", where, fs.private, humanBytes(fs.size))
		return []resources.Change{sum}
	case fs.binary:
		sum.Note = fmt.Sprintf("%sbinary content, %s: no diff", where, humanBytes(fs.size))
		return []resources.Change{sum}
	}
	sum.Note = strings.TrimSuffix(where, ", ")
	content := resources.Change{Property: "content", Before: cty.NilVal, After: cty.StringVal(fs.text)}
	if v, ok := current.Values["content"]; ok {
		content.Before = v
	}
	return []resources.Change{content, sum}
}

func withPrivate(m map[string]string, k, why string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	if m[k] == "" {
		m[k] = why
	}
	return m
}

func humanBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Steps write the bytes the step's checksum names — from the cache,
// checked again as they are copied, or downloaded again and refused if
// they differ — atomically, then set mode and ownership; a delete is the
// file's.
func (t *remoteFileType) Steps() resources.Steps {
	return resources.Steps{Create: t.write, Update: t.write, Delete: (&fileType{}).delete}
}

func (t *remoteFileType) write(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	path := desired.String("path")
	var blob *os.File
	var sha string
	if c := step.Change("checksum"); c != nil {
		sha = c.After.AsString()
		f, err := openCache(t.cacheDir(ctx))
		if err != nil {
			return err
		}
		f.logger = env.Log()
		f.net = t.net
		if _, ok := f.cached(sha); !ok {
			// The cache lost it: download again, refusing other bytes.
			if _, err := f.fetch(ctx, fetchOptionsOf(desired, sha)); err != nil {
				return fmt.Errorf("%s: the bytes the plan recorded (sha256 %s) are no longer cached and could not be downloaded again: %w; the file is unchanged", path, sha, err)
			}
		}
		if blob, err = os.Open(f.blob(sha)); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer blob.Close()
	}
	if step.Kind == resources.Create {
		return t.create(desired, path, blob, sha)
	}
	return t.update(env, desired, current, path, step, blob, sha)
}

func (t *remoteFileType) create(desired *resources.Resource, path string, blob *os.File, sha string) error {
	mode, own, err := newObjectAttrs(desired, path, 0o644)
	if err != nil {
		return err
	}
	if blob == nil {
		return fmt.Errorf("creating %s: no content was planned", path)
	}
	d, name, err := holdParent(path)
	if err != nil {
		return parentError(path, "create it with a directory resource", err)
	}
	defer d.close()
	nf, err := writeVerified(d, name, blob, sha, mode, own, true)
	if err != nil {
		return err
	}
	nf.Close()
	return nil
}

func (t *remoteFileType) update(env *resources.Env, desired *resources.Resource, current *resources.State, path string, step *resources.Step, blob *os.File, sha string) error {
	f, err := lookupPath(path, false)
	if err != nil {
		return fmt.Errorf("updating %s: %w", path, err)
	}
	defer f.close()
	if !f.exists || f.link != "" {
		return fmt.Errorf("updating %s: it is gone or was replaced: %w", path, ErrChanged)
	}
	u, err := openToUpdate(f, desired, current, path)
	if err != nil {
		return err
	}
	defer u.file.Close()
	file, live, own, mode, modeSet := u.file, u.live, u.own, u.mode, u.modeSet
	if step.HasGroup("content") && blob != nil {
		if _, err := backupFrom(env, path, file, live.mode, desired.Int("backup"), time.Now()); err != nil {
			return err
		}
		m, o := replacementAttrs(live, mode, modeSet, own)
		nf, err := writeVerified(f.dir, f.name, blob, sha, m, o, false)
		if err != nil {
			return err
		}
		nf.Close()
		return nil
	}
	return convergeModeOwner(file, step, mode, modeSet, own)
}

// writeVerified copies blob into a temporary file in d, checking that the
// bytes hash to sha, sets owner and mode, syncs, and renames it to name
// (only if nothing is there, for a create). Bytes that do not hash to sha
// are refused and the file at name is left as it was.
func writeVerified(d *heldDir, name string, blob *os.File, sha string, mode uint32, own ownership, create bool) (_ *os.File, err error) {
	path := d.join(name)
	if _, err := blob.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	tmp, tmpName, err := createTemp(d, name)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			unix.Unlinkat(d.fd, tmpName, 0)
		}
	}()
	h := sha256.New()
	if _, err = io.Copy(io.MultiWriter(tmp, h), blob); err != nil {
		return nil, fmt.Errorf("writing %s (the file is unchanged): %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		err = fmt.Errorf("writing %s: the cached bytes hash to %s, not the planned %s; refused, the file is unchanged", path, got, sha)
		return nil, err
	}
	if err = chownFile(tmp, own); err == nil {
		if err = chmodFile(tmp, mode); err == nil {
			err = tmp.Sync()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s (the file is unchanged): %w", path, err)
	}
	if err = renameAt(d, tmpName, name, create); err != nil {
		if create && errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("creating %s: something appeared there: %w", path, ErrChanged)
			return nil, err
		}
		return nil, fmt.Errorf("replacing %s: %w", path, err)
	}
	if err = d.sync(); err != nil {
		return nil, err
	}
	return tmp, nil
}
