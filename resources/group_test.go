package resources

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A group's life with the real tools: create with a gid and members,
// no-op, members set exactly, members appended (others kept), gid
// changed, remove. gshadow's member list follows /etc/group's.
func TestGroupLifecycle(t *testing.T) {
	root := accountsRoot(t)
	typ, utyp := newGroupType(root), newUserType(root)
	env := testEnv(t)
	for _, u := range []string{"ann", "bob", "cid"} {
		apply(t, utyp, env, newRes(t, utyp, "create", map[string]any{"username": u, "gid": "users"}), Create)
	}
	props := map[string]any{"group_name": "crew", "gid": 4300, "members": []string{"bob", "ann", "bob"}}
	step := apply(t, typ, env, newRes(t, typ, "create", props), Create)
	if len(step.Provides) != 2 || step.Provides[1].Value != "4300" {
		t.Errorf("provides %v", step.Provides)
	}
	if got := dbLine(t, root, "group", "crew"); got != "crew:x:4300:ann,bob" {
		t.Errorf("group: %q", got)
	}
	if got := dbLine(t, root, "gshadow", "crew"); !strings.HasSuffix(got, ":ann,bob") {
		t.Errorf("gshadow: %q", got)
	}

	// Exactly: cid replaces ann.
	props["members"] = []string{"bob", "cid"}
	step = apply(t, typ, env, newRes(t, typ, "create", props), Update)
	if got := strings.Join(changedProps(step), ","); got != "members" {
		t.Errorf("changes %s", got)
	}
	if got := dbLine(t, root, "group", "crew"); got != "crew:x:4300:bob,cid" {
		t.Errorf("exact members: %q", got)
	}

	// Appended: ann comes back, bob and cid stay; the live members shown
	// are only those the recipe names.
	app := map[string]any{"group_name": "crew", "members": []string{"ann"}, "append": true}
	st, step := plan(t, typ, newRes(t, typ, "create", app))
	if got := strings.Join(stringsOf(st.Values["members"]), ","); got != "" {
		t.Errorf("append: live members %q, want none of the recipe's", got)
	}
	if !strings.Contains(step.Reason, "append = true adds ann and keeps the other members") {
		t.Errorf("reason %q", step.Reason)
	}
	apply(t, typ, env, newRes(t, typ, "create", app), Update)
	if got := dbLine(t, root, "group", "crew"); got != "crew:x:4300:bob,cid,ann" {
		t.Errorf("appended: %q", got)
	}

	props = map[string]any{"group_name": "crew", "gid": 4301}
	apply(t, typ, env, newRes(t, typ, "modify", props), Update)
	if got := dbLine(t, root, "group", "crew"); !strings.HasPrefix(got, "crew:x:4301:") {
		t.Errorf("gid: %q", got)
	}

	apply(t, typ, env, newRes(t, typ, "remove", map[string]any{"group_name": "crew"}), Delete)
	if dbLine(t, root, "group", "crew") != "" || dbLine(t, root, "gshadow", "crew") != "" {
		t.Error("the group is still there")
	}
}

// The plan refuses a gid another group has (at the attribute), and asks
// an earlier resource for members that are no user.
func TestGroupHostChecksInPlan(t *testing.T) {
	root := accountsRoot(t)
	typ := newGroupType(root)
	r := newRes(t, typ, "create", map[string]any{"group_name": "crew", "gid": 100})
	st := load(t, typ, r)
	_, err := typ.Plan(r, st)
	if pe, ok := err.(*PropertyError); !ok || pe.Property != "gid" || !strings.Contains(err.Error(), "gid 100 is taken by group users") {
		t.Fatalf("taken gid: %v", err)
	}
	_, step := plan(t, typ, newRes(t, typ, "create", map[string]any{"group_name": "crew", "members": []string{"nobody", "zed", "amy"}}))
	var needs []string
	for _, n := range step.Needs {
		needs = append(needs, n.Namespace+":"+n.Value)
	}
	if got := strings.Join(needs, ","); got != "user:amy,user:zed" {
		t.Errorf("needs %s", got)
	}
	planErr(t, typ, newRes(t, typ, "modify", map[string]any{"group_name": "crew"}), "group crew does not exist: modify changes an existing group")
	if _, s := plan(t, typ, newRes(t, typ, "manage", map[string]any{"group_name": "crew"})); s.Kind != NoOp {
		t.Errorf("manage: %s", s.Kind)
	}
}

// A create whose members cannot be set is undone; a failing groupadd
// leaves nothing.
func TestFailingGroupCreateLeavesNothing(t *testing.T) {
	root := accountsRoot(t)
	typ := newGroupType(root)
	before := dbDigest(t, root)
	// Planned while zed existed; gone at apply.
	r := newRes(t, typ, "create", map[string]any{"group_name": "crew", "members": []string{"zed"}})
	step, err := typ.Plan(r, Absent())
	if err != nil {
		t.Fatal(err)
	}
	err = typ.Converge(context.Background(), testEnv(t), r, Absent(), step)
	if err == nil || !strings.Contains(err.Error(), "gpasswd") || !strings.Contains(err.Error(), "the group crew was removed again") {
		t.Fatalf("got %v", err)
	}
	if dbDigest(t, root) != before {
		t.Errorf("the databases changed:\n%s", readFile(t, filepath.Join(root, "etc/group")))
	}
	r = newRes(t, typ, "create", map[string]any{"group_name": "crew", "gid": 100})
	step, _ = typ.Plan(r, Absent())
	if err := typ.Converge(context.Background(), testEnv(t), r, Absent(), step); err == nil || !strings.Contains(err.Error(), "groupadd") {
		t.Fatalf("got %v", err)
	}
	if dbDigest(t, root) != before {
		t.Error("the failed groupadd changed the databases")
	}
}
