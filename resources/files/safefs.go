//go:build unix

package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// This file is how the file-system types reach what they manage without
// being tricked by symbolic links or hard links that another user swaps in
// while toque runs (as root, on paths a reviewer approved).
//
//   - Every directory on the way to a managed path is opened by descriptor,
//     one component at a time, with O_NOFOLLOW (or in one openat2 call with
//     RESOLVE_NO_SYMLINKS where the kernel has it), and held: the managed
//     object is then read, created, renamed, chmod-ed and chown-ed relative
//     to the held directory, never by its path again.
//   - A symbolic link on the way is followed only when no user but root
//     (and the user toque runs as) could have made or replaced it: the
//     directory it is in belongs to root or to toque's user and no one else
//     may write to it, or it is sticky (/tmp) and the link belongs to root
//     or to toque's user. /var/run → /run is followed; a link in a
//     directory other users can write is an error naming both.
//   - The managed object itself is opened with O_NOFOLLOW (O_NONBLOCK, so a
//     fifo swapped in cannot block) and checked to be the inode Load read.

// maxLinks is how many symbolic links one path may go through (Linux's
// own limit).
const maxLinks = 40

// heldDir is a directory held open by descriptor. path is how it was
// reached, with every symbolic link resolved: a real path at the time it
// was walked, used for messages and for ".." in a link's target.
type heldDir struct {
	fd   int
	path string
	// shared marks a directory a DirCache holds for the reads of one
	// plan: close leaves it open (the cache closes it), and whether
	// everyone may reach it is decided once (searchable).
	shared     bool
	searchOnce sync.Once
	searchOK   bool
	searchErr  error
}

func (d *heldDir) close() {
	if d != nil && d.fd >= 0 && !d.shared {
		unix.Close(d.fd)
		d.fd = -1
	}
}

// searchable is searchableByAll(d), decided once for a shared d.
func (d *heldDir) searchable() (bool, error) {
	if !d.shared {
		return searchableByAll(d)
	}
	d.searchOnce.Do(func() { d.searchOK, d.searchErr = searchableByAll(d) })
	return d.searchOK, d.searchErr
}

// DirCache holds the parent directories of the paths one batch of reads
// (Reads: a plan, or a pre-flight) reads, so
// that the reads of the 10,000 files of one directory open, check and
// close that directory once rather than 10,000 times. Each is opened as
// lookupPath opens a parent (openat2 following no link); a file is then
// looked up and read relative to that descriptor, exactly as with a
// directory held for one read. It is only for reading a state that
// nothing changes meanwhile — the planner's reads, never apply's — and is
// bounded (dirCacheMax; further directories are held per read as
// before). The zero value is not usable: NewDirCache.
type DirCache struct {
	mu   sync.Mutex
	dirs map[string]*heldDir
}

// dirCacheMax bounds the descriptors a DirCache holds.
const dirCacheMax = 256

// NewDirCache returns an empty cache; Close it when the reads are done.
func NewDirCache() *DirCache { return &DirCache{dirs: map[string]*heldDir{}} }

// Close closes every directory c holds; c then holds none.
func (c *DirCache) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.dirs {
		unix.Close(d.fd)
		d.fd = -1
	}
	c.dirs = map[string]*heldDir{}
}

// hold returns dir held as lookupPath would hold it, shared when c has
// room for it (else the caller's to close).
func (c *DirCache) hold(dir string) (*heldDir, error) {
	c.mu.Lock()
	d, ok := c.dirs[dir]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	fd, err := openat2NoSymlinks(dir)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.dirs[dir]; ok {
		unix.Close(fd) // another read held it meanwhile
		return d, nil
	}
	if len(c.dirs) >= dirCacheMax {
		return &heldDir{fd: fd, path: dir}, nil
	}
	d = &heldDir{fd: fd, path: dir, shared: true}
	c.dirs[dir] = d
	return d, nil
}

type dirCacheKey struct{}

// dirCacheOf is the directory cache of the batch of reads ctx carries
// (Reads), or nil outside one.
func dirCacheOf(ctx context.Context) *DirCache {
	c, _ := resources.ReadsOf(ctx).Get(dirCacheKey{}, func() (any, func()) {
		c := NewDirCache()
		return c, c.Close
	}).(*DirCache)
	return c
}

