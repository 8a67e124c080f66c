package systemd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/resourcetest"
)

// offlineRoot is a root directory for systemctl --root (tier A: the real
// systemctl and systemd-analyze, on unit files in a temp dir; nothing
// runs): /etc/systemd/system and /usr/lib/systemd/system, empty.
func offlineRoot(t *testing.T) *systemd {
	t.Helper()
	testenv.MustHave(t, testenv.Systemctl)
	root := t.TempDir()
	for _, d := range []string{"etc/systemd/system", "usr/lib/systemd/system"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &systemd{root: root}
}

// vendorUnit writes a unit under /usr/lib/systemd/system of the root, as
// a package would.
func vendorUnit(t *testing.T, sd *systemd, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(sd.root, "usr/lib/systemd/system", name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const demoUnit = "[Unit]\nDescription=toque demo\n\n[Service]\nExecStart=/bin/sleep 1000\n\n[Install]\nWantedBy=multi-user.target\n"

// converge plans r's action from current and converges it, failing the
// test on error; it returns the step.
func converge(t *testing.T, typ resources.Type, env *resources.Env, r *resources.Resource) *resources.Step {
	t.Helper()
	st, step := resourcetest.Plan(t, typ, r)
	if err := resources.ConvergeStep(context.Background(), typ, env, r, st, step); err != nil {
		t.Fatalf("Converge %s (%s): %v", r.Address(), r.Action, err)
	}
	return step
}

func TestUnitNames(t *testing.T) {
	cases := []struct {
		in, norm string
		err      string // in validateServiceName's error; "" valid
	}{
		{"nginx", "nginx.service", ""},
		{"nginx.service", "nginx.service", ""},
		{"docker.socket", "docker.socket", ""},
		{"getty@tty1.service", "getty@tty1.service", ""},
		{`systemd-fsck@dev-disk-by\x2dlabel-root.service`, `systemd-fsck@dev-disk-by\x2dlabel-root.service`, ""},
		{"getty@.service", "getty@.service", "is a template"},
		{"/etc/systemd/system/web.service", "/etc/systemd/system/web.service", `is a path, not a unit name: name the unit ("web.service")`},
		{"web server", "web server.service", "which systemd does not allow"},
		{"a@b@c.service", "a@b@c.service", "more than one @"},
		{".service", ".service.service", ""},
		{"", "", "must not be empty"},
		{strings.Repeat("x", 250), strings.Repeat("x", 250) + ".service", "255"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			n, err := normalizeServiceName(cty.StringVal(c.in))
			if err != nil || n.AsString() != c.norm {
				t.Fatalf("normalize(%q) = %v, %v; want %q", c.in, n, err, c.norm)
			}
			err = validateServiceName(n)
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("validate(%q) = %v, want %q", n.AsString(), err, c.err)
			}
		})
	}
	if templateOf("getty@tty1.service") != "getty@.service" || templateOf("getty@.service") != "" || templateOf("cron.service") != "" {
		t.Error("templateOf")
	}
}

func TestRenderUnitINI(t *testing.T) {
	obj := cty.ObjectVal
	s := cty.StringVal
	cases := []struct {
		name string
		in   cty.Value
		want string // "" when err
		err  string
	}{
		{"sections in systemd's order, keys by name, lists repeat", obj(map[string]cty.Value{
			"Install": obj(map[string]cty.Value{"WantedBy": s("multi-user.target")}),
			"Service": obj(map[string]cty.Value{
				"ExecStart":       cty.TupleVal([]cty.Value{s(""), s("/usr/bin/web --port 80")}),
				"Environment":     cty.ListVal([]cty.Value{s("A=1"), s("B=two words")}),
				"Restart":         s("always"),
				"Nice":            cty.NumberIntVal(-5),
				"CPUWeight":       cty.NumberFloatVal(1.5),
				"NoNewPrivileges": cty.True,
				"User":            cty.NullVal(cty.String),
			}),
			"Unit":    obj(map[string]cty.Value{"Description": s("web"), "After": cty.TupleVal([]cty.Value{s("network.target"), s("a.service")})}),
			"X-Toque": obj(map[string]cty.Value{"Note": s("x")}),
		}), "[Unit]\nAfter=network.target\nAfter=a.service\nDescription=web\n\n" +
			"[Service]\nCPUWeight=1.5\nEnvironment=A=1\nEnvironment=B=two words\nExecStart=\nExecStart=/usr/bin/web --port 80\nNice=-5\nNoNewPrivileges=true\nRestart=always\n\n" +
			"[X-Toque]\nNote=x\n\n[Install]\nWantedBy=multi-user.target\n", ""},
		{"a map of maps", cty.MapVal(map[string]cty.Value{"Service": cty.MapVal(map[string]cty.Value{"ExecStart": s("/bin/true")})}),
			"[Service]\nExecStart=/bin/true\n", ""},
		{"a string is the file", s("[Service]\nExecStart=/bin/true"), "[Service]\nExecStart=/bin/true", ""},
		{"a line break in a value", obj(map[string]cty.Value{"Service": obj(map[string]cty.Value{"ExecStart": s("/bin/a\n/bin/b")})}), "", "Service.ExecStart: the value \"/bin/a\\n/bin/b\" has a line break"},
		{"a nested object", obj(map[string]cty.Value{"Service": obj(map[string]cty.Value{"Env": obj(map[string]cty.Value{"A": s("1")})})}), "", "Service.Env: a value must be a string, number, bool or a list of them, not object"},
		{"a key systemd cannot read", obj(map[string]cty.Value{"Service": obj(map[string]cty.Value{"Exec Start": s("x")})}), "", "is not a key systemd reads"},
		{"a section that is not an object", obj(map[string]cty.Value{"Service": s("ExecStart=/bin/true")}), "", "section Service must be an object of keys"},
		{"a number", cty.NumberIntVal(3), "", "content must be a string (the unit file) or an object of sections, not number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := normalizeUnitContent(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, %v; want error %q", got, err, c.err)
				}
				return
			}
			if err != nil || got.AsString() != c.want {
				t.Fatalf("got %v\n%q\nwant\n%q", err, got.AsString(), c.want)
			}
		})
	}
}

