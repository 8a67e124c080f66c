package vcs

import (
	"fmt"
	"os"
)

// renameChecked is renameNoReplace where the kernel cannot refuse to
// replace: it checks first (a directory made in between is replaced only
// when empty, as rename(2) does).
func renameChecked(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("naming %s %s: something appeared there since the plan; nothing was replaced", from, to)
	}
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("naming %s %s: %w", from, to, err)
	}
	return nil
}
