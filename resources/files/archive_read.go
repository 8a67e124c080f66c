package files

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// This file reads an archive — tar (plain, gzip, bzip2, xz, zstd) or
// zip, told apart by their bytes, never by the file's name — into the
// list of what extracting it writes, refusing everything that would
// write outside the destination or make what a tree of files should not
// hold: an absolute name, a ".." component, a name through a link of the
// archive, a symbolic link that points out (or through another link), a
// hard link to anything but a file of the archive, a device, fifo or
// socket, a name twice, control characters, more than max bytes.

// Kinds of archive entries.
const (
	entryDir      = "directory"
	entryFile     = "file"
	entrySymlink  = "symbolic link"
	entryHardlink = "hard link"
)

// archiveEntry is one thing extraction writes, named relative to the
// destination (slash-separated, without strip_components' components).
type archiveEntry struct {
	name string
	kind string
	// mode is the permission bits extraction gives it; uid and gid the
	// archive's ids (used with the owner option).
	mode     uint32
	uid, gid int
	size     int64
	sha      string // a file's sha256
	link     string // a symbolic link's target, a hard link's entry
	mtime    time.Time
	// implied marks a directory the archive does not list, made because
	// entries are in it.
	implied bool
}

// archiveListing is what an archive holds.
type archiveListing struct {
	format  string // "tar.gz", "zip"…
	entries []*archiveEntry
	byName  map[string]*archiveEntry
}

// archiveReadOptions are how entries are read.
type archiveReadOptions struct {
	strip       int
	permissions bool // keep setuid, setgid, sticky and group/other write
	maxSize     int64
}

// ErrArchive is wrapped by the errors of an archive toque refuses to
// extract.
var ErrArchive = errors.New("toque refuses this archive")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrArchive}, args...)...)
}

// sniffArchive names the format of the archive whose first bytes are
// head: "zip", "tar", or a compressor ("gz", "bz2", "xz", "zst") of a tar.
func sniffArchive(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return "gz"
	case bytes.HasPrefix(head, []byte("BZh")):
		return "bz2"
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return "xz"
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return "zst"
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return "zip"
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return "tar"
	}
	return ""
}

// entryVisitor consumes the content of a file entry and returns its
// sha256: hashEntry when listing, a write when extracting.
type entryVisitor func(e *archiveEntry, body io.Reader) (string, error)

func hashVisit(e *archiveEntry, body io.Reader) (string, error) { return hashEntry(body, e.size) }

// readArchive lists the archive in f (size bytes), passing each file's
// content to visit (nil: hashEntry).
func readArchive(f io.ReaderAt, size int64, o archiveReadOptions, visit entryVisitor) (*archiveListing, error) {
	if visit == nil {
		visit = hashVisit
	}
	head := make([]byte, 512)
	n, _ := f.ReadAt(head, 0)
	if size < int64(n) {
		n = int(size)
	}
	kind := sniffArchive(head[:n])
	if kind == "" {
		return nil, refused("it is not a tar (plain, gzip, bzip2, xz or zstd) or zip archive")
	}
	l := &archiveListing{byName: map[string]*archiveEntry{}}
	if kind == "zip" {
		l.format = "zip"
		return l, l.readZip(f, size, o, visit)
	}
	l.format = "tar"
	if kind != "tar" {
		l.format = "tar." + kind
	}
	r, closeR, err := decompressor(kind, bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<16))
	if err != nil {
		return nil, refused("%s: %v", l.format, err)
	}
	defer closeR()
	// What the tar reader reads, data it skips included (a directory
	// entry may claim a size, and a few bytes of zstd or xz expand to
	// gigabytes): the files' bytes, max_size at most, and room for the
	// headers.
	lr := &limitedStream{r: r, n: o.maxSize + tarOverhead}
	err = l.readTar(lr, o, visit)
	if lr.n < 0 {
		return nil, refused("%s: its tar stream is larger than max_size (%d bytes) and its headers allow", l.format, o.maxSize)
	}
	return l, err
}

// tarOverhead is how much more than its files' bytes a tar stream may
// be: headers, padding, the end.
const tarOverhead = 16 << 20

// limitedStream reads at most n bytes of r, then fails; n < 0 says it did.
type limitedStream struct {
	r io.Reader
	n int64
}