// join is the path of name in d.
func (d *heldDir) join(name string) string {
	if d.path == "/" {
		return "/" + name
	}
	return d.path + "/" + name
}

// dup is a second descriptor of d, for a walk that consumes it.
func (d *heldDir) dup() (*heldDir, error) {
	fd, err := unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "dup", Path: d.path, Err: err}
	}
	return &heldDir{fd: fd, path: d.path}, nil
}

// stat is d's own stat.
func (d *heldDir) stat() (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return st, &fs.PathError{Op: "stat", Path: d.path, Err: err}
	}
	return st, nil
}

// sync fsyncs d, so that a rename or unlink in it survives a crash. A
// directory toque may write but not read (mode 0300) cannot be opened to
// be synced; that, and file systems without directory fsync, are not
// errors.
func (d *heldDir) sync() error {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening directory %s to sync it: %w", d.path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("syncing directory %s: %w", d.path, err)
	}
	return nil
}

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} }

// UnsafeLinkError is a symbolic link toque refuses to follow: another user
// could have made or replaced it.
type UnsafeLinkError struct {
	// Path is the link; Dir the directory it is in; Why what makes that
	// directory unsafe ("other users can write to it (mode 0777)").
	Path, Dir, Why string
}

func (e *UnsafeLinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link in %s, and %s; toque follows a symbolic link only where no user but root could have made or replaced it", e.Path, e.Dir, e.Why)
}

// trustedOwner reports whether uid is root or the user toque runs as.
func trustedOwner(uid uint32) bool { return uid == 0 || int64(uid) == int64(processEUID()) }

// processEUID is the user toque runs as, asked once: it does not change
// while toque runs, and every read of a file asked again.
var processEUID = sync.OnceValue(os.Geteuid)

// replaceableBy says why a directory entry in a directory of stat ds could
// be made or replaced by a user other than root and toque's own, or "" when
// it could not. owner is the entry's owner (a sticky directory protects an
// entry of a trusted owner), or nil to ignore the sticky bit (a hard link
// can still be added to a sticky directory).
func replaceableBy(ds *unix.Stat_t, owner *uint32) string {
	if !trustedOwner(ds.Uid) {
		return fmt.Sprintf("that directory belongs to %s", props.OwnerName(ds.Uid))
	}
	perm := uint32(ds.Mode) & MaxMode
	if perm&0o022 == 0 {
		return ""
	}
	if perm&unix.S_ISVTX != 0 && owner != nil && trustedOwner(*owner) {
		return ""
	}
	return fmt.Sprintf("other users can write to that directory (mode %04o)", perm)
}

