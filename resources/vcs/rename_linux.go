package vcs

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// renameNoReplace names the directory from to, failing when something is
// at to already.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return renameChecked(from, to)
	}
	if err != nil {
		return fmt.Errorf("naming %s %s: %w", from, to, err)
	}
	return nil
}
