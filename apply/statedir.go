package apply

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toquehq/toque/internal/trust"
	"github.com/toquehq/toque/resources"
	"golang.org/x/sys/unix"
)

// A state directory holds what toque writes for itself while it runs as
// root: the apply lock, the journal, the reports, the backups and the
// policy cache. A directory another user could write would let that user
// steer those writes (a symbolic link named apply.lock makes the lock's
// truncation empty /etc/shadow), so toque uses one only when it can trust
// it, and then writes in it only through the directory it opened:
//
//   - the directory is created 0700 when missing; an existing one must be a
//     real directory (not a symbolic link), owned by the user toque runs as,
//     and writable by no group and no other user;
//   - every directory above it must be one that only root or that user can
//     change (a world-writable one only with the sticky bit, as /tmp), so
//     nobody else can swap the path (internal/trust, whose rules the
//     host lock's directory and the trusted keys follow too);
//   - files in it are opened relative to the opened directory with
//     O_NOFOLLOW|O_CLOEXEC, and checked with fstat on the descriptor: a
//     regular file with one link, owned by that user, writable by nobody
//     else. A file is truncated or written only after that check, and
//     replaced only by renaming a new file over it.
//
// The checks are made on what was opened, so a swap after the check changes
// nothing: the descriptors still name what was checked.

// StateDir is an opened directory that passed those checks. Its methods
// work relative to the descriptor. It is not safe for concurrent use with
// Close.
type StateDir struct {
	path string
	f    *os.File
}

// UntrustedError is a state directory, a directory above it or a file in
// it that toque refuses to use. Nothing was changed. It is the error of
// the rules the state directory shares with the host lock's directory and
// the trusted keys (internal/trust).
type UntrustedError = trust.UntrustedError

// OpenStateDir opens the directory path, creating it (0700) and any missing
// parent (0755) first, and checks that it can be trusted (see above). The
// caller closes it.
func OpenStateDir(path string) (*StateDir, error) {
	if path == "" {
		return nil, errors.New("no state directory")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", path, err)
	}
	parent := filepath.Dir(abs)
	// Check what exists before creating anything under it, then again
	// with the parents this call created.
	if err := trust.Ancestors(parent); err != nil {
		return nil, err
	}
	if err := mkdirParents(parent); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	if err := trust.Ancestors(parent); err != nil {
		return nil, err
	}
	created, err := mkdir(func() error { return unix.Mkdir(abs, 0o700) })
	if err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", abs, err)
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openDirError(abs, err, func(st *unix.Stat_t) error { return unix.Lstat(abs, st) })
	}
	return newStateDir(abs, fd, created)
}

// Path is the directory's absolute path, for messages and for code that
// works by path below a trusted directory.
func (d *StateDir) Path() string { return d.path }

// Join is the path of name inside d.
func (d *StateDir) Join(name string) string { return filepath.Join(d.path, name) }

// Close closes the directory's descriptor.
func (d *StateDir) Close() error {
	if d == nil || d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}

func (d *StateDir) fd() int { return int(d.f.Fd()) }

// Subdir opens the directory name inside d, creating it (0700) when
// missing, with the same checks as d.
func (d *StateDir) Subdir(name string) (*StateDir, error) {
	if err := plainName(name); err != nil {
		return nil, err
	}
	path := d.Join(name)
	created, err := mkdir(func() error { return unix.Mkdirat(d.fd(), name, 0o700) })
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openDirError(path, err, func(st *unix.Stat_t) error { return unix.Fstatat(d.fd(), name, st, unix.AT_SYMLINK_NOFOLLOW) })
	}
	return newStateDir(path, fd, created)
}

// OpenFile opens the file name inside d with flag (O_CREAT creates it with
// perm), never following a symbolic link, and checks what it opened: a
// regular file with one link, owned by toque's user, writable by nobody
// else. O_TRUNC is refused: truncate after the check.
func (d *StateDir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if err := plainName(name); err != nil {
		return nil, err
	}
	if flag&os.O_TRUNC != 0 {
		return nil, fmt.Errorf("open %s: O_TRUNC before the file is checked", d.Join(name))
	}
	path := d.Join(name)
	fd, err := unix.Openat(d.fd(), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
	if errors.Is(err, unix.ELOOP) {
		return nil, &UntrustedError{Path: path, Reason: "is a symbolic link; toque never writes through a link in its state directory"}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if err := checkFile(f, path); err != nil {
		f.Close()
		return nil, err
	}
	// O_NONBLOCK only kept a FIFO from blocking the open; regular files
	// ignore it, but clear it for the record.
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	return f, nil
}

// checkFile checks an opened file in a state directory.
func checkFile(f *os.File, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &UntrustedError{Path: path, Reason: "is not a regular file"}
	case int(st.Uid) != os.Geteuid():
		return &UntrustedError{Path: path, Reason: trust.OwnedBy(st.Uid)}
	case st.Nlink != 1:
		return &UntrustedError{Path: path, Reason: fmt.Sprintf("has %d hard links; a file toque writes must have exactly one", st.Nlink)}
	case st.Mode&0o022 != 0:
		return &UntrustedError{Path: path, Reason: fmt.Sprintf("is writable by %s (mode %04o)", trust.Writers(st.Mode), st.Mode&0o7777)}
	}
	return nil
}

// WriteFileAtomic replaces name in d with b: a new file (0600) written and
// fsynced, renamed over name, then the directory fsynced. A symbolic link
// at name is replaced, never followed.
func (d *StateDir) WriteFileAtomic(name string, b []byte) error {
	if err := plainName(name); err != nil {
		return err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("write %s: %w", d.Join(name), err)
	}
	tmp := "." + name + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", d.Join(name), err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = unix.Unlinkat(d.fd(), tmp, 0)
		}
	}()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd(), tmp, d.fd(), name)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", d.Join(name), err)
	}
	ok = true
	d.sync()
	return nil
}

