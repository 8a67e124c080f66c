package accounts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/resourcetest"
)

const (
	hashSecret = "$6$toquesalt$B/z3PiLDhw/N3ppNyPd9SHpsFAjF4qI6WvXWusj6bTN1w3XDVcvZeBwPDoEbUu8EbLf2og0ZQ3oC9BlluTbtB0"
	hashOther  = "$6$toquesalt$WzCj0nXyuZS2iQEE5PlIcDhiO3ry6B4aR02ax/bxLUFJG08G.JyIuutLgf2drCXoXmHVG9Py2k0Jams/MVvn01"
	hashYes    = "$y$j9T$abcdefghijklmnop$3dL1LkYnZM.OVXuVdnnaKVDlLYT92dRwOzDZ5XiVCe."
)

// A user's whole life with the real tools: create with every property,
// a second plan is a no-op, one property changes, lock and unlock around
// a password change (which keeps the lock), remove with its home.
func TestUserLifecycle(t *testing.T) {
	root := accountsRoot(t)
	typ, gtyp := newUserType(root), newGroupType(root)
	env := resourcetest.TestEnv(t)
	resourcetest.Apply(t, gtyp, env, resourcetest.NewRes(t, gtyp, "create", map[string]any{"group_name": "toqgrp", "gid": 4300}), resources.Create)

	props := map[string]any{
		"username": "toq", "uid": 4242, "gid": "toqgrp", "comment": "Toque Test",
		"home": "/home/toq", "shell": "/bin/sh", "password": hashSecret,
		"expire_date": "2031-02-03", "inactive": 7, "manage_home": true,
		"min_days": 1, "max_days": 90, "warn_days": 14,
	}
	step := resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", props), resources.Create)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "uid,gid,comment,home,shell,password,expire_date,inactive,min_days,max_days,warn_days" {
		t.Errorf("create changes %s", got)
	}
	if len(step.Provides) != 1 || step.Provides[0] != (resources.Need{Namespace: resources.NamespaceUser, Value: "toq", What: "user"}) {
		t.Errorf("create provides %v", step.Provides)
	}
	if got := dbLine(t, root, "passwd", "toq"); got != "toq:x:4242:4300:Toque Test:/home/toq:/bin/sh" {
		t.Errorf("passwd: %q", got)
	}
	if got := dbLine(t, root, "shadow", "toq"); !strings.HasPrefix(got, "toq:"+hashSecret+":") || !strings.HasSuffix(got, ":7:22313:") {
		t.Errorf("shadow: %q", got)
	}
	if f := strings.Split(dbLine(t, root, "shadow", "toq"), ":"); len(f) != 9 || f[3] != "1" || f[4] != "90" || f[5] != "14" {
		t.Errorf("ageing on create: %q", f)
	}
	if fi, err := os.Stat(filepath.Join(root, "home/toq")); err != nil || !fi.IsDir() {
		t.Errorf("manage_home made no home: %v", err)
	}

	// The gid spelled as a number is the same group.
	props["gid"] = "4300"
	if _, s := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", props)); s.Kind != resources.NoOp {
		t.Errorf("gid by id: %s %s", s.Kind, s.Reason)
	}

	props["shell"] = "/bin/bash"
	step = resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", props), resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "shell" || !step.HasGroup("account") || step.HasGroup("password") {
		t.Errorf("update: changes %s groups %v", got, step.Groups)
	}

	lock := resourcetest.NewRes(t, typ, "lock", map[string]any{"username": "toq"})
	resourcetest.Apply(t, typ, env, lock, resources.Update)
	if got := dbLine(t, root, "shadow", "toq"); !strings.HasPrefix(got, "toq:!"+hashSecret+":") {
		t.Errorf("lock: %q", got)
	}
	// A new password keeps the lock, and says so.
	props["password"] = hashYes
	step = resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", props), resources.Update)
	if !strings.Contains(step.Reason, "stays locked") {
		t.Errorf("reason %q", step.Reason)
	}
	if got := dbLine(t, root, "shadow", "toq"); !strings.HasPrefix(got, "toq:!"+hashYes+":") {
		t.Errorf("password on a locked user: %q", got)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "unlock", map[string]any{"username": "toq"}), resources.Update)
	if got := dbLine(t, root, "shadow", "toq"); !strings.HasPrefix(got, "toq:"+hashYes+":") {
		t.Errorf("unlock: %q", got)
	}

	// Ageing alone is chage's: the account's other fields stay.
	props["max_days"], props["warn_days"] = 60, -1
	step = resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", props), resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "max_days,warn_days" || !step.HasGroup("ageing") || step.HasGroup("account") {
		t.Errorf("ageing: changes %s groups %v", got, step.Groups)
	}
	if f := strings.Split(dbLine(t, root, "shadow", "toq"), ":"); len(f) != 9 || f[3] != "1" || f[4] != "60" || f[5] != "" || f[6] != "7" {
		t.Errorf("ageing on update: %q", f)
	}

	props["expire_date"], props["inactive"] = "never", -1
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", props), resources.Update)
	if got := dbLine(t, root, "shadow", "toq"); !strings.HasSuffix(got, ":1:60::::") {
		t.Errorf("never expires: %q", got)
	}

	rm := resourcetest.NewRes(t, typ, "remove", map[string]any{"username": "toq", "manage_home": true})
	resourcetest.Apply(t, typ, env, rm, resources.Delete)
	if dbLine(t, root, "passwd", "toq") != "" || dbLine(t, root, "shadow", "toq") != "" {
		t.Error("the user is still there")
	}
	if _, err := os.Stat(filepath.Join(root, "home/toq")); !os.IsNotExist(err) {
		t.Errorf("the home is still there: %v", err)
	}
}

