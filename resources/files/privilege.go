package files

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// privilegeError says why toque, as the user it runs as, could not carry
// out a file-system step on path, or nil: giving a file to another owner
// needs root; giving it a group toque's user is not in needs root;
// changing the mode of a file toque's user does not own needs root;
// creating or replacing needs write permission on the directory
// (current.dirUnwritable, from Load).
func privilegeError(step *resources.Step, current *resources.State, path string) error {
	euid := hostexec.EffectiveUID()
	if euid == 0 || step == nil || !step.Kind.IsWork() || step.Kind == resources.Run {
		return nil
	}
	for _, c := range step.Changes {
		switch c.Property {
		case "owner":
			name := props.StringOr(c.After)
			if uid, err := props.LookupUID(name); err == nil && uid != euid {
				return hostexec.NeedsRoot(fmt.Sprintf("giving %s to owner %s", path, name))
			}
		case "group":
			name := props.StringOr(c.After)
			if gid, err := props.LookupGID(name); err == nil && !hostexec.MemberOf(gid) {
				return hostexec.NeedsRoot(fmt.Sprintf("giving %s to group %s", path, name))
			}
		case "mode":
			if current.Exists && fsr(current).ownerKnown && fsr(current).ownerUID != euid {
				return hostexec.NeedsRoot(fmt.Sprintf("changing the mode of %s, which uid %d owns,", path, fsr(current).ownerUID))
			}
		}
	}
	if fsr(current).dirUnwritable != "" && (step.Kind == resources.Create || step.Kind == resources.Delete || step.Changes != nil && hasWrite(step)) {
		return &resources.NeedsRootError{Reason: fmt.Sprintf("%s: toque runs as uid %d, which may not write the directory %s; run it as root, or choose a directory it may write", path, euid, fsr(current).dirUnwritable)}
	}
	return nil
}

// hasWrite reports whether an update rewrites the file (its content), which
// toque does by renaming a new file into the directory.
func hasWrite(step *resources.Step) bool {
	for _, g := range step.Groups {
		if g == "content" {
			return true
		}
	}
	return false
}

// dirWritable reports whether toque's effective user may create and remove
// entries in the held directory d.
func dirWritable(d *heldDir) bool {
	if d == nil || d.fd < 0 {
		return true // nothing held: the need for the directory says it
	}
	return unix.Faccessat(d.fd, ".", unix.W_OK|unix.X_OK, unix.AT_EACCESS) == nil
}