func (l *limitedStream) Read(p []byte) (int, error) {
	if l.n <= 0 {
		l.n = -1
		return 0, errors.New("stream too large")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// decompressor is the tar stream inside a compressed one.
func decompressor(kind string, r io.Reader) (io.Reader, func(), error) {
	switch kind {
	case "gz":
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, err
		}
		return z, func() { z.Close() }, nil
	case "bz2":
		return bzip2.NewReader(r), func() {}, nil
	case "xz":
		z, err := xz.NewReader(r)
		return z, func() {}, err
	case "zst":
		z, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
		if err != nil {
			return nil, nil, err
		}
		return z, z.Close, nil
	}
	return r, func() {}, nil
}

func (l *archiveListing) readTar(r io.Reader, o archiveReadOptions, visit entryVisitor) error {
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return l.finish()
		}
		if err != nil {
			return refused("%s: %v (a damaged or truncated archive)", l.format, err)
		}
		var e archiveEntry
		switch h.Typeflag {
		case tar.TypeXGlobalHeader:
			continue
		case tar.TypeDir:
			e.kind = entryDir
		case tar.TypeReg, tar.TypeRegA:
			e.kind = entryFile
		case tar.TypeSymlink:
			e.kind, e.link = entrySymlink, h.Linkname
		case tar.TypeLink:
			e.kind, e.link = entryHardlink, h.Linkname
		case tar.TypeChar, tar.TypeBlock:
			return refused("%q is a device node: toque does not extract devices", h.Name)
		case tar.TypeFifo:
			return refused("%q is a fifo: toque extracts files, directories and links only", h.Name)
		default:
			return refused("%q is of tar type %q, which toque does not extract (files, directories and links only)", h.Name, string(h.Typeflag))
		}
		e.mode, e.uid, e.gid, e.mtime, e.size = entryMode(uint32(h.Mode), e.kind, o.permissions), h.Uid, h.Gid, h.ModTime, h.Size
		if err := l.add(h.Name, &e, o); err != nil {
			return err
		}
		if e.kind != entryFile {
			continue
		}
		if total += h.Size; total > o.maxSize {
			return refused("it holds more than max_size (%d bytes) of files", o.maxSize)
		}
		if e.sha, err = visit(&e, tr); err != nil {
			return entryError(h.Name, err)
		}
	}
}

func (l *archiveListing) readZip(f io.ReaderAt, size int64, o archiveReadOptions, visit entryVisitor) error {
	zr, err := zip.NewReader(f, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return refused("zip: %v", err)
	}
	var total uint64
	for _, zf := range zr.File {
		var e archiveEntry
		mode := zf.Mode()
		unixMode := zf.CreatorVersion>>8 == 3 // made on Unix: its mode is one
		switch {
		case mode.IsDir():
			e.kind, e.mode = entryDir, 0o755
		case mode&os.ModeSymlink != 0:
			e.kind = entrySymlink
		case mode.IsRegular():
			e.kind, e.mode = entryFile, 0o644
		default:
			return refused("%q is a %s: toque extracts files, directories and links only", zf.Name, mode.Type())
		}
		if unixMode {
			bits := uint32(mode.Perm())
			if mode&os.ModeSetuid != 0 {
				bits |= 0o4000
			}
			if mode&os.ModeSetgid != 0 {
				bits |= 0o2000
			}
			if mode&os.ModeSticky != 0 {
				bits |= 0o1000
			}
			e.mode = bits
		}
		e.mode, e.mtime, e.size = entryMode(e.mode, e.kind, o.permissions), zf.Modified, int64(zf.UncompressedSize64)
		if e.kind == entrySymlink {
			target, err := readZipEntry(zf, 4096)
			if err != nil {
				return refused("%q: %v", zf.Name, err)
			}
			e.link = string(target)
		}
		if err := l.add(zf.Name, &e, o); err != nil {
			return err
		}
		if e.kind != entryFile {
			continue
		}
		if total += zf.UncompressedSize64; total > uint64(o.maxSize) {
			return refused("it holds more than max_size (%d bytes) of files", o.maxSize)
		}
		rc, err := zf.Open()
		if err != nil {
			return refused("%q: %v", zf.Name, err)
		}
		e.sha, err = visit(&e, rc)
		rc.Close()
		if err != nil {
			return entryError(zf.Name, err)
		}
	}
	return l.finish()
}

// entryError is err reading the entry name: a refusal of the archive,
// unless it is the visitor's own (a write that failed).
func entryError(name string, err error) error {
	var we *writeError
	if errors.As(err, &we) {
		return err
	}
	return refused("%q: %v (a damaged or truncated archive)", name, err)
}

// writeError is a failed write of an extraction, as opposed to a damaged
// archive.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

func readZipEntry(zf *zip.File, max int64) ([]byte, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err == nil && int64(len(b)) > max {
		err = errors.New("a symbolic link's target longer than 4 KiB")
	}
	return b, err
}

// entryMode is the permission bits an entry of kind gets from the
// archive's: without the permissions option, as extracting with umask
// 022 would (no group or other write) and without setuid, setgid and
// sticky; with it, exactly the archive's.
func entryMode(m uint32, kind string, permissions bool) uint32 {
	if kind == entrySymlink {
		return 0o777
	}
	if permissions {
		return m & 0o7777
	}
	return m & 0o755
}