// What the actions say on a host where the user does not exist, or is
// already as wanted.
func TestUserActionsPlan(t *testing.T) {
	root := accountsRoot(t)
	typ := newUserType(root)
	env := resourcetest.TestEnv(t)
	ghost := map[string]any{"username": "ghost"}
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "modify", ghost), "user ghost does not exist: modify changes an existing user")
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "lock", ghost), "user ghost does not exist: lock needs an existing user")
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "unlock", ghost), "user ghost does not exist")
	for action, want := range map[string]string{"manage": "does not exist; manage changes an existing user only", "remove": "does not exist"} {
		if _, s := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, action, ghost)); s.Kind != resources.NoOp || s.Reason != want {
			t.Errorf("%s: %s %q", action, s.Kind, s.Reason)
		}
	}

	// Without a password, a new user is locked (useradd's "!"): lock is
	// then nothing to do, unlock an error.
	step := resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "nopw", "gid": "users"}), resources.Create)
	if !strings.Contains(step.Reason, "password stays locked") {
		t.Errorf("reason %q", step.Reason)
	}
	if _, s := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "lock", map[string]any{"username": "nopw"})); s.Kind != resources.NoOp {
		t.Errorf("lock: %s %s", s.Kind, s.Reason)
	}
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "unlock", map[string]any{"username": "nopw"}), "user nopw has no password: unlocking would leave an account anyone could log in to")
	// A password field of "*" (Debian's system accounts) is locked
	// already: no password matches it. unlock cannot give it one.
	before := dbDigest(t, root)
	if _, s := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "lock", map[string]any{"username": "daemon"})); s.Kind != resources.NoOp || !strings.Contains(s.Reason, "locked already") {
		t.Errorf("lock of *: %s %s", s.Kind, s.Reason)
	}
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "unlock", map[string]any{"username": "daemon"}), `user daemon's password field is "*"`)
	if dbDigest(t, root) != before {
		t.Error("the databases changed")
	}
	// manage and modify change only what is set.
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "manage", map[string]any{"username": "nopw", "comment": "No Password"}), resources.Update)
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "modify", map[string]any{"username": "nopw", "comment": "Still None"}), resources.Update)
	if got := dbLine(t, root, "passwd", "nopw"); !strings.Contains(got, ":Still None:") {
		t.Errorf("passwd: %q", got)
	}
}

