// Package trust decides whether a path could be changed by a user other
// than root and the user toque runs as. Root acts on what toque reads and
// writes there: its state directory (the lock, the journal, the reports,
// the backups, the policy cache), the host-wide lock's directory, and the
// trusted keys that say whose plans a host applies. A path another user
// could replace would let that user steer root, so each of them is held to
// the same rules, which live here:
//
//   - every directory above the path, as written and with symbolic links
//     resolved, is owned by root or by toque's user, and writable by
//     others only with the sticky bit (as /tmp), by its group only with
//     the sticky bit or when the group is root's or toque's own
//     (Ancestors);
//   - the thing itself is owned by toque's user (the state directory) or
//     by root or toque's user (a file toque only reads: Owner), and
//     writable by nobody else.
//
// It checks and words; it opens, creates and reads nothing but what it
// stats. Its callers (apply's state directory, plan's trusted keys) open
// what they use without following links where that matters, and check
// the opened descriptor.
package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// UntrustedError is a path toque refuses to use because another user
// could change it. Nothing was changed.
type UntrustedError struct {
	// Path is what was refused; Reason says why ("is owned by uid 65534,
	// not by uid 0, which toque runs as").
	Path   string
	Reason string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("refusing to use %s: it %s", e.Path, e.Reason)
}

// Ancestors checks dir and every directory above it, as written and with
// symbolic links resolved: each must be changeable only by root or by
// toque's user (owned by one of them, and writable by group or others only
// with the sticky bit, or by root's or toque's own group). Missing
// directories are skipped: the caller creates them, or reads nothing
// there. A refusal is an *UntrustedError.
func Ancestors(dir string) error {
	seen := map[string]bool{}
	check := func(p string) error {
		for a := p; ; a = filepath.Dir(a) {
			if !seen[a] {
				seen[a] = true
				if err := ancestor(a); err != nil {
					return err
				}
			}
			if a == filepath.Dir(a) {
				return nil
			}
		}
	}
	if err := check(dir); err != nil {
		return err
	}
	// The deepest existing directory, links resolved: the directories a
	// link leads through must be safe too.
	existing := dir
	for {
		if _, err := os.Lstat(existing); err == nil || existing == filepath.Dir(existing) {
			break
		}
		existing = filepath.Dir(existing)
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", existing, err)
	}
	return check(real)
}

// ancestor checks one directory above a trusted path.
func ancestor(a string) error {
	var st unix.Stat_t
	err := unix.Lstat(a, &st)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "lstat", Path: a, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil // its directory is checked, and where it leads
	}
	euid, egid := os.Geteuid(), os.Getegid()
	sticky := st.Mode&unix.S_ISVTX != 0
	var reason string
	switch {
	case st.Uid != 0 && int(st.Uid) != euid:
		reason = fmt.Sprintf("is owned by %s (neither root nor %s, which toque runs as), so that user could replace what is below it", UIDName(st.Uid), UIDName(uint32(euid)))
	case st.Mode&0o002 != 0 && !sticky:
		reason = fmt.Sprintf("is writable by every user without the sticky bit (mode %04o), so anyone could replace what is below it", st.Mode&0o7777)
	case st.Mode&0o020 != 0 && !sticky && st.Gid != 0 && int(st.Gid) != egid:
		reason = fmt.Sprintf("is writable by group %d (mode %04o), so its members could replace what is below it", st.Gid, st.Mode&0o7777)
	}
	if reason != "" {
		return &UntrustedError{Path: a, Reason: reason}
	}
	return nil
}

// Owner is the reason a file toque only reads, owned by uid with mode
// (a stat's st_mode), cannot be trusted: owned by neither root nor toque's
// user, or writable by its group or others. "" when it can be.
func Owner(uid, mode uint32) string {
	switch {
	case uid != 0 && int(uid) != os.Geteuid():
		return fmt.Sprintf("is owned by %s (neither root nor %s, which toque runs as), so that user could change it", UIDName(uid), UIDName(uint32(os.Geteuid())))
	case mode&0o022 != 0:
		return fmt.Sprintf("is writable by %s (mode %04o)", Writers(mode), mode&0o7777)
	}
	return ""
}

// OwnedBy is the reason a path toque writes, owned by uid, is refused.
func OwnedBy(uid uint32) string {
	return fmt.Sprintf("is owned by %s, not by %s, which toque runs as", UIDName(uid), UIDName(uint32(os.Geteuid())))
}

// UIDName is "uid 65534 (nobody)", or "uid 65534" when the user has no
// name.
func UIDName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return "uid " + id + " (" + u.Username + ")"
	}
	return "uid " + id
}

// Writers names who besides the owner may write a file of mode: "its
// group", "every user", or both.
func Writers(mode uint32) string {
	var w []string
	if mode&0o020 != 0 {
		w = append(w, "its group")
	}
	if mode&0o002 != 0 {
		w = append(w, "every user")
	}
	return strings.Join(w, " and ")
}
