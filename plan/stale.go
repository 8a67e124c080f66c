package plan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// RemoveStale removes the plan file at path before a new plan is made, so
// that a plan that fails or is interrupted cannot leave an older plan there
// to be applied by mistake. A missing file is fine. A file that is not a
// toque plan (nor empty) is refused rather than deleted: -out named the
// wrong file. A symbolic link or any other non-regular file is refused too.
func RemoveStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file (%s); refusing to replace it with a plan", path, fi.Mode().Type())
	}
	if fi.Size() > 0 {
		f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
		if err != nil {
			return err
		}
		head := make([]byte, 64)
		n, err := io.ReadFull(f, head)
		f.Close()
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return err
		}
		if !looksLikePlan(head[:n]) {
			return fmt.Errorf("%s exists and is not a toque plan file; refusing to replace it (choose another -out file, or remove it)", path)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the older plan file %s: %w", path, err)
	}
	return nil
}

// LooksLikePlanFile reports whether path is a regular file that starts
// like a plan file (its first bytes hold the envelope's key), without
// reading the rest: what shell completion offers to apply and show.
func LooksLikePlanFile(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return looksLikePlan(head[:n])
}