// openRoot holds "/".
func openRoot() (*heldDir, error) {
	fd, err := unix.Open("/", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	return &heldDir{fd: fd, path: "/"}, nil
}

// holdParent holds the directory path is in and returns the last
// component's name. path must be canonical (CanonicalPath). A missing
// directory on the way is an error wrapping fs.ErrNotExist.
func holdParent(path string) (*heldDir, string, error) {
	dir, name := filepath.Dir(path), filepath.Base(path)
	if name == "/" || name == "." || name == ".." {
		return nil, "", fmt.Errorf("%s does not name a directory entry", path)
	}
	d, err := holdDir(dir, false)
	return d, name, err
}

// holdDir holds the directory at the canonical path dir, creating missing
// directories on the way (mode 0755 less the umask) when mkdir is set.
func holdDir(dir string, mkdir bool) (*heldDir, error) {
	if !mkdir {
		if fd, err := openat2NoSymlinks(dir); err == nil {
			return &heldDir{fd: fd, path: dir}, nil
		}
		// A symbolic link on the way (decided step by step below), a
		// missing directory (named precisely below) or no openat2.
	}
	root, err := openRoot()
	if err != nil {
		return nil, err
	}
	w := &walker{stack: []*heldDir{root}, mkdir: mkdir}
	return w.walkDir(strings.TrimPrefix(dir, "/"))
}

// holdFrom holds the directory that rel (relative to d, or absolute)
// leads to, and returns the name of rel's last component in it. d is
// consumed: it is closed or returned.
func holdFrom(d *heldDir, rel string) (*heldDir, string, error) {
	if filepath.IsAbs(rel) {
		d.close()
		if clean := filepath.Clean(rel); clean == "/" {
			return nil, "", fmt.Errorf("%s does not name a directory entry", rel)
		}
		var err error
		if d, err = openRoot(); err != nil {
			return nil, "", err
		}
	}
	dir, name := splitLast(rel)
	w := &walker{stack: []*heldDir{d}}
	if name == "." || name == ".." {
		// rel ends in a directory: walk to it, and name it from its
		// parent.
		held, err := w.walkDir(rel)
		if err != nil {
			return nil, "", err
		}
		return parentOf(held)
	}
	held, err := w.walkDir(dir)
	if err != nil {
		return nil, "", err
	}
	return held, name, nil
}

// splitLast splits a relative or absolute path into everything before its
// last non-empty component, and that component ("." when there is none).
func splitLast(p string) (string, string) {
	p = strings.TrimRight(p, "/")
	i := strings.LastIndexByte(p, '/')
	if p == "" {
		return "", "."
	}
	return p[:i+1], p[i+1:]
}

// parentOf holds d's parent and returns d's name in it; d is consumed.
func parentOf(d *heldDir) (*heldDir, string, error) {
	defer d.close()
	if d.path == "/" {
		return nil, "", errors.New("the path resolves to the root directory")
	}
	fd, err := unix.Openat(d.fd, "..", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", &fs.PathError{Op: "open", Path: filepath.Dir(d.path), Err: err}
	}
	return &heldDir{fd: fd, path: filepath.Dir(d.path)}, filepath.Base(d.path), nil
}

// walker resolves a path one component at a time from held directories.
// stack holds the directories walked, the last one being where the walk
// is; ".." pops it (the directory it came from, never a lexical guess).
type walker struct {
	stack []*heldDir
	links int
	// mkdir creates a missing directory instead of failing.
	mkdir bool
}

func (w *walker) top() *heldDir { return w.stack[len(w.stack)-1] }

func (w *walker) release() {
	for _, d := range w.stack {
		d.close()
	}
	w.stack = nil
}

// walkDir walks rel from where w is; every component must be a directory
// or a symbolic link that may be followed to one. It returns the held
// directory at the end; the rest of w's stack is closed.
func (w *walker) walkDir(rel string) (*heldDir, error) {
	queue := splitComponents(rel)
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		next, err := w.step(c)
		if err != nil {
			w.release()
			return nil, err
		}
		queue = append(next, queue...)
	}
	top := w.top()
	w.stack = w.stack[:len(w.stack)-1]
	w.release()
	return top, nil
}

// step enters component c. When c is a symbolic link that may be
// followed, it returns the components of its target, to walk instead.
func (w *walker) step(c string) ([]string, error) {
	switch c {
	case "", ".":
		return nil, nil
	case "..":
		return nil, w.up()
	}
	top := w.top()
	fd, err := unix.Openat(top.fd, c, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && w.mkdir {
		if err = unix.Mkdirat(top.fd, c, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = unix.Openat(top.fd, c, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	}
	if err == nil {
		w.stack = append(w.stack, &heldDir{fd: fd, path: top.join(c)})
		return nil, nil
	}
	if !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
		return nil, &fs.PathError{Op: "open", Path: top.join(c), Err: err}
	}
	var ls unix.Stat_t
	if err := unix.Fstatat(top.fd, c, &ls, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: top.join(c), Err: err}
	}
	if ls.Mode&unix.S_IFMT != unix.S_IFLNK {
		return nil, &fs.PathError{Op: "open", Path: top.join(c), Err: unix.ENOTDIR}
	}
	return w.follow(top, c, &ls)
}

// follow returns the components of the symbolic link c in top (stat ls)
// when it may be followed, resetting w to "/" for an absolute target.
func (w *walker) follow(top *heldDir, c string, ls *unix.Stat_t) ([]string, error) {
	ds, err := top.stat()
	if err != nil {
		return nil, err
	}
	if why := replaceableBy(&ds, &ls.Uid); why != "" {
		return nil, &UnsafeLinkError{Path: top.join(c), Dir: top.path, Why: why}
	}
	if w.links++; w.links > maxLinks {
		return nil, &fs.PathError{Op: "open", Path: top.join(c), Err: unix.ELOOP}
	}
	target, err := readlinkAt(top, c)
	if err != nil {
		return nil, err
	}
	if target == "" {
		return nil, &fs.PathError{Op: "readlink", Path: top.join(c), Err: unix.ENOENT}
	}
	if filepath.IsAbs(target) {
		root, err := openRoot()
		if err != nil {
			return nil, err
		}
		w.release()
		w.stack = []*heldDir{root}
	}
	return splitComponents(target), nil
}

// up moves w to the parent of where it is.
func (w *walker) up() error {
	if len(w.stack) > 1 {
		w.top().close()
		w.stack = w.stack[:len(w.stack)-1]
		return nil
	}
	top := w.top()
	if top.path == "/" {
		return nil // "/.." is "/"
	}
	fd, err := unix.Openat(top.fd, "..", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: filepath.Dir(top.path), Err: err}
	}
	top.close()
	w.stack[0] = &heldDir{fd: fd, path: filepath.Dir(top.path)}
	return nil
}

