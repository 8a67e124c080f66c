package packages

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// debCache is toque's package cache: the .debs a plan installs, by
// sha256, in the download cache's blob store (DIR/sha256/HEX, shared with
// remote_file: bytes are bytes), and each archive's manifest in
// DIR/debs/HEX.json. Never apt's own cache (/var/cache/apt/archives): apt
// downloads into a directory of toque's (apt-get download), and installs
// from a directory toque fills for that one call (stage).
type debCache struct{ dir string }

// openDebCache checks the download cache dir as remote_file does
// (files.OpenDownloadCache: only root or toque's user may change it) and
// makes its debs directory.
func openDebCache(dir string) (*debCache, error) {
	if err := files.OpenDownloadCache(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "debs"), 0o700); err != nil {
		return nil, fmt.Errorf("package cache: %w", err)
	}
	return &debCache{dir: dir}, nil
}

func (c *debCache) blob(sha string) string { return filepath.Join(c.dir, "sha256", sha) }

func (c *debCache) manifestPath(sha string) string {
	return filepath.Join(c.dir, "debs", sha+".json")
}

// hasBlob reports whether the cache holds a regular file for sha (its
// content is checked when it is used: stage).
func (c *debCache) hasBlob(sha string) bool {
	var st unix.Stat_t
	return unix.Lstat(c.blob(sha), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

// manifest returns the cached manifest of the archive sha, nil when none
// of this build's format is cached.
func (c *debCache) manifest(sha string) *debManifest {
	b, err := os.ReadFile(c.manifestPath(sha))
	if err != nil {
		return nil
	}
	m := &debManifest{}
	if json.Unmarshal(b, m) != nil || m.Format != debManifestFormat || m.SHA256 != sha {
		return nil
	}
	return m
}

// saveManifest writes m, atomically (a manifest that cannot be written is
// read again from the archive next time: no error).
func (c *debCache) saveManifest(m *debManifest) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Join(c.dir, "debs"), ".manifest-*")
	if err != nil {
		return
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil || f.Close() != nil {
		f.Close()
		return
	}
	os.Rename(f.Name(), c.manifestPath(m.SHA256))
}

// adopt moves the downloaded file tmp into the blob store as sha, after
// checking its digest.
func (c *debCache) adopt(tmp, sha string) error {
	got, err := fileSHA256(tmp)
	if err != nil {
		return err
	}
	if got != sha {
		return fmt.Errorf("its bytes have sha256 %s, not the %s the repository's index gives", got, sha)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.blob(sha))
}

// fileSHA256 is the hex sha256 of the file at p.
func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// origin is what the cache keeps of where a .deb came from
// (DIR/debs/origin-KEY.json, KEY the sha256 of its name, version and
// architecture).
type origin struct {
	URL      string `json:"url"`
	Filename string `json:"filename"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
}

func (c *debCache) originPath(d *debRef) string {
	h := sha256.Sum256([]byte(d.Name + "\x00" + d.Version + "\x00" + d.Arch))
	return filepath.Join(c.dir, "debs", "origin-"+hex.EncodeToString(h[:])+".json")
}

// known fills in d from what the cache knows of it, when the cache holds
// its archive and manifest too; false when it does not.
func (c *debCache) known(d *debRef) bool {
	b, err := os.ReadFile(c.originPath(d))
	if err != nil {
		return false
	}
	var o origin
	if json.Unmarshal(b, &o) != nil || o.SHA256 == "" || o.Filename == "" || !c.hasBlob(o.SHA256) || c.manifest(o.SHA256) == nil {
		return false
	}
	d.URL, d.Filename, d.Size, d.SHA256 = o.URL, o.Filename, o.Size, o.SHA256
	return true
}

// remember records where d came from (a failure to is not an error: the
// next plan asks apt again).
func (c *debCache) remember(d *debRef) {
	if d.File != "" {
		return
	}
	b, err := json.Marshal(origin{URL: d.URL, Filename: d.Filename, Size: d.Size, SHA256: d.SHA256})
	if err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Join(c.dir, "debs"), ".origin-*")
	if err != nil {
		return
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil || f.Close() != nil {
		f.Close()
		return
	}
	os.Rename(f.Name(), c.originPath(d))
}

// debRef is one .deb an install would unpack: the package's name, version
// and architecture as apt names them, where apt gets it, and the sha256
// the repository's signed index gives it, which the plan records.
type debRef struct {
	Name, Version, Arch string
	// URL is where apt fetches it (query strings and passwords removed
	// for messages); Filename is its name in an archives directory.
	URL, Filename string
	Size          int64
	SHA256        string
	// File is a local .deb the recipe names (source), installed by path.
	File     string
	Manifest *debManifest
	// repo is the repository it comes from, where the package manager
	// says (dnf's transaction table).
	repo string
}

// label names the .deb for reviewers: "nginx-common 1.22.1-9+deb12u9".
func (d *debRef) label() string { return d.Name + " " + d.Version }

// fact is the plan's record of the .deb (State.Extra "deb:NAME"): its
// version, architecture and sha256. A repository that serves other bytes
// under the same version makes the plan stale.
func (d *debRef) fact() string { return d.Version + " " + d.Arch + " sha256:" + d.SHA256 }

// installsStaged: apt-get install takes the staged .debs (--no-download).
func (p *aptProvider) installsStaged() bool { return true }

// printURI is one line of apt-get --print-uris: 'URL' FILE SIZE HASH.
var printURI = regexp.MustCompile(`^'([^']+)' (\S+) (\d+) (\S+)$`)

