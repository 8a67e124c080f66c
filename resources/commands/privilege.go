package commands

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// CheckRunAsUser is a HostCheck for the user a command runs as: the user
// must exist, and running as another user than toque's needs root.
func CheckRunAsUser(v cty.Value) error {
	if err := props.CheckUser(v); err != nil || !v.IsKnown() || v.IsNull() {
		return err
	}
	uid, err := props.LookupUID(v.AsString())
	if err != nil {
		return err
	}
	if euid := hostexec.EffectiveUID(); euid != 0 && uid != euid {
		return hostexec.NeedsRoot(fmt.Sprintf("running a command as user %s", v.AsString()))
	}
	return nil
}

// CheckRunAsGroup is a HostCheck for the group a command runs as: the
// group must exist, and one toque's user is not a member of needs root.
func CheckRunAsGroup(v cty.Value) error {
	if err := props.CheckGroup(v); err != nil || !v.IsKnown() || v.IsNull() {
		return err
	}
	gid, err := props.LookupGID(v.AsString())
	if err != nil {
		return err
	}
	if hostexec.EffectiveUID() != 0 && !hostexec.MemberOf(gid) {
		return hostexec.NeedsRoot(fmt.Sprintf("running a command in group %s", v.AsString()))
	}
	return nil
}
