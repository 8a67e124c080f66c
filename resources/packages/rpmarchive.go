package packages

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/toquehq/toque/internal/shellexec"
)

// This file is the dnf provider's side of "what a package brings" (the
// debArchiver seam, debplan.go): the exact .rpm files an install would
// unpack, fetched into toque's package cache at plan (dnf --downloadonly,
// one process for all that are not cached yet), each read once — its
// header with rpm -qp (files, modes, owners, configuration files,
// Provides, scriptlets) and its payload with rpm2cpio (the content of its
// configuration and unit files) — and kept as a manifest beside it, so
// that later resources are planned against what the package ships.
//
// The fetch changes nothing dnf or rpm keep: the files go to a directory
// of toque's cache (--destdir), never dnf's; only the repositories the
// simulation named are enabled, so dnf loads no metadata the plan did not
// read (a repository never cached is not fetched); no repository's
// metadata is refreshed; dnf's lock held by another process fails the
// fetch at once (exit_on_lock) instead of waiting. Signatures are not
// checked at plan (--nogpgcheck: dnf -y would otherwise import a
// repository's key into rpm's database, a change at plan); dnf checks each
// file against the repository's metadata all the same.
//
// Apply installs from the repositories as before (NAME-VERSION), with
// dnf's signature checks, not from toque's cache (installsStaged): dnf
// downloads each package again. A repository that republished other bytes
// under the same version and had its metadata refreshed between plan and
// apply would install those bytes, not the ones the plan read.

// Archives returns the .rpms of the packages changes install or upgrade
// to, each in the cache with its manifest.
func (p *dnfProvider) Archives(ctx context.Context, cache *debCache, changes []PackageChange) ([]*debRef, error) {
	var refs, missing []*debRef
	for _, c := range changes {
		if c.To == "" || c.To == c.From {
			continue
		}
		d := &debRef{Name: c.Name, Version: c.To, Arch: c.Arch, repo: c.Repo}
		refs = append(refs, d)
		if !cache.known(d) {
			missing = append(missing, d)
		}
	}
	if len(missing) > 0 {
		if err := p.download(ctx, cache, missing); err != nil {
			return nil, err
		}
	}
	for _, d := range refs {
		if err := p.manifestOf(ctx, cache, d); err != nil {
			return nil, err
		}
		cache.remember(d)
	}
	return refs, nil
}

// rpmFileName is the file name dnf gives d's package: NAME-VERSION-RELEASE.ARCH.rpm
// (no epoch).
func rpmFileName(d *debRef) string {
	v, _ := splitEVR(d.Version)
	return d.Name + "-" + v.version + "-" + v.release + "." + d.Arch + ".rpm"
}

// fetchedRPM is the file dnf fetched into dir for d, whose architecture
// the transaction did not say: NAME-VERSION-RELEASE.ARCH.rpm, whatever
// ARCH — not a glob of the name, which foo-libs-… matches too.
func fetchedRPM(dir string, d *debRef) (string, error) {
	v, _ := splitEVR(d.Version)
	prefix := d.Name + "-" + v.version + "-" + v.release + "."
	var ms []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		arch, ok := strings.CutPrefix(e.Name(), prefix)
		if arch, isRPM := strings.CutSuffix(arch, ".rpm"); ok && isRPM && arch != "" && !strings.ContainsAny(arch, ".-/") {
			ms = append(ms, e.Name())
		}
	}
	if len(ms) != 1 {
		return "", fmt.Errorf("dnf fetched no single .rpm for %s", d.label())
	}
	return ms[0], nil
}