// The plan refuses what the tools would refuse, or asks an earlier
// resource for it: a taken uid (pointing at the attribute), a primary
// group that does not exist (a need), useradd's own group clashing with
// an existing one.
func TestUserHostChecksInPlan(t *testing.T) {
	root := accountsRoot(t)
	typ := newUserType(root)
	st, err := typ.Load(context.Background(), resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq", "uid": 65534}).LoadView())
	if err != nil {
		t.Fatal(err)
	}
	_, err = resources.PlanStep(typ, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq", "uid": 65534}), st)
	pe, ok := err.(*resources.PropertyError)
	if !ok || pe.Property != "uid" || !strings.Contains(err.Error(), "uid 65534 is taken by user nobody") {
		t.Fatalf("taken uid: %#v", err)
	}
	// nobody itself may keep its uid.
	if _, s := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "nobody", "uid": 65534})); s.Kind != resources.NoOp {
		t.Errorf("nobody's own uid: %s %s", s.Kind, s.Reason)
	}

	_, s := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq", "gid": "later"}))
	if len(s.Needs) != 1 || s.Needs[0] != (resources.Need{Namespace: resources.NamespaceGroup, Value: "later", What: "group"}) {
		t.Errorf("needs %v", s.Needs)
	}
	// A group of the user's name exists, and useradd would make one.
	resourcetest.WriteFile(t, filepath.Join(root, "etc/group"), resourcetest.ReadFile(t, filepath.Join(root, "etc/group"))+"toq:x:4444:\n", 0o644)
	if v, _ := loginDefs(root, "USERGROUPS_ENAB"); strings.EqualFold(v, "yes") {
		resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq"}), `a group named toq exists, and useradd makes a group named like each new user`)
	}
	if _, s := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq", "gid": "toq"})); s.Kind != resources.Create || len(s.Needs) != 0 {
		t.Errorf("with gid: %s %v", s.Kind, s.Needs)
	}
}

// A useradd that fails leaves no trace: the tools write the databases
// whole or not at all. The plan would refuse this uid; Converge is
// called as if someone had taken it between the plan and the apply.
func TestFailingUseraddLeavesNothing(t *testing.T) {
	root := accountsRoot(t)
	typ := newUserType(root)
	r := resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq", "uid": 4242, "home": "/home/toq", "manage_home": true, "password": hashSecret})
	st, step := resourcetest.Plan(t, typ, r)
	resourcetest.WriteFile(t, filepath.Join(root, "etc/passwd"), resourcetest.ReadFile(t, filepath.Join(root, "etc/passwd"))+"thief:x:4242:100::/:/bin/sh\n", 0o644)
	before := dbDigest(t, root)
	err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, st, step)
	if err == nil || !strings.Contains(err.Error(), "useradd") || !strings.Contains(err.Error(), "not unique") {
		t.Fatalf("want useradd's refusal, got %v", err)
	}
	if dbDigest(t, root) != before {
		t.Error("the failed useradd changed the databases")
	}
	if _, err := os.Stat(filepath.Join(root, "home/toq")); !os.IsNotExist(err) {
		t.Errorf("the failed useradd made a home: %v", err)
	}
}

// A create whose password cannot be set is undone: no user is left
// without the password the plan showed.
func TestFailingPasswordUndoesCreate(t *testing.T) {
	root := accountsRoot(t)
	typ := newUserType(root)
	before := dbDigest(t, root)
	chpasswdProgram = "false"
	defer func() { chpasswdProgram = "chpasswd" }()
	r := resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq", "password": hashSecret, "manage_home": true})
	st, step := resourcetest.Plan(t, typ, r)
	err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, st, step)
	if err == nil || !strings.Contains(err.Error(), "the user toq was removed again, so nothing was changed") || strings.Contains(err.Error(), hashSecret) {
		t.Fatalf("got %v", err)
	}
	if dbDigest(t, root) != before {
		t.Errorf("the databases changed:\n%s", resourcetest.ReadFile(t, filepath.Join(root, "etc/passwd")))
	}
	if _, err := os.Stat(filepath.Join(root, "home/toq")); !os.IsNotExist(err) {
		t.Errorf("the home is left: %v", err)
	}
}

