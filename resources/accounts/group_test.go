package accounts

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// A group's life with the real tools: create with a gid and members,
// no-op, members set exactly, members appended (others kept), gid
// changed, remove. gshadow's member list follows /etc/group's.
func TestGroupLifecycle(t *testing.T) {
	root := accountsRoot(t)
	typ, utyp := newGroupType(root), newUserType(root)
	env := resourcetest.TestEnv(t)
	for _, u := range []string{"ann", "bob", "cid"} {
		resourcetest.Apply(t, utyp, env, resourcetest.NewRes(t, utyp, "create", map[string]any{"username": u, "gid": "users"}), resources.Create)
	}
	props := map[string]any{"group_name": "crew", "gid": 4300, "members": []string{"bob", "ann", "bob"}}
	step := resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", props), resources.Create)
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
	step = resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", props), resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "members" {
		t.Errorf("changes %s", got)
	}
	if got := dbLine(t, root, "group", "crew"); got != "crew:x:4300:bob,cid" {
		t.Errorf("exact members: %q", got)
	}

	// Appended: ann comes back, bob and cid stay; the live members shown
	// are only those the recipe names.
	app := map[string]any{"group_name": "crew", "members": []string{"ann"}, "append": true}
	st, step := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", app))
	if got := strings.Join(stringsOf(st.Values["members"]), ","); got != "" {
		t.Errorf("append: live members %q, want none of the recipe's", got)
	}
	if !strings.Contains(step.Reason, "append = true adds ann and keeps the other members") {
		t.Errorf("reason %q", step.Reason)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", app), resources.Update)
	if got := dbLine(t, root, "group", "crew"); got != "crew:x:4300:bob,cid,ann" {
		t.Errorf("appended: %q", got)
	}

	props = map[string]any{"group_name": "crew", "gid": 4301}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "modify", props), resources.Update)
	if got := dbLine(t, root, "group", "crew"); !strings.HasPrefix(got, "crew:x:4301:") {
		t.Errorf("gid: %q", got)
	}

	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "remove", map[string]any{"group_name": "crew"}), resources.Delete)
	if dbLine(t, root, "group", "crew") != "" || dbLine(t, root, "gshadow", "crew") != "" {
		t.Error("the group is still there")
	}
}

// The plan refuses a gid another group has (at the attribute), and asks
// an earlier resource for members that are no user.
func TestGroupHostChecksInPlan(t *testing.T) {
	root := accountsRoot(t)
	typ := newGroupType(root)
	r := resourcetest.NewRes(t, typ, "create", map[string]any{"group_name": "crew", "gid": 100})
	st := resourcetest.Load(t, typ, r)
	_, err := resources.PlanStep(typ, r, st)
	if pe, ok := err.(*resources.PropertyError); !ok || pe.Property != "gid" || !strings.Contains(err.Error(), "gid 100 is taken by group users") {
		t.Fatalf("taken gid: %v", err)
	}
	_, step := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"group_name": "crew", "members": []string{"nobody", "zed", "amy"}}))
	var needs []string
	for _, n := range step.Needs {
		needs = append(needs, n.Namespace+":"+n.Value)
	}
	if got := strings.Join(needs, ","); got != "user:amy,user:zed" {
		t.Errorf("needs %s", got)
	}
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "modify", map[string]any{"group_name": "crew"}), "group crew does not exist: modify changes an existing group")
	if _, s := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "manage", map[string]any{"group_name": "crew"})); s.Kind != resources.NoOp {
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
	r := resourcetest.NewRes(t, typ, "create", map[string]any{"group_name": "crew", "members": []string{"zed"}})
	step, err := resources.PlanStep(typ, r, resources.Absent())
	if err != nil {
		t.Fatal(err)
	}
	err = resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, resources.Absent(), step)
	if err == nil || !strings.Contains(err.Error(), "gpasswd") || !strings.Contains(err.Error(), "the group crew was removed again") {
		t.Fatalf("got %v", err)
	}
	if dbDigest(t, root) != before {
		t.Errorf("the databases changed:\n%s", resourcetest.ReadFile(t, filepath.Join(root, "etc/group")))
	}
	r = resourcetest.NewRes(t, typ, "create", map[string]any{"group_name": "crew", "gid": 100})
	step, _ = resources.PlanStep(typ, r, resources.Absent())
	if err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, resources.Absent(), step); err == nil || !strings.Contains(err.Error(), "groupadd") {
		t.Fatalf("got %v", err)
	}
	if dbDigest(t, root) != before {
		t.Error("the failed groupadd changed the databases")
	}
}

// excluded_members, with append = true, takes users out of a group when
// they are in it (Chef's), shown as members leaving; it is an error
// without append, and for a user also in members.
func TestGroupExcludedMembers(t *testing.T) {
	root := accountsRoot(t)
	typ, utyp := newGroupType(root), newUserType(root)
	env := resourcetest.TestEnv(t)
	for _, u := range []string{"ann", "bob", "cid", "dan"} {
		resourcetest.Apply(t, utyp, env, resourcetest.NewRes(t, utyp, "create", map[string]any{"username": u, "gid": "users"}), resources.Create)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", map[string]any{"group_name": "crew", "gid": 4400, "members": []string{"ann", "bob", "dan"}}), resources.Create)

	// eve is no member (nor user): nothing to take out for her.
	out := map[string]any{"group_name": "crew", "append": true, "excluded_members": []string{"dan", "eve"}}
	_, step := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", out))
	c := step.Change("members")
	if step.Kind != resources.Update || c == nil || stringsOf(c.Before)[0] != "dan" || len(stringsOf(c.After)) != 0 {
		t.Fatalf("step %s %+v", step.Kind, step.Changes)
	}
	if !strings.Contains(step.Reason, "takes out dan (excluded_members)") {
		t.Errorf("reason %q", step.Reason)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", out), resources.Update)
	if got := dbLine(t, root, "group", "crew"); got != "crew:x:4400:ann,bob" {
		t.Errorf("group: %q", got)
	}
	if got := dbLine(t, root, "gshadow", "crew"); !strings.HasSuffix(got, ":ann,bob") {
		t.Errorf("gshadow: %q", got)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", out), resources.NoOp)

	// Adding and taking out at once; ann, named by neither, stays.
	both := map[string]any{"group_name": "crew", "append": true, "members": []string{"cid"}, "excluded_members": []string{"bob"}}
	_, step = resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", both))
	if !strings.Contains(step.Reason, "adds cid, takes out bob (excluded_members)") {
		t.Errorf("reason %q", step.Reason)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", both), resources.Update)
	if got := dbLine(t, root, "group", "crew"); got != "crew:x:4400:ann,cid" {
		t.Errorf("group: %q", got)
	}

	for _, bad := range []struct {
		props map[string]any
		want  string
	}{
		{map[string]any{"group_name": "crew", "members": []string{"ann"}, "excluded_members": []string{"bob"}}, "only with append = true"},
		{map[string]any{"group_name": "crew", "append": true, "members": []string{"ann"}, "excluded_members": []string{"ann"}}, "ann is in members and in excluded_members"},
	} {
		r := resourcetest.NewRes(t, typ, "create", bad.props)
		st, err := typ.Load(context.Background(), r.LoadView())
		if err != nil {
			t.Fatal(err)
		}
		_, err = resources.PlanStep(typ, r, st)
		var pe *resources.PropertyError
		if !errors.As(err, &pe) || pe.Property != "excluded_members" || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: got %v", bad.props, err)
		}
	}
}