func splitComponents(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// readlinkAt reads the symbolic link name in d.
func readlinkAt(d *heldDir, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(d.fd, name, buf)
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: d.join(name), Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// statAt lstat-s name in d; exists is false when nothing is there.
func statAt(d *heldDir, name string) (st unix.Stat_t, exists bool, err error) {
	err = unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	if err != nil {
		return st, false, &fs.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	return st, true, nil
}

// openAt opens name in d without following a symbolic link and without
// blocking on a fifo, and checks that it is the inode want (when known)
// and of kind (S_IFREG, S_IFDIR). flags add the access mode.
func openAt(d *heldDir, name string, flags int, kind uint32, want fileID) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	if kind == unix.S_IFDIR {
		flags |= unix.O_DIRECTORY
	}
	fd, err := unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, st, fmt.Errorf("%s is a symbolic link now: %w", d.join(name), ErrChanged)
	}
	if err != nil {
		return nil, st, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, st, &fs.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	switch {
	case uint32(st.Mode)&unix.S_IFMT != kind:
		unix.Close(fd)
		return nil, st, fmt.Errorf("%s is %s now: %w", d.join(name), props.Article(kindOf(uint32(st.Mode))), ErrChanged)
	case want.known() && idOf(&st) != want:
		unix.Close(fd)
		return nil, st, fmt.Errorf("%s is another file than the one read: %w", d.join(name), ErrChanged)
	}
	// Back to blocking mode for the reads and writes that follow.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, st, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.join(name)), st, nil
}

// readRegular reads the regular file name in d, as openAt opens it (no
// link followed, no blocking on a fifo swapped in, the inode want when
// known) but with no *os.File: one open, one fstat and, for a file that
// does not grow meanwhile, one read. It returns the content and the
// stat of the descriptor read.
func readRegular(d *heldDir, name string, want fileID) ([]byte, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, st, fmt.Errorf("%s is a symbolic link now: %w", d.join(name), ErrChanged)
	}
	if err != nil {
		return nil, st, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, st, &fs.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	switch {
	case uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG:
		return nil, st, fmt.Errorf("%s is %s now: %w", d.join(name), props.Article(kindOf(uint32(st.Mode))), ErrChanged)
	case want.known() && idOf(&st) != want:
		return nil, st, fmt.Errorf("%s is another file than the one read: %w", d.join(name), ErrChanged)
	}
	// One byte more than its size: a read that fills the buffer is a file
	// that grew since the fstat, read on to its end.
	buf := make([]byte, 0, max(st.Size, 0)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, st, &fs.PathError{Op: "read", Path: d.join(name), Err: err}
		}
		if n == 0 {
			return buf, st, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) < cap(buf) && int64(len(buf)) >= st.Size {
			// Short of the buffer and all of the size: the end, as a
			// regular file's read is short only there.
			return buf, st, nil
		}
	}
}

// ErrChanged is wrapped by the errors of a built-in file-system type's
// Converge that found the object it was to change replaced, or something
// new where it was to create one, since Load read it: another process is
// changing the path, and nothing was changed. Apply may tell it from other
// failures with errors.Is.
var ErrChanged = errors.New("it changed since it was read (another process is changing it); nothing was changed: run toque plan again")

// kindOf names the file type in a stat mode, as fileKind does for an
// os.FileMode.
func kindOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return "special file"
}