// Archives returns the .debs of the packages changes install (those with
// a version to go to), in changes' order: where each comes from and its
// sha256, from the repositories' indexes (apt-get download
// --print-uris, one process for all), each fetched into cache unless it
// is there already (apt-get download, with apt's signature and hash
// checks, into a directory of toque's: one process for all that are
// missing), with its manifest (read once per archive, then kept).
// Nothing is ever written to apt's own cache. A .deb apt cannot fetch is
// an error naming the package, the URL and apt's reason.
func (p *aptProvider) Archives(ctx context.Context, cache *debCache, changes []PackageChange) ([]*debRef, error) {
	var refs []*debRef
	var want []string
	for _, c := range changes {
		if c.To == "" {
			continue
		}
		d := &debRef{Name: c.Name, Version: c.To, Arch: c.Arch}
		refs = append(refs, d)
		want = append(want, aptSpec(d))
	}
	if len(refs) == 0 {
		return nil, nil
	}
	// What a warm cache knows already: where each .deb came from and its
	// sha256, by package, version and architecture (a repository does not
	// publish two .debs under one version; should one, the plan installs
	// the bytes it read, which staging checks, never others).
	var ask []string
	byFile := map[string]*debRef{}
	for i, d := range refs {
		if cache.known(d) {
			continue
		}
		ask = append(ask, want[i])
		byFile[archiveName(d)] = d
	}
	if len(ask) == 0 {
		return refs, p.manifests(ctx, cache, refs)
	}
	argv := append([]string{"apt-get", "download", "--print-uris", "-q", "--"}, ask...)
	res, err := p.read(ctx, argv)
	if err != nil {
		return nil, fmt.Errorf("asking apt where the packages come from: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	for sc.Scan() {
		m := printURI.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		d := byFile[m[2]]
		if d == nil {
			continue
		}
		d.URL, d.Filename = m[1], m[2]
		d.Size, _ = strconv.ParseInt(m[3], 10, 64)
		if h, ok := strings.CutPrefix(m[4], "SHA256:"); ok {
			d.SHA256 = strings.ToLower(h)
		}
	}
	var missing []*debRef
	for _, d := range refs {
		if byFile[archiveName(d)] == nil {
			continue // known
		}
		switch {
		case d.URL == "":
			return nil, fmt.Errorf("apt gave no download for %s (apt-get download --print-uris listed none): toque installs a package only from a .deb it has read", d.label())
		case d.SHA256 == "":
			return nil, fmt.Errorf("the repository's index gives no sha256 for %s (%s): toque pins every .deb it installs by its sha256", d.label(), props.RedactURL(d.URL))
		}
		if !cache.hasBlob(d.SHA256) {
			missing = append(missing, d)
		}
	}
	if err := p.download(ctx, cache, missing); err != nil {
		return nil, err
	}
	return refs, p.manifests(ctx, cache, refs)
}

// manifests reads the manifest of each of refs (manifestOf) and records
// what the cache now knows of where each came from.
func (p *aptProvider) manifests(ctx context.Context, cache *debCache, refs []*debRef) error {
	for _, d := range refs {
		if err := p.manifestOf(ctx, cache, d); err != nil {
			return err
		}
		cache.remember(d)
	}
	return nil
}

// aptSpec names d for apt: NAME:ARCH=VERSION.
func aptSpec(d *debRef) string {
	name := d.Name
	if !strings.Contains(name, ":") && d.Arch != "" {
		name += ":" + d.Arch
	}
	return name + "=" + d.Version
}

// archiveName is apt's file name of d in an archives directory:
// NAME_VERSION_ARCH.deb, the version's epoch colon written %3a.
func archiveName(d *debRef) string {
	name, _, _ := strings.Cut(d.Name, ":")
	return name + "_" + strings.ReplaceAll(d.Version, ":", "%3a") + "_" + d.Arch + ".deb"
}

// download fetches ds with apt-get download into a fresh directory of the
// cache, then moves each, checked against its sha256, into the blob
// store.
func (p *aptProvider) download(ctx context.Context, cache *debCache, ds []*debRef) error {
	if len(ds) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(cache.dir, "debs"), "download-")
	if err != nil {
		return fmt.Errorf("package cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	argv := []string{"apt-get", "download", "-q", "--"}
	for _, d := range ds {
		argv = append(argv, aptSpec(d))
	}
	s := p.spec(argv, p.readTimeout, nil)
	s.Dir = tmp
	res, err := shellexec.Run(ctx, s)
	if err != nil {
		return downloadError(ds, argv, res, err)
	}
	for _, d := range ds {
		if err := cache.adopt(filepath.Join(tmp, d.Filename), d.SHA256); err != nil {
			return fmt.Errorf("fetching %s from %s into toque's package cache: %w", d.label(), props.RedactURL(d.URL), err)
		}
	}
	return nil
}

// failedFetch is apt's "E: Failed to fetch URL  REASON".
var failedFetch = regexp.MustCompile(`(?m)^E: Failed to fetch (\S+)\s+(.*)$`)

// downloadError words apt-get download failing: per package it names,
// the URL and apt's reason; else apt's own error lines.
func downloadError(ds []*debRef, argv []string, res *shellexec.Result, err error) error {
	if res == nil {
		return fmt.Errorf("fetching %s: %w", refsWord(ds), err)
	}
	out := res.Stdout + "\n" + res.Stderr
	var msgs []string
	for _, m := range failedFetch.FindAllStringSubmatch(out, -1) {
		what := "a package"
		for _, d := range ds {
			if d.URL == m[1] {
				what = d.label()
			}
		}
		msgs = append(msgs, fmt.Sprintf("%s from %s: %s", what, props.RedactURL(m[1]), strings.TrimSpace(m[2])))
	}
	if len(msgs) == 0 {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "E: ") {
				msgs = append(msgs, strings.TrimPrefix(l, "E: "))
			}
		}
	}
	if len(msgs) == 0 {
		return fmt.Errorf("fetching %s into toque's package cache: %w", refsWord(ds), commandError(argv, res, err))
	}
	sort.Strings(msgs)
	var urls []string
	for _, d := range ds {
		urls = append(urls, props.RedactURL(d.URL))
	}
	return fmt.Errorf("apt could not fetch %s (%s) into toque's package cache: %s. toque plans a package from the .deb it will install and never guesses; nothing was changed",
		refsWord(ds), strings.Join(urls, ", "), strings.Join(msgs, "; "))
}

