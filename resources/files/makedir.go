//go:build unix

package files

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// MakeDir makes the directory at the canonical path (whose parent must
// exist), reached as the file types reach a path — its parent held, no
// link followed that another user could have planted — with mode and
// owner (uid, gid; -1 keeps toque's), set through a descriptor of the new
// directory. It reports whether it made it: false, and nothing changed,
// when a directory is there already; anything else there is an error.
// For types of other families that make a directory to work in (git).
func MakeDir(path string, mode uint32, uid, gid int) (bool, error) {
	d, name, err := holdParent(path)
	if err != nil {
		return false, parentError(path, "create it with a directory resource", err)
	}
	defer d.close()
	err = unix.Mkdirat(d.fd, name, 0o700)
	if errors.Is(err, unix.EEXIST) {
		st, _, serr := statAt(d, name)
		if serr != nil {
			return false, serr
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return false, fmt.Errorf("%s is %s, not a directory", path, kindOf(uint32(st.Mode)))
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("making %s: %w", path, err)
	}
	f, _, err := openAt(d, name, unix.O_RDONLY, unix.S_IFDIR, fileID{})
	if err != nil {
		return true, err
	}
	defer f.Close()
	if err := chownFile(f, ownership{uid: uid, gid: gid}); err != nil {
		return true, err
	}
	return true, chmodFile(f, mode)
}
