package files

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
)

func TestPrivilegeError(t *testing.T) {
	oldUID, oldMember := hostexec.EffectiveUID, hostexec.MemberOf
	defer func() { hostexec.EffectiveUID, hostexec.MemberOf = oldUID, oldMember }()
	hostexec.EffectiveUID = func() int { return 1000 }
	hostexec.MemberOf = func(gid int) bool { return gid == 1000 }

	owned := func(uid int) *resources.State {
		return &resources.State{Exists: true, Local: &fsReading{ownerUID: uid, ownerKnown: true}}
	}
	step := func(kind resources.Kind, prop string, after cty.Value) *resources.Step {
		return &resources.Step{Kind: kind, Changes: []resources.Change{{Property: prop, After: after}}, Groups: []string{prop}}
	}
	cases := []struct {
		name    string
		step    *resources.Step
		current *resources.State
		want    string
	}{
		{"chown to root", step(resources.Update, "owner", cty.StringVal("root")), owned(1000), "giving /x to owner root needs root"},
		{"chown to itself", step(resources.Update, "owner", cty.StringVal("1000")), owned(1000), ""},
		{"chgrp to a group it is not in", step(resources.Update, "group", cty.StringVal("0")), owned(1000), "giving /x to group 0 needs root"},
		{"chgrp to its own group", step(resources.Update, "group", cty.StringVal("1000")), owned(1000), ""},
		{"chmod a file it does not own", step(resources.Update, "mode", cty.StringVal("0644")), owned(0), "changing the mode of /x, which uid 0 owns, needs root"},
		{"chmod its own file", step(resources.Update, "mode", cty.StringVal("0644")), owned(1000), ""},
		{"create in a closed directory", &resources.Step{Kind: resources.Create}, &resources.State{Local: &fsReading{dirUnwritable: "/etc"}}, "may not write the directory /etc"},
		{"rewrite in a closed directory", step(resources.Update, "content", cty.StringVal("x")), &resources.State{Exists: true, Local: &fsReading{ownerUID: 1000, ownerKnown: true, dirUnwritable: "/etc"}}, "may not write the directory /etc"},
		{"a no-op", &resources.Step{Kind: resources.NoOp}, &resources.State{Local: &fsReading{dirUnwritable: "/etc"}}, ""},
	}
	for _, c := range cases {
		err := privilegeError(c.step, c.current, "/x")
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	hostexec.EffectiveUID = func() int { return 0 }
	if err := privilegeError(step(resources.Update, "owner", cty.StringVal("root")), owned(5), "/x"); err != nil {
		t.Errorf("root may chown: %v", err)
	}
}