// action = ["create", "lock"] plans the lock from the state the create
// leaves: with a password, the lock locks; without, nothing to do.
func TestUserPredictsTheLock(t *testing.T) {
	// As root, whoever runs the tests: this is what root's plan says.
	defer func(f func() int) { hostexec.EffectiveUID = f }(hostexec.EffectiveUID)
	hostexec.EffectiveUID = func() int { return 0 }
	typ := newUserType(t.TempDir())
	for _, c := range []struct {
		password bool
		want     resources.Kind
	}{{true, resources.Update}, {false, resources.NoOp}} {
		vals := map[string]any{"username": "toq"}
		if c.password {
			vals["password"] = hashSecret
		}
		r := resourcetest.NewRes(t, typ, "create", vals)
		st := &resources.State{Exists: false, Values: map[string]cty.Value{}, Extra: map[string]string{}}
		step, err := resources.PlanStep(typ, r, st)
		if err != nil {
			t.Fatal(err)
		}
		next, err := resources.Predict(typ, r, st, step)
		if err != nil {
			t.Fatal(err)
		}
		lockStep, err := resources.PlanStep(typ, r.WithAction("lock"), next)
		if err != nil || lockStep.Kind != c.want {
			t.Errorf("password %v: lock plans %v %v, want %s", c.password, lockStep, err, c.want)
		}
	}
}

// Not root: the plan refuses work on accounts, and a password it cannot
// read.
func TestUserPlanNeedsRoot(t *testing.T) {
	defer func(f func() int) { hostexec.EffectiveUID = f }(hostexec.EffectiveUID)
	hostexec.EffectiveUID = func() int { return 1000 }
	typ := newUserType(t.TempDir())
	r := resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq"})
	if _, err := resources.PlanStep(typ, r, resources.Absent()); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("create as uid 1000: %v", err)
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{"shell": cty.StringVal("/bin/sh")}, Extra: map[string]string{"shadow": "/etc/shadow may be read only by root"}}
	r = resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq", "password": hashSecret})
	if _, err := resources.PlanStep(typ, r, st); err == nil || !strings.Contains(err.Error(), "reading the password and expiry of user toq") {
		t.Errorf("password unreadable: %v", err)
	}
	r = resourcetest.NewRes(t, typ, "create", map[string]any{"username": "toq", "shell": "/bin/sh"})
	if s, err := resources.PlanStep(typ, r, st); err != nil || s.Kind != resources.NoOp {
		t.Errorf("no-op as uid 1000: %v %v", s, err)
	}
}