// download fetches ds with one dnf --downloadonly into a fresh directory
// of the cache, then moves each into the blob store under its sha256.
// dnf checks each against the repository's metadata; the metadata is not
// refreshed (as at apply).
func (p *dnfProvider) download(ctx context.Context, cache *debCache, ds []*debRef) error {
	dir, err := os.MkdirTemp(filepath.Join(cache.dir, "debs"), "dnf-")
	if err != nil {
		return fmt.Errorf("package cache: %w", err)
	}
	defer os.RemoveAll(dir)
	argv := []string{"dnf", "-y", dnfMetadataNever, "--setopt=exit_on_lock=True", "--setopt=install_weak_deps=False",
		"--nogpgcheck", "--downloadonly", "--destdir=" + dir}
	if repos := archiveRepos(ds); len(repos) > 0 {
		argv = append(argv, "--disablerepo=*", "--enablerepo="+strings.Join(repos, ","))
	}
	argv = append(argv, "install", "--")
	for _, d := range ds {
		spec := d.Name + "-" + d.Version
		if d.Arch != "" {
			spec += "." + d.Arch
		}
		argv = append(argv, spec)
	}
	if _, err := p.read(ctx, argv); err != nil {
		return fmt.Errorf("fetching the packages the plan installs, to read what they bring: %w", err)
	}
	for _, d := range ds {
		name := rpmFileName(d)
		if d.Arch == "" {
			n, err := fetchedRPM(dir, d)
			if err != nil {
				return err
			}
			name = n
		}
		tmp := filepath.Join(dir, name)
		sha, err := fileSHA256(tmp)
		if err != nil {
			return fmt.Errorf("dnf did not fetch %s (%s): %w", d.label(), name, err)
		}
		if err := cache.adopt(tmp, sha); err != nil {
			return fmt.Errorf("%s: %w", d.label(), err)
		}
		d.SHA256, d.Filename, d.URL = sha, name, name
		if fi, err := os.Stat(cache.blob(sha)); err == nil {
			d.Size = fi.Size()
		}
	}
	return nil
}

// installsStaged: dnf installs from the repositories (NAME-VERSION), not
// from toque's cache.
func (p *dnfProvider) installsStaged() bool { return false }

// archiveRepos is the repositories ds come from, as dnf's transaction
// table named them; nil when one did not say (dnf then loads every
// enabled repository).
func archiveRepos(ds []*debRef) []string {
	var out []string
	for _, d := range ds {
		if d.repo == "" || strings.HasPrefix(d.repo, "@") || strings.ContainsAny(d.repo, ",*?[] ") {
			return nil
		}
		out = append(out, d.repo)
	}
	return uniqueNames(out)
}

// manifestOf sets d's manifest: the cache's, or read from the .rpm and
// kept.
func (p *dnfProvider) manifestOf(ctx context.Context, cache *debCache, d *debRef) error {
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
	if m.Package != d.Name || compareRPMVersions(m.Version, d.Version) != 0 {
		return fmt.Errorf("the file fetched for %s holds %s: the repository's metadata and its package disagree", d.label(), m.label())
	}
	cache.saveManifest(m)
	d.Manifest = m
	return nil
}

// rpmManifestFormat is what readManifest asks rpm -qp: the package, its
// Provides, every file, then each scriptlet that may create accounts.
// Sections start with a marker line; the scriptlets come last, as they
// may span lines.
const rpmManifestFormat = "N\t%{NAME}\t%{EPOCHNUM}\t%{VERSION}\t%{RELEASE}\t%{ARCH}\n" +
	"[P\t%{PROVIDENAME}\n]" +
	"[F\t%{FILENAMES}\t%{FILEMODES:octal}\t%{FILEUSERNAME}\t%{FILEGROUPNAME}\t%{FILEFLAGS}\t%{FILELINKTOS}\t%{FILESIZES}\n]" +
	"\x1epreinst\n%{PREIN}\n\x1epostinst\n%{POSTIN}\n"

// rpm file flags (rpmfiles.h).
const (
	rpmFileConfig = 1 << 0
	rpmFileGhost  = 1 << 6
)