func refsWord(ds []*debRef) string {
	var ws []string
	for _, d := range ds {
		ws = append(ws, d.label())
	}
	return strings.Join(ws, ", ")
}

// manifestOf sets d's manifest: the cache's, or read from the archive and
// kept.
func (p *aptProvider) manifestOf(ctx context.Context, cache *debCache, d *debRef) error {
	if m := cache.manifest(d.SHA256); m != nil {
		d.Manifest = m
		return nil
	}
	file := d.File
	if file == "" {
		file = cache.blob(d.SHA256)
	}
	m, err := p.readManifest(ctx, file, d.SHA256)
	if err != nil {
		return fmt.Errorf("%s: %w", d.label(), err)
	}
	if m.Package != strings.SplitN(d.Name, ":", 2)[0] || m.Version != d.Version {
		return fmt.Errorf("the archive of %s (%s) holds %s: the repository's index and its .deb disagree", d.label(), props.RedactURL(d.URL), m.label())
	}
	cache.saveManifest(m)
	d.Manifest = m
	return nil
}

// memberContent reads the content of the regular file at want in d's
// data member (dpkg-deb --fsys-tarfile, stopped once it is read), at most
// maxKeptContent bytes, checked against the sha256 d's manifest gives it.
func (p *aptProvider) memberContent(ctx context.Context, cache *debCache, d *debRef, want string) ([]byte, error) {
	if d.Manifest == nil {
		return nil, fmt.Errorf("%s: no manifest (a bug in toque)", d.label())
	}
	var entry *debEntry
	for i := range d.Manifest.Entries {
		if e := &d.Manifest.Entries[i]; e.Path == want && e.Kind == "file" {
			entry = e
		}
	}
	if entry == nil {
		return nil, fmt.Errorf("%s does not ship the file %s", d.label(), want)
	}
	if entry.Size > maxKeptContent {
		return nil, fmt.Errorf("%s ships %s with %d bytes, more than a plan shows (%d)", d.label(), want, entry.Size, maxKeptContent)
	}
	file := d.File
	if file == "" {
		file = cache.blob(d.SHA256)
	}
	var out []byte
	errRead := errors.New("read")
	err := p.eachMemberEntry(ctx, file, "--fsys-tarfile", func(h *tar.Header, r io.Reader) error {
		if path.Clean("/"+h.Name) != want || (h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA) {
			return nil
		}
		b, err := io.ReadAll(io.LimitReader(r, maxKeptContent+1))
		if err != nil {
			return err
		}
		out = b
		return errRead
	})
	switch {
	case errors.Is(err, errRead):
	case err != nil:
		return nil, fmt.Errorf("reading %s from %s: %w", want, d.label(), err)
	default:
		return nil, fmt.Errorf("%s's archive holds no file %s, which its manifest lists", d.label(), want)
	}
	if sum := sha256.Sum256(out); hex.EncodeToString(sum[:]) != entry.SHA256 {
		return nil, fmt.Errorf("%s in %s's archive is not the file its manifest read (sha256 differs): the cache was changed", want, d.label())
	}
	return out, nil
}