// tempName is the one temporary name toque uses beside name in a
// directory, for a purpose ("tmp", "link"): ".NAME.toque-PURPOSE". It is
// fixed, not random, so that what a killed run left there is found and
// removed in O(1) by the next one (createTemp). A name too long to extend
// is replaced by its digest.
func tempName(name, purpose string) string {
	t := "." + name + ".toque-" + purpose
	if len(t) > 255 {
		t = "." + shortDigest(name) + ".toque-" + purpose
	}
	return t
}

// shortDigest is 32 hex digits of the sha256 of s.
func shortDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// removeLeftover removes the name tmp from d when something is there: the
// temporary file of a run that was killed, or something another user put
// there. Only the name goes (unlinkat never follows a link).
func removeLeftover(d *heldDir, tmp string) error {
	err := unix.Unlinkat(d.fd, tmp, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("removing %s, left by an earlier run: %w", d.join(tmp), err)
}

// createTemp creates d's temporary file for name, after removing what an
// earlier run may have left under that name. The file is new (O_EXCL) and
// mode 0600 until the caller sets its mode.
func createTemp(d *heldDir, name string) (*os.File, string, error) {
	tmp := tempName(name, "tmp")
	for range 3 {
		if err := removeLeftover(d, tmp); err != nil {
			return nil, "", err
		}
		fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue // put back between unlink and open: try again
		}
		if err != nil {
			return nil, "", &fs.PathError{Op: "create", Path: d.join(tmp), Err: err}
		}
		return os.NewFile(uintptr(fd), d.join(tmp)), tmp, nil
	}
	return nil, "", fmt.Errorf("creating %s: something keeps appearing under that name", d.join(tmp))
}

// renameAt renames from to to within d. With noReplace, it fails with an
// error wrapping fs.ErrExist when to exists (renameat2 RENAME_NOREPLACE, or
// link and unlink where the kernel or file system lacks it).
func renameAt(d *heldDir, from, to string, noReplace bool) error {
	var err error
	if noReplace {
		err = renameNoReplace(d.fd, from, to)
	} else {
		err = unix.Renameat(d.fd, from, d.fd, to)
	}
	if err != nil {
		return &fs.PathError{Op: "rename", Path: d.join(to), Err: err}
	}
	return nil
}

// renameNoReplaceFallback is renameat2(RENAME_NOREPLACE) made of link(2),
// which never replaces, and unlink(2).
func renameNoReplaceFallback(dfd int, from, to string) error {
	if err := unix.Linkat(dfd, from, dfd, to, 0); err != nil {
		return err
	}
	return unix.Unlinkat(dfd, from, 0)
}

// chmodFile sets the permission bits of f (including setuid, setgid and
// sticky, which os.File.Chmod would drop).
func chmodFile(f *os.File, mode uint32) error {
	if err := unix.Fchmod(int(f.Fd()), mode); err != nil {
		return fmt.Errorf("setting the mode of %s to %04o: %w", f.Name(), mode, err)
	}
	return nil
}

// chownFile sets the owner and group of f; unset ids (-1) are kept.
func chownFile(f *os.File, o ownership) error {
	if o.none() {
		return nil
	}
	if err := unix.Fchown(int(f.Fd()), o.uid, o.gid); err != nil {
		return fmt.Errorf("setting the owner of %s: %w", f.Name(), err)
	}
	return nil
}

// openToAll caches, per directory, whether every directory from it up to
// / lets others through: a plan reads thousands of files in a handful of
// directories. A directory is known by device, inode and change time, so a
// chmod, or a new directory on a recycled inode, is a new entry; a change
// to a directory above it is not seen until the process ends (one plan or
// one apply). What it decides is only what a plan shows, never what toque
// changes.
var openToAll sync.Map