// The plan of each service action from a unit's status: no I/O, so a
// table of readings.
func TestPlanUnitAction(t *testing.T) {
	type st = unitStatus
	on := func(load, active, sub, file string) st {
		return st{Load: load, Active: active, Sub: sub, File: file, CanReload: "yes"}
	}
	running := on("loaded", "active", "running", "enabled")
	stopped := on("loaded", "inactive", "dead", "disabled")
	missing := on("not-found", "inactive", "dead", "")
	missing.CanReload = "no" // as systemd says of a unit it does not find
	offline := st{Load: "loaded", File: "disabled", Offline: "systemd is not running as the init system (PID 1) here"}
	noReload := running
	noReload.CanReload = "no"
	changed := stopped
	changed.NeedReload = true
	user := stopped
	user.NotRoot = "uid 1000"
	cases := []struct {
		action string
		u      st
		kind   resources.Kind
		reason string // in the reason, or in the error when kind is ""
		needs  bool
	}{
		{"enable", stopped, resources.Update, "disabled: enable enables it", false},
		{"enable", running, resources.NoOp, "already enabled", false},
		{"enable", on("loaded", "inactive", "dead", "static"), resources.NoOp, "static: its unit file has no [Install] section", false},
		{"enable", missing, resources.Update, "not on the host yet (an earlier resource of this plan creates it)", true},
		{"enable", on("masked", "inactive", "dead", "masked"), "", "is masked (linked to /dev/null), so enabling it would fail: add unmask before enable", false},
		{"enable", offline, resources.Update, "disabled: enable enables it", false},
		{"disable", running, resources.Update, "enabled: disable disables it", false},
		{"disable", stopped, resources.NoOp, "already disabled", false},
		{"disable", missing, resources.NoOp, "not found: nothing to disable", false},
		{"mask", missing, resources.Update, "mask links it to /dev/null", false},
		{"mask", on("masked", "inactive", "dead", "masked"), resources.NoOp, "already masked", false},
		{"unmask", on("masked", "inactive", "dead", "masked"), resources.Update, "masked: unmask removes the link", false},
		{"unmask", stopped, resources.NoOp, "not masked", false},
		{"start", stopped, resources.Update, "inactive (dead): start starts it", false},
		{"start", running, resources.NoOp, "already active (running)", false},
		{"start", changed, resources.Update, "toque runs systemctl daemon-reload first", false},
		{"start", missing, resources.Update, "not on the host yet", true},
		{"start", offline, "", "cannot start web.service: systemd is not running as the init system (PID 1) here. toque can enable, disable, mask and unmask units here", false},
		{"start", st{Load: "bad-setting", Active: "inactive", LoadError: "bad ExecStart"}, "", "systemd cannot load web.service (bad-setting: bad ExecStart)", false},
		{"stop", running, resources.Update, "active (running): stop stops it", false},
		{"stop", stopped, resources.NoOp, "already inactive (dead)", false},
		{"stop", missing, resources.NoOp, "not found: nothing to stop", false},
		{"stop", offline, "", "cannot stop web.service", false},
		{"restart", running, resources.Run, "restart runs on every apply", false},
		{"restart", stopped, resources.Run, "inactive (dead): restart starts it", false},
		{"restart", missing, resources.Run, "not on the host yet", true},
		{"reload", running, resources.Run, "reload runs on every apply", false},
		{"reload", stopped, resources.NoOp, "not running: nothing to reload; it is inactive (dead)", false},
		{"reload", on("loaded", "failed", "failed", "enabled"), resources.NoOp, "not running: nothing to reload; it is failed", false},
		{"reload", on("loaded", "activating", "start", "enabled"), resources.Run, "reload runs on every apply", false},
		{"reload", missing, resources.Run, "not on the host yet (an earlier resource of this plan creates it): reload runs then", true},
		{"reload", st{Load: "loaded", File: "disabled", CanReload: "yes"}, resources.Run, "whether it runs is known only at apply", false},
		{"reload", noReload, "", "cannot reload its configuration (it has no ExecReload=): use restart", false},
		{"reload", offline, "", "cannot reload web.service", false},
		{"start", user, "", "inactive (dead): start starts it: changing a system unit needs root, and toque runs as uid 1000: run it as root", false},
		{"stop", user, resources.NoOp, "already inactive (dead)", false},
	}
	for _, c := range cases {
		t.Run(c.action+" "+c.u.Load+" "+c.u.Active+" "+c.u.File, func(t *testing.T) {
			cur := unitState(c.u)
			step, err := planUnitAction(c.action, "web.service", cur)
			if c.kind == "" {
				if err == nil || !strings.Contains(err.Error(), c.reason) {
					t.Fatalf("got %+v, %v; want error %q", step, err, c.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if step.Kind != c.kind || !strings.Contains(step.Reason, c.reason) {
				t.Errorf("got %s %q, want %s %q", step.Kind, step.Reason, c.kind, c.reason)
			}
			if got := len(step.Needs) == 1 && step.Needs[0].Namespace == resources.NamespaceUnit && step.Needs[0].Value == "web.service"; got != c.needs {
				t.Errorf("needs %+v, want the unit: %v", step.Needs, c.needs)
			}
			// The state it leaves, planned again, needs nothing more
			// (restart and reload run every time).
			next := predictUnit(c.action, cur, step)
			again, err := planUnitAction(c.action, "web.service", next)
			if err != nil {
				t.Fatal(err)
			}
			if again.Kind != resources.NoOp && again.Kind != resources.Run && step.Kind.IsWork() && !c.needs {
				t.Errorf("after %s, a second %s plans %s %q", c.action, c.action, again.Kind, again.Reason)
			}
		})
	}
}

// systemd_unit's whole life on real unit files, offline (systemctl
// --root): create and enable, a second plan that does nothing, a change
// of content, start refused (nothing runs there), a unit systemd-analyze
// rejects, disable, mask and unmask, delete.
func TestSystemdUnitOffline(t *testing.T) {
	sd := offlineRoot(t)
	typ := newSystemdUnitType(sd)
	env := resourcetest.TestEnv(t)
	ctx := context.Background()
	content := cty.ObjectVal(map[string]cty.Value{
		"Unit":    cty.ObjectVal(map[string]cty.Value{"Description": cty.StringVal("toque demo")}),
		"Service": cty.ObjectVal(map[string]cty.Value{"ExecStart": cty.StringVal("/bin/sleep 1000")}),
		"Install": cty.ObjectVal(map[string]cty.Value{"WantedBy": cty.StringVal("multi-user.target")}),
	})
	unit := func(action string, vals map[string]any) *resources.Resource {
		return resourcetest.BuildRes(t, typ, "toque-demo.service", action, vals)
	}
	path := filepath.Join(sd.root, "etc/systemd/system/toque-demo.service")

	// create, then enable from the state create leaves.
	create := unit("create", map[string]any{"content": content})
	st, step := resourcetest.Plan(t, typ, create)
	if step.Kind != resources.Create || step.Change("content") == nil || len(step.Changes) != 1 || len(step.Provides) != 1 || step.Provides[0] != (resources.Need{Namespace: resources.NamespaceUnit, Value: "toque-demo.service", What: "unit"}) {
		t.Fatalf("create: %+v", step)
	}
	if st.Extra[extraLoadState] != "not-found" || !strings.HasPrefix(st.Extra[extraOffline], "offline: ") {
		t.Errorf("reading %v", st.Extra)
	}
	next, _ := typ.Predict(create, st, step)
	enable := unit("enable", map[string]any{"content": content})
	if es, err := resources.PlanStep(typ, enable, next); err != nil || es.Kind != resources.Update || len(es.Needs) != 0 {
		t.Fatalf("enable after create: %+v, %v", es, err)
	}
	converge(t, typ, env, create)
	if got, _ := os.ReadFile(path); string(got) != demoUnit {
		t.Fatalf("unit file %q, want %q", got, demoUnit)
	}
	converge(t, typ, env, enable)
	if l, err := os.Readlink(filepath.Join(sd.root, "etc/systemd/system/multi-user.target.wants/toque-demo.service")); err != nil || l != "/etc/systemd/system/toque-demo.service" {
		t.Fatalf("enable made no link: %q, %v", l, err)
	}
	// A second plan does nothing.
	for _, r := range []*resources.Resource{create, enable} {
		if _, step := resourcetest.Plan(t, typ, r); step.Kind != resources.NoOp {
			t.Errorf("second plan of %s: %s %q", r.Action, step.Kind, step.Reason)
		}
	}
	// Change one property.
	changed := unit("create", map[string]any{"content": strings.Replace(demoUnit, "1000", "2000", 1)})
	if _, step := resourcetest.Plan(t, typ, changed); step.Kind != resources.Update || step.Reason != "content differs" {
		t.Fatalf("changed content: %s %q", step.Kind, step.Reason)
	}
	converge(t, typ, env, changed)
	if got, _ := os.ReadFile(path); !strings.Contains(string(got), "sleep 2000") {
		t.Fatalf("unit file not updated: %q", got)
	}
	if b, err := files.BackupsOf(env.StateDir, path); err != nil || !dirHasFiles(b) {
		t.Errorf("no backup of the old unit file in %s (%v)", b, err)
	}
	// Nothing runs under --root: start is a plan error that says so.
	resourcetest.PlanErr(t, typ, unit("start", nil), "cannot start toque-demo.service: toque manages the unit files under "+sd.root)
	// A unit systemd rejects is a plan error with systemd's message.
	resourcetest.PlanErr(t, typ, unit("create", map[string]any{"content": "[Service]\nExecStart=/no/such/program\n"}),
		"systemd-analyze verify rejects the content of toque-demo.service: toque-demo.service: Command /no/such/program is not executable")
	if _, step := resourcetest.Plan(t, typ, unit("create", map[string]any{"content": "[Service]\nExecStart=/no/such/program\n", "verify": false})); step.Kind != resources.Update {
		t.Errorf("verify = false: %s", step.Kind)
	}
	// disable; systemctl cannot mask a unit whose file is in /etc.
	if step := converge(t, typ, env, unit("disable", nil)); step.Kind != resources.Update {
		t.Errorf("disable: %s %q", step.Kind, step.Reason)
	}
	if _, step := resourcetest.Plan(t, typ, unit("disable", nil)); step.Kind != resources.NoOp {
		t.Errorf("second disable: %s %q", step.Kind, step.Reason)
	}
	out, _ := exec.CommandContext(ctx, "systemctl", "--root="+sd.root, "is-enabled", "toque-demo.service").Output()
	if strings.TrimSpace(string(out)) != "disabled" {
		t.Errorf("is-enabled says %q", out)
	}
	resourcetest.PlanErr(t, typ, unit("mask", nil), "has its unit file in /etc/systemd/system, where mask would put its link to /dev/null")
	// Remove.
	if step := converge(t, typ, env, unit("delete", nil)); step.Kind != resources.Delete {
		t.Fatalf("delete: %s", step.Kind)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("unit file still there: %v", err)
	}
	if st, step := resourcetest.Plan(t, typ, unit("delete", nil)); step.Kind != resources.NoOp || st.Extra[extraLoadState] != "not-found" {
		t.Errorf("second delete: %s, %v", step.Kind, st.Extra)
	}
	// Now mask (a unit need not exist to be masked), and unmask.
	for _, a := range []string{"mask", "unmask"} {
		if step := converge(t, typ, env, unit(a, nil)); step.Kind != resources.Update {
			t.Errorf("%s: %s %q", a, step.Kind, step.Reason)
		}
		if _, step := resourcetest.Plan(t, typ, unit(a, nil)); step.Kind != resources.NoOp {
			t.Errorf("second %s: %s %q", a, step.Kind, step.Reason)
		}
		if a == "mask" {
			resourcetest.PlanErr(t, typ, create, "toque-demo.service is masked ("+path+" is a link to /dev/null): add unmask before create")
		}
	}
}

func dirHasFiles(dir string) bool {
	es, err := os.ReadDir(dir)
	return err == nil && len(es) > 0
}

// service reads every unit of a plan with one systemctl call (offline:
// list-unit-files), tells a unit it lacks (needed from an earlier
// resource, or nothing to do for stop and disable), and reads an
// instance's enablement.
func TestServiceOffline(t *testing.T) {
	sd := offlineRoot(t)
	vendorUnit(t, sd, "cron.service", demoUnit)
	vendorUnit(t, sd, "static.service", "[Service]\nExecStart=/bin/true\n")
	vendorUnit(t, sd, "getty@.service", demoUnit)
	typ := newServiceType(sd)
	env := resourcetest.TestEnv(t)
	calls := countCalls(t, "systemctl")

	rs := []*resources.Resource{
		resourcetest.BuildRes(t, typ, "cron.service", "enable", nil),
		resourcetest.BuildRes(t, typ, "static.service", "enable", nil),
		resourcetest.BuildRes(t, typ, "missing.service", "enable", nil),
		resourcetest.BuildRes(t, typ, "getty@tty1.service", "enable", nil),
		resourcetest.BuildRes(t, typ, "cron.service", "start", nil), // a unit named twice
	}
	views := make([]*resources.Resource, len(rs))
	for i, r := range rs {
		views[i] = r.LoadView()
	}
	sts, err := typ.LoadAll(context.Background(), views)
	if err != nil {
		t.Fatal(err)
	}
	if n := calls(); n != 2 {
		t.Errorf("%d systemctl processes, want 2: list-unit-files for all, is-enabled for the instance", n)
	}
	want := []string{"loaded disabled", "loaded static", "not-found ", "loaded disabled", "loaded disabled"}
	for i, st := range sts {
		if got := st.Extra[extraLoadState] + " " + st.Extra[extraFileState]; got != want[i] {
			t.Errorf("%s: %q, want %q", rs[i].Address(), got, want[i])
		}
	}
	step, err := resources.PlanStep(typ, rs[2], sts[2])
	if err != nil || step.Kind != resources.Update || len(step.Needs) != 1 || !strings.Contains(step.Needs[0].Missing, "The unit missing.service is not on this host") {
		t.Errorf("enable of a missing unit: %+v, %v", step, err)
	}
	if _, step := resourcetest.Plan(t, typ, resourcetest.BuildRes(t, typ, "missing.service", "disable", nil)); step.Kind != resources.NoOp {
		t.Errorf("disable of a missing unit: %s", step.Kind)
	}
	converge(t, typ, env, rs[3])
	if _, step := resourcetest.Plan(t, typ, rs[3]); step.Kind != resources.NoOp || step.Reason != "already enabled" {
		t.Errorf("instance after enable: %s %q", step.Kind, step.Reason)
	}
}

// countCalls puts a wrapper of name first in PATH that counts its calls
// and runs the real one; the function returns the count so far.
func countCalls(t *testing.T, name string) func() int {
	t.Helper()
	real, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho x >> %s\nexec %s \"$@\"\n", log, real)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() int {
		b, _ := os.ReadFile(log)
		n := strings.Count(string(b), "x\n")
		os.Remove(log)
		return n
	}
}

// systemctl show's output, as systemd 252 prints it for a running unit, a
// unit it does not find and one it cannot load.
func TestParseShow(t *testing.T) {
	out := `Id=web.service
LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=enabled
CanReload=yes
NeedDaemonReload=yes
LoadError=

Id=nope.service
LoadState=not-found
ActiveState=inactive
SubState=dead
UnitFileState=
CanReload=no
NeedDaemonReload=no
LoadError=org.freedesktop.systemd1.NoSuchUnit "Unit nope.service not found."

Id=bad.service
LoadState=bad-setting
ActiveState=inactive
SubState=dead
UnitFileState=disabled
CanReload=no
NeedDaemonReload=no
LoadError=org.freedesktop.systemd1.BadUnitSetting "Unit bad.service has a bad unit file setting."
`
	got, err := parseShow(out, []string{"web.service", "nope.service", "bad.service"})
	if err != nil {
		t.Fatal(err)
	}
	want := []unitStatus{
		{Load: "loaded", Active: "active", Sub: "running", File: "enabled", CanReload: "yes", NeedReload: true},
		{Load: "not-found", Active: "inactive", Sub: "dead", CanReload: "no"},
		{Load: "bad-setting", Active: "inactive", Sub: "dead", File: "disabled", CanReload: "no", LoadError: `org.freedesktop.systemd1.BadUnitSetting "Unit bad.service has a bad unit file setting."`},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := parseShow(out, []string{"web.service"}); err == nil {
		t.Error("three blocks for one unit: want an error")
	}
}