func TestUserPropertyValidation(t *testing.T) {
	typ := UserType()
	s := typ.Schema()
	cases := []struct {
		prop string
		v    cty.Value
		want string // "" valid
	}{
		{"username", cty.StringVal("deploy"), ""},
		{"username", cty.StringVal("first.last"), ""},
		{"username", cty.StringVal("samba$"), ""},
		{"username", cty.StringVal("123"), "is not valid"},
		{"username", cty.StringVal("-x"), "is not valid"},
		{"username", cty.StringVal("a:b"), "is not valid"},
		{"username", cty.StringVal(strings.Repeat("a", 33)), "longer than 32"},
		{"uid", cty.NumberIntVal(0), ""},
		{"uid", cty.NumberIntVal(4294967294), ""},
		{"uid", cty.NumberIntVal(4294967295), "out of range"},
		{"uid", cty.NumberIntVal(-1), "out of range"},
		{"uid", cty.NumberFloatVal(1.5), "out of range"},
		{"gid", cty.StringVal("users"), ""},
		{"gid", cty.StringVal("100"), ""},
		{"gid", cty.StringVal("99999999999"), "out of range"},
		{"comment", cty.StringVal("A: B"), "must not contain"},
		{"comment", cty.StringVal("two\nlines"), "must not contain"},
		{"home", cty.StringVal("home/x"), "not an absolute path"},
		{"home", cty.StringVal("/home/a:b"), "must not contain"},
		{"password", cty.StringVal(hashSecret), ""},
		{"password", cty.StringVal(hashYes), ""},
		{"password", cty.StringVal("$5$s$oCJQ8pz2oyl6hgzly.hQ0W7Sgcl8Kr7EadnBpVm7huD"), ""},
		{"password", cty.StringVal("$2b$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"), ""},
		{"password", cty.StringVal("hunter2"), "not the password itself"},
		{"password", cty.StringVal("correct horse"), "not the password itself"},
		{"password", cty.StringVal("abcdefghijklm"), "DES crypt hash"},
		{"password", cty.StringVal(""), "empty password"},
		{"password", cty.StringVal("!" + hashSecret), "use the lock action"},
		{"password", cty.StringVal("$6$salt$short"), "not a well-formed $6$"},
		{"password", cty.StringVal("$9$x$y"), "scheme toque does not know"},
		{"inactive", cty.NumberIntVal(-1), ""},
		{"inactive", cty.NumberIntVal(-2), "out of range"},
		{"max_days", cty.NumberFloatVal(1.5), "max_days 1.5 is out of range"},
		{"warn_days", cty.NumberIntVal(100000), "out of range"},
	}
	for _, c := range cases {
		p := s.Property(c.prop)
		v := c.v
		var err error
		if p.Normalize != nil {
			v, err = p.Normalize(v)
		}
		if err == nil && p.Validate != nil {
			err = p.Validate(v)
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s = %#v: %v", c.prop, c.v, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s = %#v: error %v, want %q", c.prop, c.v, err, c.want)
		case err != nil && c.prop == "password" && c.v.AsString() != "" && strings.Contains(err.Error(), c.v.AsString()):
			t.Errorf("the password error quotes the value: %v", err)
		}
	}
	for in, want := range map[string]string{"2030-1-2": "error", "2030-01-02": "2030-01-02", " never ": "never", "1970-01-01": "error"} {
		v, err := normalizeExpireDate(cty.StringVal(in))
		if got := "error"; err == nil {
			got = v.AsString()
			if got != want {
				t.Errorf("expire_date %q: %q, want %q", in, got, want)
			}
		} else if want != "error" {
			t.Errorf("expire_date %q: %v", in, err)
		}
	}
}

// The plan's host checks: a shell that is not there, a home that is a
// file.
func TestUserHostChecks(t *testing.T) {
	dir := t.TempDir()
	resourcetest.WriteFile(t, filepath.Join(dir, "file"), "x", 0o644)
	for _, c := range []struct {
		check func(cty.Value) error
		v     string
		want  string
	}{
		{checkShell, "/bin/sh", ""},
		{checkShell, filepath.Join(dir, "nosuch"), "does not exist on this host"},
		{checkShell, filepath.Join(dir, "file"), "is not executable"},
		{checkShell, dir, "is a directory, not a program"},
		{checkHome, dir, ""},
		{checkHome, filepath.Join(dir, "nosuch"), ""},
		{checkHome, filepath.Join(dir, "file"), "exists and is not a directory (it is a file)"},
	} {
		err := c.check(cty.StringVal(c.v))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.v, err, c.want)
		}
	}
}