// stage fills a fresh directory of the cache with ds, under apt's names,
// as an archives directory (Dir::Cache::archives) for one apt-get
// install: each a hard link of (or, across file systems, a copy from)
// the blob store, whose content is checked against its sha256 as it is
// staged. It returns the directory and a function that removes it.
func (c *debCache) stage(ds []*debRef) (string, func(), error) {
	dir, err := os.MkdirTemp(filepath.Join(c.dir, "debs"), "stage-")
	if err != nil {
		return "", nil, fmt.Errorf("package cache: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := os.Mkdir(filepath.Join(dir, "partial"), 0o700); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("package cache: %w", err)
	}
	for _, d := range ds {
		dst, src := filepath.Join(dir, d.Filename), c.blob(d.SHA256)
		if d.File != "" {
			src = d.File // a local source file: copied, checked below
		}
		if d.File != "" || os.Link(src, dst) != nil {
			if err := copyFile(src, dst); err != nil {
				cleanup()
				return "", nil, fmt.Errorf("staging %s from toque's package cache: %w", d.label(), err)
			}
		}
		got, err := fileSHA256(dst)
		if err == nil && got != d.SHA256 {
			err = fmt.Errorf("the cached file has sha256 %s, not the plan's %s (it was changed in the cache)", got, d.SHA256)
		}
		if err != nil {
			cleanup()
			return "", nil, fmt.Errorf("staging %s: %w", d.label(), err)
		}
	}
	return dir, cleanup, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// errNoCache is a package type with no download cache (a test's).
var errNoCache = errors.New("toque has no package cache here")
