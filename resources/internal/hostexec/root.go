package hostexec

import (
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/toquehq/toque/resources"
)

// What toque may do depends on who runs it: root may chown, write any
// directory and run a command as anyone; another user may not. The plan
// checks it, so that apply never fails half-way on a permission the plan
// could have seen missing. These are variables so tests can pretend.
var (
	EffectiveUID = sync.OnceValue(os.Geteuid) // asked once: it does not change while toque runs
	// MemberOf reports whether toque's user may give files group gid:
	// its effective group, or one of its supplementary groups.
	MemberOf = func(gid int) bool {
		if gid == os.Getegid() {
			return true
		}
		groups, err := os.Getgroups()
		return err == nil && slices.Contains(groups, gid)
	}
)

// NeedsRoot words a permission only root has, as a
// *resources.NeedsRootError.
func NeedsRoot(what string) error {
	return &resources.NeedsRootError{Reason: fmt.Sprintf("%s needs root, and toque runs as uid %d: run it as root (or leave the property out)", what, EffectiveUID())}
}