// LoadAll reads the databases once for many users and gets each right.
func TestUserLoadAll(t *testing.T) {
	root := accountsRoot(t)
	typ := newUserType(root)
	rs := []*resources.Resource{
		resourcetest.NewRes(t, typ, "create", map[string]any{"username": "nobody", "gid": "nogroup"}).LoadView(),
		resourcetest.NewRes(t, typ, "create", map[string]any{"username": "ghost"}).LoadView(),
		resourcetest.NewRes(t, typ, "create", map[string]any{"username": "root", "gid": "0"}).LoadView(),
	}
	sts, err := typ.LoadAll(context.Background(), rs)
	if err != nil || len(sts) != 3 {
		t.Fatal(sts, err)
	}
	if !sts[0].Exists || sts[0].Values["gid"].AsString() != "nogroup" || sts[0].Values["home"].AsString() != "/nonexistent" || sts[0].Extra["locked"] != "false" {
		t.Errorf("nobody: %#v", sts[0])
	}
	if sts[1].Exists {
		t.Errorf("ghost exists")
	}
	if sts[2].Values["gid"].AsString() != "0" || sts[2].Values["password"].AsString() != "*" {
		t.Errorf("root: %#v", sts[2])
	}
}

// non_unique lets a user share another's uid (useradd and usermod
// --non-unique), which is otherwise a plan error; force removes with
// userdel --force. With the real shadow tools.
func TestUserNonUniqueAndForce(t *testing.T) {
	root := accountsRoot(t)
	typ := newUserType(root)
	env := resourcetest.TestEnv(t)
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "ann", "uid": 4500, "gid": "users"}), resources.Create)

	twin := map[string]any{"username": "bob", "uid": 4500, "gid": "users"}
	r := resourcetest.NewRes(t, typ, "create", twin)
	st, err := typ.Load(context.Background(), r.LoadView())
	if err != nil {
		t.Fatal(err)
	}
	var pe *resources.PropertyError
	if _, err := resources.PlanStep(typ, r, st); !errors.As(err, &pe) || pe.Property != "uid" || !strings.Contains(err.Error(), "taken by user ann") || !strings.Contains(err.Error(), "non_unique = true") {
		t.Fatalf("a taken uid: %v", err)
	}
	twin["non_unique"] = true
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", twin), resources.Create)
	if got := dbLine(t, root, "passwd", "bob"); !strings.HasPrefix(got, "bob:x:4500:") {
		t.Errorf("passwd: %q", got)
	}
	// And usermod: cid moves onto the shared uid.
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "cid", "uid": 4501, "gid": "users"}), resources.Create)
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "cid", "uid": 4500, "gid": "users", "non_unique": true}), resources.Update)
	if got := dbLine(t, root, "passwd", "cid"); !strings.HasPrefix(got, "cid:x:4500:") {
		t.Errorf("passwd: %q", got)
	}

	// userdel keeps a user's own group (USERGROUPS_ENAB) while it is
	// another user's primary group, and --force removes it anyway.
	for _, force := range []bool{false, true} {
		resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "zed"}), resources.Create)
		resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", map[string]any{"username": "yan", "gid": "zed"}), resources.Create)
		rm := resourcetest.NewRes(t, typ, "remove", map[string]any{"username": "zed", "force": force})
		_, step := resourcetest.Plan(t, typ, rm)
		if got := strings.Contains(step.Reason, "even while it is logged in (force)"); step.Kind != resources.Delete || got != force {
			t.Errorf("remove (force %v): %s %q", force, step.Kind, step.Reason)
		}
		resourcetest.Apply(t, typ, env, rm, resources.Delete)
		if got := dbLine(t, root, "passwd", "zed"); got != "" {
			t.Errorf("zed is still there: %q", got)
		}
		if kept := dbLine(t, root, "group", "zed") != ""; kept == force {
			t.Errorf("force %v: group zed kept %v", force, kept)
		}
		resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "remove", map[string]any{"username": "yan"}), resources.Delete)
		if force {
			break
		}
		resourcetest.WriteFile(t, filepath.Join(root, "etc/group"), strings.ReplaceAll(resourcetest.ReadFile(t, filepath.Join(root, "etc/group")), dbLine(t, root, "group", "zed")+"\n", ""), 0o644)
		resourcetest.WriteFile(t, filepath.Join(root, "etc/gshadow"), strings.ReplaceAll(resourcetest.ReadFile(t, filepath.Join(root, "etc/gshadow")), dbLine(t, root, "gshadow", "zed")+"\n", ""), 0o640)
	}
}