// sync makes renames and creations in d durable; a file system that cannot
// sync a directory does not make the write fail.
func (d *StateDir) sync() { _ = unix.Fsync(d.fd()) }

// Exists reports whether name exists in d (a symbolic link counts).
func (d *StateDir) Exists(name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// entry is a name in a state directory with its type and modification time
// (of the entry itself, never of what a link points to).
type dirEntry struct {
	name    string
	regular bool
	mtime   time.Time
}

// entries lists d.
func (d *StateDir) entries() ([]dirEntry, error) {
	dup, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(dup), d.path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if unix.Fstatat(d.fd(), n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		out = append(out, dirEntry{name: n, regular: st.Mode&unix.S_IFMT == unix.S_IFREG, mtime: time.Unix(st.Mtim.Unix())})
	}
	return out, nil
}

// remove removes the file name from d.
func (d *StateDir) remove(name string) error {
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// newStateDir checks the opened directory fd and wraps it. A directory
// this call created gets mode 0700 whatever the umask did.
func newStateDir(path string, fd int, created bool) (*StateDir, error) {
	f := os.NewFile(uintptr(fd), path)
	if created {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			f.Close()
			return nil, &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	var reason string
	switch {
	case int(st.Uid) != os.Geteuid():
		reason = trust.OwnedBy(st.Uid)
	case st.Mode&0o022 != 0:
		reason = fmt.Sprintf("is writable by %s (mode %04o); toque's state directory must be writable only by its owner", trust.Writers(st.Mode), st.Mode&0o7777)
	}
	if reason != "" {
		f.Close()
		return nil, &UntrustedError{Path: path, Reason: reason}
	}
	return &StateDir{path: path, f: f}, nil
}

// mkdir runs a mkdir call, reporting whether it created the directory; an
// existing entry is not an error (it is checked when opened).
func mkdir(call func() error) (bool, error) {
	err := call()
	if err == nil {
		return true, nil
	}
	if errors.Is(err, unix.EEXIST) {
		return false, nil
	}
	return false, err
}

// openDirError words a failure to open the directory path no-follow;
// lstat tells a symbolic link (which O_DIRECTORY reports as "not a
// directory") from anything else.
func openDirError(path string, err error, lstat func(*unix.Stat_t) error) error {
	var st unix.Stat_t
	link := lstat(&st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
	switch {
	case link || errors.Is(err, unix.ELOOP):
		return &UntrustedError{Path: path, Reason: "is a symbolic link; toque uses only a real directory here"}
	case errors.Is(err, unix.ENOTDIR):
		return &UntrustedError{Path: path, Reason: "is not a directory"}
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// mkdirParents is os.MkdirAll(dir, 0755), except that each directory it
// creates is left writable and searchable by its owner whatever the umask:
// under umask 0277 MkdirAll's first directory would be 0500, and a user
// other than root could not create the next one in it.
func mkdirParents(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: unix.ENOTDIR}
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirParents(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o700 != 0o700 {
		return os.Chmod(dir, perm|0o700)
	}
	return nil
}

// plainName refuses a name that is not one path element.
func plainName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%q is not a file name", name)
	}
	return nil
}

// checkWriteDirs checks, before anything changes, every folder of the
// state directory this apply writes in: the backups (resource types write
// them by path below the trusted state directory) and the reports. Each
// is created 0700 when missing and refused, like the state directory,
// when it cannot be trusted.
func (r *run) checkWriteDirs() error {
	for _, name := range []string{filepath.Base(resources.BackupDir(r.state.Path())), reportsDirName} {
		sub, err := r.state.Subdir(name)
		if err != nil {
			return err
		}
		sub.Close()
	}
	return nil
}
