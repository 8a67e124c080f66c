package resources

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestPrivilegeError(t *testing.T) {
	oldUID, oldMember := effectiveUID, memberOf
	defer func() { effectiveUID, memberOf = oldUID, oldMember }()
	effectiveUID = func() int { return 1000 }
	memberOf = func(gid int) bool { return gid == 1000 }

	owned := func(uid int) *State {
		return &State{Exists: true, Local: &fsReading{ownerUID: uid, ownerKnown: true}}
	}
	step := func(kind Kind, prop string, after cty.Value) *Step {
		return &Step{Kind: kind, Changes: []Change{{Property: prop, After: after}}, Groups: []string{prop}}
	}
	cases := []struct {
		name    string
		step    *Step
		current *State
		want    string
	}{
		{"chown to root", step(Update, "owner", cty.StringVal("root")), owned(1000), "giving /x to owner root needs root"},
		{"chown to itself", step(Update, "owner", cty.StringVal("1000")), owned(1000), ""},
		{"chgrp to a group it is not in", step(Update, "group", cty.StringVal("0")), owned(1000), "giving /x to group 0 needs root"},
		{"chgrp to its own group", step(Update, "group", cty.StringVal("1000")), owned(1000), ""},
		{"chmod a file it does not own", step(Update, "mode", cty.StringVal("0644")), owned(0), "changing the mode of /x, which uid 0 owns, needs root"},
		{"chmod its own file", step(Update, "mode", cty.StringVal("0644")), owned(1000), ""},
		{"create in a closed directory", &Step{Kind: Create}, &State{Local: &fsReading{dirUnwritable: "/etc"}}, "may not write the directory /etc"},
		{"rewrite in a closed directory", step(Update, "content", cty.StringVal("x")), &State{Exists: true, Local: &fsReading{ownerUID: 1000, ownerKnown: true, dirUnwritable: "/etc"}}, "may not write the directory /etc"},
		{"a no-op", &Step{Kind: NoOp}, &State{Local: &fsReading{dirUnwritable: "/etc"}}, ""},
	}
	for _, c := range cases {
		err := privilegeError(c.step, c.current, "/x")
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	effectiveUID = func() int { return 0 }
	if err := privilegeError(step(Update, "owner", cty.StringVal("root")), owned(5), "/x"); err != nil {
		t.Errorf("root may chown: %v", err)
	}
}

func TestCheckRunAs(t *testing.T) {
	old := effectiveUID
	defer func() { effectiveUID = old }()
	effectiveUID = func() int { return 65534 }
	if err := CheckRunAsUser(cty.StringVal("root")); err == nil || !strings.Contains(err.Error(), "running a command as user root needs root") {
		t.Errorf("as nobody, run as root: %v", err)
	}
	if err := CheckRunAsUser(cty.StringVal("nobody")); err != nil {
		t.Errorf("as nobody, run as nobody: %v", err)
	}
	effectiveUID = func() int { return 0 }
	if err := CheckRunAsUser(cty.StringVal("nobody")); err != nil {
		t.Errorf("as root: %v", err)
	}
	if err := CheckRunAsUser(cty.StringVal("no-such-user-xyz")); err == nil {
		t.Error("an unknown user passes")
	}
}