// readManifest reads the .rpm at file, whose sha256 is digest: its header
// with rpm -qp, and its payload with rpm2cpio for the sha256 of every
// regular file and the content of configuration and unit files.
func (p *dnfProvider) readManifest(ctx context.Context, file, digest string) (*debManifest, error) {
	res, err := p.read(ctx, []string{"rpm", "-qp", "--qf", rpmManifestFormat, "--", file})
	if err != nil {
		return nil, err
	}
	m := &debManifest{Format: debManifestFormat, SHA256: digest}
	head, scriptText, _ := strings.Cut(res.Stdout, "\x1e")
	byPath := map[string]int{}
	for _, line := range strings.Split(head, "\n") {
		f := strings.Split(line, "\t")
		switch {
		case f[0] == "N" && len(f) == 6:
			m.Package, m.Version, m.Arch = f[1], evrString(f[2], f[3], f[4]), f[5]
		case f[0] == "P" && len(f) == 2 && f[1] != m.Package && !strings.ContainsAny(f[1], "()/ "):
			m.Provides = append(m.Provides, f[1])
		case f[0] == "F" && len(f) == 8:
			e, err := rpmEntry(f[1:])
			if err != nil {
				return nil, err
			}
			if e == nil {
				continue
			}
			if e.Conffile {
				m.Conffiles = append(m.Conffiles, e.Path)
			}
			byPath[e.Path] = len(m.Entries)
			m.Entries = append(m.Entries, *e)
		}
	}
	if m.Package == "" {
		return nil, fmt.Errorf("%s is not an rpm package rpm can read", file)
	}
	m.Provides = uniqueNames(m.Provides)
	scripts := map[string]string{}
	for _, part := range strings.Split(scriptText, "\x1e") {
		name, body, _ := strings.Cut(part, "\n")
		body = strings.TrimSpace(body)
		if name != "" && body != "" && body != "(none)" {
			scripts[name] = body
			m.Scripts = append(m.Scripts, name)
		}
	}
	sort.Strings(m.Scripts)
	if err := p.readPayload(ctx, file, m, byPath); err != nil {
		return nil, fmt.Errorf("reading the files of %s (%s): %w", file, m.label(), err)
	}
	for i := range m.Entries {
		e := &m.Entries[i]
		if u := unitPath(e.Path); u != "" && e.HasContent {
			// RHEL's packages leave enabling to presets (systemctl
			// preset in %post): what they do is not predicted.
			m.Units = append(m.Units, unitOf(u, e.Path, e.ContentBytes, ""))
		}
		if e.HasContent && sysusersPath(e.Path) {
			m.Accounts = append(m.Accounts, sysusers(e.ContentBytes)...)
		}
	}
	for _, name := range []string{"preinst", "postinst"} {
		m.Accounts = append(m.Accounts, scriptAccounts(name, scripts[name])...)
	}
	return m, nil
}

// rpmEntry is one file of the header: path, mode (octal), user, group,
// flags, link target, size. A %ghost file (not in the payload, not
// installed) is left out. rpm records owners by name only: uid and gid
// are 0, what rpm itself uses for a name the host does not know.
func rpmEntry(f []string) (*debEntry, error) {
	mode, err := strconv.ParseUint(f[1], 8, 32)
	if err != nil {
		return nil, fmt.Errorf("rpm gave %s the mode %q", f[0], f[1])
	}
	flags, _ := strconv.Atoi(f[4])
	if flags&rpmFileGhost != 0 {
		return nil, nil
	}
	e := &debEntry{Path: path.Clean(f[0]), Mode: uint32(mode) & 0o7777, Owner: f[2], Group: f[3]}
	switch mode & 0o170000 {
	case 0o040000:
		e.Kind = "directory"
	case 0o100000:
		e.Kind = "file"
		e.Size, _ = strconv.ParseInt(f[6], 10, 64)
	case 0o120000:
		e.Kind, e.Target = "symlink", f[5]
	default:
		e.Kind = "special"
	}
	e.Conffile = flags&rpmFileConfig != 0 && e.Kind == "file"
	return e, nil
}

// readPayload reads the package's cpio payload for each regular file's
// sha256, and the content of the files keptContent keeps.
func (p *dnfProvider) readPayload(ctx context.Context, file string, m *debManifest, byPath map[string]int) error {
	return p.eachPayloadEntry(ctx, file, func(name string, mode uint32, r io.Reader) error {
		i, ok := byPath[name]
		if !ok || mode&0o170000 != 0o100000 {
			return nil
		}
		e := &m.Entries[i]
		keep := keptContent(e.Path, e.Conffile)
		h := sha256.New()
		var buf strings.Builder
		w := io.Writer(h)
		if keep {
			if e.Size > maxKeptContent {
				return fmt.Errorf("%s is %d bytes, more than toque keeps of a configuration or unit file (%d)", e.Path, e.Size, maxKeptContent)
			}
			w = io.MultiWriter(h, &buf)
		}
		if _, err := io.Copy(w, r); err != nil {
			return err
		}
		e.SHA256 = hex.EncodeToString(h.Sum(nil))
		if keep {
			e.HasContent, e.ContentBytes = true, []byte(buf.String())
		}
		return nil
	})
}