// hashEntry reads exactly size bytes of r and returns their sha256.
func hashEntry(r io.Reader, size int64) (string, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, size+1))
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("%d bytes where the archive says %d", n, size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// cleanName is an archive name relative to the destination, less strip
// leading components ("" for an entry strip removes whole), or an error
// for a name that would land outside it or that a plan could not show.
func cleanName(name string, strip int) (string, error) {
	if !utf8.ValidString(name) {
		return "", refused("%q is not UTF-8: toque shows every name it extracts in the plan", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return "", refused("%q holds a control character", name)
		}
	}
	switch {
	case strings.ContainsRune(name, '\\'):
		return "", refused("%q holds a backslash (a Windows path?): toque extracts names with \"/\" only", name)
	case strings.HasPrefix(name, "/"):
		return "", refused("%q is an absolute name: extraction stays inside destination", name)
	}
	var parts []string
	for _, c := range strings.Split(name, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return "", refused("%q has a \"..\" component: extraction stays inside destination", name)
		}
		parts = append(parts, c)
	}
	if len(parts) <= strip {
		return "", nil
	}
	return strings.Join(parts[strip:], "/"), nil
}

// add checks e, named name in the archive, and lists it.
func (l *archiveListing) add(name string, e *archiveEntry, o archiveReadOptions) error {
	clean, err := cleanName(name, o.strip)
	if err != nil || clean == "" {
		return err
	}
	e.name = clean
	switch e.kind {
	case entryHardlink:
		target, err := cleanName(e.link, o.strip)
		if err != nil {
			return refused("hard link %q: %v", name, err)
		}
		t := l.byName[target]
		if target == "" || t == nil || t.kind != entryFile {
			return refused("%q is a hard link to %q, which is not a file the archive holds before it: toque makes hard links only to files it extracts", name, e.link)
		}
		e.link, e.mode, e.sha, e.size = target, t.mode, t.sha, t.size
	case entrySymlink:
		if err := linkInside(clean, e.link); err != nil {
			return err
		}
	}
	if old := l.byName[clean]; old != nil {
		if old.kind == entryDir && e.kind == entryDir {
			if old.implied {
				*old = *e
			}
			return nil
		}
		return refused("it holds %q twice: toque does not choose which one to extract", clean)
	}
	// Every directory on the way is a directory of the archive, never a
	// link or a file of it (nothing is written through a link).
	dirs := strings.Split(clean, "/")
	for i := 1; i < len(dirs); i++ {
		p := strings.Join(dirs[:i], "/")
		d := l.byName[p]
		if d == nil {
			d = &archiveEntry{name: p, kind: entryDir, mode: 0o755, implied: true, mtime: e.mtime}
			l.byName[p] = d
			l.entries = append(l.entries, d)
			continue
		}
		if d.kind != entryDir {
			return refused("%q is inside %q, which the archive makes a %s: toque writes nothing through a link", clean, p, d.kind)
		}
	}
	l.byName[clean] = e
	l.entries = append(l.entries, e)
	return nil
}

// linkInside checks that a symbolic link name (relative to the
// destination) to target resolves inside the destination, taking each
// step of target from the link's directory: never above it, never
// absolute (finish checks that no step goes through another link).
func linkInside(name, target string) error {
	switch {
	case target == "":
		return refused("%q is a symbolic link to nothing", name)
	case strings.HasPrefix(target, "/"):
		return refused("%q is a symbolic link to the absolute path %q: a link of the archive must point inside destination", name, target)
	}
	if !utf8.ValidString(target) {
		return refused("%q is a symbolic link whose target is not UTF-8", name)
	}
	for _, r := range target {
		if unicode.IsControl(r) {
			return refused("%q is a symbolic link whose target holds a control character", name)
		}
	}
	dir := strings.Split(path.Dir(name), "/")
	if dir[0] == "." {
		dir = nil
	}
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(dir) == 0 {
				return refused("%q is a symbolic link to %q, outside destination", name, target)
			}
			dir = dir[:len(dir)-1]
		default:
			dir = append(dir, c)
		}
	}
	return nil
}

// finish checks what only the whole list tells: no link's target goes
// through another link of the archive (a ".." after a link is not the
// ".." it seems).
func (l *archiveListing) finish() error {
	for _, e := range l.entries {
		if e.kind != entrySymlink {
			continue
		}
		dir := strings.Split(path.Dir(e.name), "/")
		if dir[0] == "." {
			dir = nil
		}
		cs := strings.Split(e.link, "/")
		for i, c := range cs {
			switch c {
			case "", ".":
				continue
			case "..":
				dir = dir[:len(dir)-1]
				continue
			}
			dir = append(dir, c)
			if i == len(cs)-1 {
				break
			}
			if x := l.byName[strings.Join(dir, "/")]; x != nil && x.kind == entrySymlink {
				return refused("%q is a symbolic link to %q, through the link %q of the archive: toque does not follow links to decide where a link points", e.name, e.link, x.name)
			}
		}
	}
	return nil
}
