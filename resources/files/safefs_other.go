//go:build unix && !linux

package files

import "golang.org/x/sys/unix"

// Off Linux there is no O_PATH, openat2 or RENAME_NOREPLACE: directories
// are held open for reading, the walk is always step by step, and a
// rename that must not replace is a link and an unlink. toque is built
// and tested on Linux; this keeps it building elsewhere.
const oPath = unix.O_RDONLY

func openat2NoSymlinks(string) (int, error) { return -1, unix.ENOSYS }

func renameNoReplace(dfd int, from, to string) error {
	return renameNoReplaceFallback(dfd, from, to)
}

// openNoFollow cannot open a symbolic link itself here.
func openNoFollow(dfd int, name string) (int, error) { return -1, unix.ENOSYS }

func chownFd(fd int, uid, gid int) error { return unix.Fchown(fd, uid, gid) }

func touchFd(fd int) error { return unix.Futimes(fd, nil) }

func reserve(int, int64) error { return unix.ENOTSUP }

// syncFS is not available here: staged files are synced one by one.
func syncFS(int) error { return errNoSyncFS }