// memberContent reads the content of the regular file at want in d's
// payload (rpm2cpio, stopped once it is read), at most maxKeptContent
// bytes, checked against the sha256 d's manifest gives it.
func (p *dnfProvider) memberContent(ctx context.Context, cache *debCache, d *debRef, want string) ([]byte, error) {
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
	err := p.eachPayloadEntry(ctx, file, func(name string, mode uint32, r io.Reader) error {
		if name != want || mode&0o170000 != 0o100000 {
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
		return nil, fmt.Errorf("%s's payload holds no file %s, which its manifest lists", d.label(), want)
	}
	if sum := sha256.Sum256(out); hex.EncodeToString(sum[:]) != entry.SHA256 {
		return nil, fmt.Errorf("%s in %s's payload is not the file its manifest read (sha256 differs): the cache was changed", want, d.label())
	}
	return out, nil
}

// eachPayloadEntry streams the package's cpio payload (rpm2cpio, which
// decompresses it), calling f with each entry's absolute path, mode and
// data; what f leaves unread is skipped. An error f returns stops the
// reading (and rpm2cpio) and is returned.
func (p *dnfProvider) eachPayloadEntry(ctx context.Context, file string, f func(name string, mode uint32, r io.Reader) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var perr error
	s := p.spec([]string{"rpm2cpio", file}, p.readTimeout, nil)
	s.OutputLimit = 0
	pr, pw := io.Pipe()
	s.Stdout = pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		perr = eachCpioEntry(bufio.NewReader(pr), func(name string, mode uint32, r io.Reader) error {
			return f(path.Clean("/"+strings.TrimPrefix(name, ".")), mode, r)
		})
		if perr != nil {
			cancel() // stop rpm2cpio: nothing more is read
		}
		io.Copy(io.Discard, pr)
	}()
	_, err := shellexec.Run(ctx, s)
	pw.Close()
	<-done
	if perr != nil {
		return perr
	}
	if err != nil {
		return fmt.Errorf("rpm2cpio: %w", err)
	}
	return nil
}

// eachCpioEntry reads a cpio archive in the "newc" format rpm2cpio writes
// (070701: a 110-byte header of hexadecimal fields, the name, the data,
// each padded to 4 bytes), calling f for every entry but the trailer.
func eachCpioEntry(in *bufio.Reader, f func(name string, mode uint32, r io.Reader) error) error {
	hdr := make([]byte, 110)
	for {
		if _, err := io.ReadFull(in, hdr); err != nil {
			return fmt.Errorf("cpio header: %w", err)
		}
		if magic := string(hdr[:6]); magic != "070701" && magic != "070702" {
			return fmt.Errorf("not a newc cpio archive (magic %q)", magic)
		}
		field := func(i int) (uint64, error) {
			return strconv.ParseUint(string(hdr[6+8*i:6+8*i+8]), 16, 64)
		}
		mode, err1 := field(1)
		size, err2 := field(6)
		nameSize, err3 := field(11)
		if err := errors.Join(err1, err2, err3); err != nil || nameSize == 0 || nameSize > 4096 {
			return fmt.Errorf("a cpio header that does not parse")
		}
		name := make([]byte, nameSize)
		if _, err := io.ReadFull(in, name); err != nil {
			return err
		}
		if err := skip(in, pad4(110+nameSize)); err != nil {
			return err
		}
		n := strings.TrimRight(string(name), "\x00")
		if n == "TRAILER!!!" {
			return nil
		}
		lr := &io.LimitedReader{R: in, N: int64(size)}
		if err := f(n, uint32(mode), lr); err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, lr); err != nil {
			return err
		}
		if err := skip(in, pad4(size)); err != nil {
			return err
		}
	}
}

func pad4(n uint64) uint64 { return (4 - n%4) % 4 }

func skip(r io.Reader, n uint64) error {
	_, err := io.CopyN(io.Discard, r, int64(n))
	return err
}