// dirKey → bool

type dirKey struct {
	id    fileID
	ctime unix.Timespec
}

// searchableByAll reports whether every directory from d up to "/" lets
// every user of the host through (o+x), so that a file in d is reachable
// by anyone its own mode lets read it.
func searchableByAll(d *heldDir) (bool, error) {
	// The verdict on d itself is most often known already (the files of
	// one directory): one fstat of the held descriptor answers.
	var own unix.Stat_t
	if unix.Fstat(d.fd, &own) == nil {
		if v, ok := openToAll.Load(dirKey{id: idOf(&own), ctime: own.Ctim}); ok {
			return v.(bool), nil
		}
	}
	fd, err := unix.Openat(d.fd, ".", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	var walked []dirKey // the directories on the way up, all o+x
	verdict := func(v bool) (bool, error) {
		for _, id := range walked {
			openToAll.Store(id, v)
		}
		return v, nil
	}
	for range 4096 {
		var st unix.Stat_t
		err := unix.Fstat(fd, &st)
		if err != nil {
			unix.Close(fd)
			return false, err
		}
		id := idOf(&st)
		key := dirKey{id: id, ctime: st.Ctim}
		if v, ok := openToAll.Load(key); ok {
			unix.Close(fd)
			return verdict(v.(bool))
		}
		if st.Mode&0o001 == 0 {
			unix.Close(fd)
			openToAll.Store(key, false)
			return verdict(false)
		}
		walked = append(walked, key)
		up, err := unix.Openat(fd, "..", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return false, err
		}
		var ust unix.Stat_t
		if err := unix.Fstat(up, &ust); err != nil {
			unix.Close(up)
			return false, err
		}
		if idOf(&ust) == id {
			unix.Close(up)
			return verdict(true) // "/": its ".." is itself
		}
		fd = up
	}
	unix.Close(fd)
	return false, nil
}

// found is what lookupPath found at a path: the held directory the object
// at its end is in, its name there, and its lstat. For a path that is
// itself a symbolic link, link is what the link says, and followed tells
// whether dir, name and st are those of what it points to.
type found struct {
	dir      *heldDir // nil when a directory on the way is missing
	name     string
	st       unix.Stat_t
	exists   bool
	link     string
	followed bool
}

func (f *found) close() {
	if f != nil {
		f.dir.close()
	}
}

// path is where the object is, with every symbolic link resolved.
func (f *found) path() string { return f.dir.join(f.name) }

// lookupPath finds what is at the canonical path, holding the directory it
// is in. A missing directory on the way means nothing is there. A final
// symbolic link is reported as itself, or, with follow, followed to what
// it points to under the rule for links on the way (UnsafeLinkError);
// nothing there at the end of it is a missing target.
func lookupPath(path string, follow bool) (*found, error) {
	return lookupPathIn(nil, path, follow)
}

// lookupPathIn is lookupPath holding path's parent from c when c is set.
func lookupPathIn(c *DirCache, path string, follow bool) (*found, error) {
	// A directory on the way that does not exist, found by one openat2
	// that follows no link: nothing is there, and the step-by-step walk,
	// which names the missing directory precisely for Converge's errors,
	// would only find it again, component by component (most of a plan
	// from nothing's reads, where every file's directory is to be made).
	// Any other failure (a link on the way, no openat2) takes the walk.
	var d *heldDir
	var name string
	var err error
	if dir, base := filepath.Dir(path), filepath.Base(path); base != "/" && base != "." && base != ".." {
		var held *heldDir
		var oerr error
		if c != nil {
			held, oerr = c.hold(dir)
		} else {
			var fd int
			if fd, oerr = openat2NoSymlinks(dir); oerr == nil {
				held = &heldDir{fd: fd, path: dir}
			}
		}
		switch {
		case oerr == nil:
			d, name = held, base
		case errors.Is(oerr, unix.ENOENT):
			return &found{name: base}, nil
		}
	}
	if d == nil {
		d, name, err = holdParent(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return &found{name: filepath.Base(path)}, nil
	}
	if err != nil {
		return nil, err
	}
	f := &found{dir: d, name: name}
	if f.st, f.exists, err = statAt(d, name); err != nil || !f.exists || f.st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err != nil {
			d.close()
			return nil, err
		}
		return f, nil
	}
	if f.link, err = readlinkAt(d, name); err != nil || !follow {
		if errors.Is(err, unix.EINVAL) {
			err = fmt.Errorf("%s is no longer a symbolic link: %w", path, ErrChanged)
		}
		if err != nil {
			d.close()
			return nil, err
		}
		return f, nil
	}
	f.followed = true
	for links := 1; ; links++ {
		ds, err := d.stat()
		if err == nil {
			if why := replaceableBy(&ds, &f.st.Uid); why != "" {
				err = &UnsafeLinkError{Path: d.join(name), Dir: d.path, Why: why}
			} else if links > maxLinks {
				err = &fs.PathError{Op: "open", Path: path, Err: unix.ELOOP}
			}
		}
		var target string
		if err == nil {
			target, err = readlinkAt(d, name)
		}
		if err != nil {
			d.close()
			return nil, err
		}
		f.dir = nil
		d, name, err = holdFrom(d, target)
		if errors.Is(err, fs.ErrNotExist) {
			f.exists = false
			return f, nil
		}
		if err != nil {
			return nil, err
		}
		f.dir, f.name = d, name
		if f.st, f.exists, err = statAt(d, name); err != nil {
			d.close()
			return nil, err
		}
		if !f.exists || f.st.Mode&unix.S_IFMT != unix.S_IFLNK {
			if !f.exists {
				d.close()
				f.dir = nil
			}
			return f, nil
		}
	}
}

// stateOf is the start of a path type's State: absent, or the kind found
// and, for a path that is a symbolic link, what it points to (Extra
// link_target; with resolved_path and target_kind when it was followed).
func stateOf(f *found) *resources.State {
	st := stateOfFound(f)
	if f.dir != nil && hostexec.EffectiveUID() != 0 && !dirWritable(f.dir) {
		fsw(st).dirUnwritable = f.dir.path
	}
	if f.exists {
		fsw(st).ownerUID, fsw(st).ownerKnown = int(f.st.Uid), true
	}
	return st
}

func stateOfFound(f *found) *resources.State {
	if !f.exists && f.link == "" {
		st := resources.Absent()
		fsw(st).parentMissing = f.dir == nil
		return st
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	if f.link == "" {
		st.Extra["kind"] = kindOf(uint32(f.st.Mode))
		return st
	}
	st.Extra["kind"] = "symlink"
	st.Extra["link_target"] = f.link
	if f.followed {
		if f.exists {
			st.Extra["resolved_path"] = f.path()
			st.Extra["target_kind"] = kindOf(uint32(f.st.Mode))
		} else {
			st.Extra["target_kind"] = "missing"
		}
	}
	return st
}

// statInfoOf is the statInfo of a stat read by descriptor.
func statInfoOf(st *unix.Stat_t) statInfo {
	return statInfo{
		mode: uint32(st.Mode) & MaxMode,
		uid:  st.Uid, gid: st.Gid,
		dev: uint64(st.Dev), ino: uint64(st.Ino), nlink: uint64(st.Nlink),
	}
}

// withPathNeeds adds to a file-system type's step what it needs from, and
// provides to, the rest of the plan: creating path when a directory on
// the way is missing needs its parent directory (unless recursive, which
// makes the parents itself); a directory it creates is provided, with its
// parents when recursive.
func withPathNeeds(step *resources.Step, err error, current *resources.State, path string, isDir, recursive bool) (*resources.Step, error) {
	if err != nil || step == nil {
		return step, err
	}
	if err := privilegeError(step, current, path); err != nil {
		return nil, err
	}
	if step.Kind != resources.Create {
		return step, nil
	}
	if fsr(current).parentMissing && !(isDir && recursive) {
		step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespacePath, Value: props.ParentDir(path), What: "directory"})
	}
	if isDir {
		step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespacePath, Value: path, What: "directory"})
		if recursive {
			for p := props.ParentDir(path); p != "/" && p != "."; p = props.ParentDir(p) {
				step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespacePath, Value: p, What: "directory"})
			}
		}
	}
	return step, nil
}
