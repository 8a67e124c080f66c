package files

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// oPath opens a directory only to hold it: search permission is enough.
const oPath = unix.O_PATH

// noOpenat2 is set once openat2 turned out to be missing (Linux before
// 5.6) or forbidden (a seccomp filter): the walk goes step by step then.
var noOpenat2 atomic.Bool

// openat2NoSymlinks opens the directory at the absolute path dir in one
// call that fails if any component is a symbolic link. Any error sends the
// caller to the step-by-step walk, which decides about symbolic links and
// names a missing directory precisely.
func openat2NoSymlinks(dir string) (int, error) {
	if noOpenat2.Load() {
		return -1, unix.ENOSYS
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.E2BIG) {
		noOpenat2.Store(true)
	}
	return fd, err
}

// renameNoReplace renames from to to within the directory dfd, failing
// with EEXIST when to exists.
func renameNoReplace(dfd int, from, to string) error {
	err := unix.Renameat2(dfd, from, dfd, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// Not supported by this kernel or file system.
		return renameNoReplaceFallback(dfd, from, to)
	}
	return err
}

// openNoFollow opens name in dfd as an O_PATH descriptor of the entry
// itself, a symbolic link included, for chownFd.
func openNoFollow(dfd int, name string) (int, error) {
	return unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// chownFd changes the owner of what fd (from openNoFollow) refers to, a
// symbolic link itself included.
func chownFd(fd int, uid, gid int) error {
	return unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH)
}

// touchFd sets the access and modification times of fd's file to now
// (futimens).
func touchFd(fd int) error {
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// reserve allocates the blocks of the first n bytes of fd's file without
// changing its size (fallocate FALLOC_FL_KEEP_SIZE), so that writing them
// cannot run out of space.
func reserve(fd int, n int64) error {
	return unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 0, n)
}

// syncFS makes everything written to the file system of fd durable
// (syncfs(2)): one flush for a whole group of staged files (stage.go).
func syncFS(fd int) error { return unix.Syncfs(fd) }
