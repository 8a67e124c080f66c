package resources

import (
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"
)

// What toque may do depends on who runs it: root may chown, write any
// directory and run a command as anyone; another user may not. The plan
// checks it, so that apply never fails half-way on a permission the plan
// could have seen missing. These are variables so tests can pretend.
var (
	effectiveUID = sync.OnceValue(os.Geteuid) // asked once: it does not change while toque runs
	// memberOf reports whether toque's user may give files group gid:
	// its effective group, or one of its supplementary groups.
	memberOf = func(gid int) bool {
		if gid == os.Getegid() {
			return true
		}
		groups, err := os.Getgroups()
		return err == nil && slices.Contains(groups, gid)
	}
)

// needsRoot words a permission only root has.
func needsRoot(what string) error {
	return fmt.Errorf("%s needs root, and toque runs as uid %d: run it as root (or leave the property out)", what, effectiveUID())
}

// CheckRunAsUser is a HostCheck for the user a command runs as: the user
// must exist, and running as another user than toque's needs root.
func CheckRunAsUser(v cty.Value) error {
	if err := CheckUser(v); err != nil || !v.IsKnown() || v.IsNull() {
		return err
	}
	uid, err := LookupUID(v.AsString())
	if err != nil {
		return err
	}
	if euid := effectiveUID(); euid != 0 && uid != euid {
		return needsRoot(fmt.Sprintf("running a command as user %s", v.AsString()))
	}
	return nil
}

// CheckRunAsGroup is a HostCheck for the group a command runs as: the
// group must exist, and one toque's user is not a member of needs root.
func CheckRunAsGroup(v cty.Value) error {
	if err := CheckGroup(v); err != nil || !v.IsKnown() || v.IsNull() {
		return err
	}
	gid, err := LookupGID(v.AsString())
	if err != nil {
		return err
	}
	if effectiveUID() != 0 && !memberOf(gid) {
		return needsRoot(fmt.Sprintf("running a command in group %s", v.AsString()))
	}
	return nil
}

// privilegeError says why toque, as the user it runs as, could not carry
// out a file-system step on path, or nil: giving a file to another owner
// needs root; giving it a group toque's user is not in needs root;
// changing the mode of a file toque's user does not own needs root;
// creating or replacing needs write permission on the directory
// (current.dirUnwritable, from Load).
func privilegeError(step *Step, current *State, path string) error {
	euid := effectiveUID()
	if euid == 0 || step == nil || !step.Kind.IsWork() || step.Kind == Run {
		return nil
	}
	for _, c := range step.Changes {
		switch c.Property {
		case "owner":
			name := stringOr(c.After)
			if uid, err := LookupUID(name); err == nil && uid != euid {
				return needsRoot(fmt.Sprintf("giving %s to owner %s", path, name))
			}
		case "group":
			name := stringOr(c.After)
			if gid, err := LookupGID(name); err == nil && !memberOf(gid) {
				return needsRoot(fmt.Sprintf("giving %s to group %s", path, name))
			}
		case "mode":
			if current.Exists && fsr(current).ownerKnown && fsr(current).ownerUID != euid {
				return needsRoot(fmt.Sprintf("changing the mode of %s, which uid %d owns,", path, fsr(current).ownerUID))
			}
		}
	}
	if fsr(current).dirUnwritable != "" && (step.Kind == Create || step.Kind == Delete || step.Changes != nil && hasWrite(step)) {
		return fmt.Errorf("%s: toque runs as uid %d, which may not write the directory %s; run it as root, or choose a directory it may write", path, euid, fsr(current).dirUnwritable)
	}
	return nil
}

// stringOr is v's string, "" when v is not a known string.
func stringOr(v cty.Value) string {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// hasWrite reports whether an update rewrites the file (its content), which
// toque does by renaming a new file into the directory.
func hasWrite(step *Step) bool {
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
