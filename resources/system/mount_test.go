package system

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// fstab lines toque does not manage are kept byte for byte: comments,
// blank lines, tabs, a missing final newline; the managed entry keeps its
// place, its duplicates go, a new one is appended.
func TestFstabEdit(t *testing.T) {
	text := "# /etc/fstab: static file system information.\n\nUUID=abc\t/\text4\terrors=remount-ro 0 1\n  # swap was on /dev/sda5\n/dev/sda5 none swap sw 0 0\ntmpfs /srv/my\\040data tmpfs defaults 0 0\ntmpfs /srv/my\\040data/ tmpfs ro"
	f := parseFstab(text)
	if f.String() != text {
		t.Fatalf("round trip:\n%q\n%q", f.String(), text)
	}
	srv := func(e *fstabEntry) bool { return sameMountPoint(e.mountPoint, "/srv/my data") }
	if idx := f.find(srv); len(idx) != 2 || f.linesAt(idx) != "tmpfs /srv/my\\040data tmpfs defaults 0 0\ntmpfs /srv/my\\040data/ tmpfs ro\n" {
		t.Errorf("found %v", idx)
	}
	e := f.lines[5].entry
	if e.device != "tmpfs" || e.mountPoint != "/srv/my data" || !slices.Equal(e.options, []string{"defaults"}) || e.pass != 0 {
		t.Errorf("entry %+v", e)
	}
	if e := f.lines[6].entry; e.dump != 0 || e.pass != 0 || !slices.Equal(e.options, []string{"ro"}) {
		t.Errorf("short entry %+v", e)
	}
	line := (&fstabEntry{device: "tmpfs", mountPoint: "/srv/my data", fstype: "tmpfs", options: []string{"nodev", "nosuid"}, pass: 0}).format()
	if line != `tmpfs /srv/my\040data tmpfs nodev,nosuid 0 0` {
		t.Errorf("format %q", line)
	}
	want := "# /etc/fstab: static file system information.\n\nUUID=abc\t/\text4\terrors=remount-ro 0 1\n  # swap was on /dev/sda5\n/dev/sda5 none swap sw 0 0\n" + line
	if got := f.withEntry(srv, line); got != want {
		t.Errorf("replaced:\n%q\nwant\n%q", got, want)
	}
	if got := f.withEntry(srv, ""); got != "# /etc/fstab: static file system information.\n\nUUID=abc\t/\text4\terrors=remount-ro 0 1\n  # swap was on /dev/sda5\n/dev/sda5 none swap sw 0 0" {
		t.Errorf("removed: %q", got)
	}
	other := func(e *fstabEntry) bool { return sameMountPoint(e.mountPoint, "/var") }
	if got := f.withEntry(other, "tmpfs /var tmpfs defaults 0 0"); got != text+"\ntmpfs /var tmpfs defaults 0 0\n" {
		t.Errorf("appended: %q", got)
	}
	if got := parseFstab("").withEntry(other, "tmpfs /var tmpfs defaults 0 0"); got != "tmpfs /var tmpfs defaults 0 0\n" {
		t.Errorf("into nothing: %q", got)
	}
	if got := fstabUnescape(`a\040b\134c\9d\`); got != `a b\c\9d\` {
		t.Errorf("unescape %q", got)
	}
}

const sampleMountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
25 22 0:23 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,inode64
40 22 0:30 / /srv/my\040data rw,noatime master:7 - tmpfs my\040tmp rw,size=1024k,mode=755
41 40 0:31 /sub /srv/my\040data ro,nosuid,nodev,noexec,relatime - tmpfs other rw,sync,size=2048k
`

func TestMountinfo(t *testing.T) {
	ms, err := parseMountinfo(sampleMountinfo)
	if err != nil {
		t.Fatal(err)
	}
	m, n := topMount(ms, "/srv/my data")
	if n != 2 || m.source != "other" || m.root != "/sub" || m.dev != "0:31" {
		t.Fatalf("top %+v of %d", m, n)
	}
	if got := strings.Join(m.options(), ","); got != "ro,nosuid,nodev,noexec,relatime,sync,size=2048k" {
		t.Errorf("options %s", got)
	}
	if m, _ := topMount(ms, "/"); m.source != "/dev/sda1" || m.fstype != "ext4" {
		t.Errorf("root %+v", m)
	}
	if _, err := parseMountinfo("1 2 3\n"); err == nil {
		t.Error("a short line parsed")
	}
}

// What is in effect is what the kernel shows; a remount passes every
// per-mount flag (the kernel clears those it is not given).
func TestMountOptions(t *testing.T) {
	ms, _ := parseMountinfo(sampleMountinfo)
	shm, _ := topMount(ms, "/dev/shm")
	for _, c := range []struct {
		opts    []string
		missing string
		args    string
		after   string
	}{
		{[]string{"nodev", "nosuid"}, "", "rw,nosuid,nodev,strictatime", "rw,nosuid,nodev,inode64"},
		{[]string{"defaults", "nodev", "nofail", "x-systemd.automount"}, "suid", "rw,nodev,strictatime", "rw,nodev,inode64"},
		{[]string{"nodev", "nosuid", "noexec"}, "noexec", "rw,nosuid,nodev,noexec,strictatime", "rw,nosuid,nodev,noexec,inode64"},
		{[]string{"ro", "relatime", "size=1m"}, "ro, relatime, size=1m", "ro,nosuid,nodev,relatime,size=1m", "ro,nosuid,nodev,relatime,inode64,size=1m"},
		{[]string{"sync", "inode64"}, "sync", "rw,nosuid,nodev,strictatime,sync,inode64", "rw,nosuid,nodev,sync,inode64"},
		{[]string{"bind", "noexec"}, "noexec", "bind,rw,nosuid,nodev,noexec,strictatime", "rw,nosuid,nodev,noexec,inode64"},
	} {
		if got := strings.Join(notInEffect(c.opts, shm), ", "); got != c.missing {
			t.Errorf("%v: not in effect %q, want %q", c.opts, got, c.missing)
		}
		args, mo, so := remountOf(c.opts, shm)
		if got := strings.Join(args, ","); got != c.args {
			t.Errorf("%v: remount %s, want %s", c.opts, got, c.args)
		}
		if got := strings.Join((&mountInfo{mountOpts: mo, superOpts: so}).options(), ","); got != c.after {
			t.Errorf("%v: after %s, want %s", c.opts, got, c.after)
		}
	}
	// hidepid is shown by name: the number is the same option.
	proc := &mountInfo{mountPoint: "/proc", source: "proc", fstype: "proc", mountOpts: []string{"rw", "nosuid", "nodev", "noexec", "relatime"}, superOpts: []string{"rw"}}
	if got := notInEffect([]string{"nosuid", "hidepid=2"}, proc); !slices.Equal(got, []string{"hidepid=2"}) {
		t.Errorf("hidepid not set: %v", got)
	}
	if _, mo, so := remountOf([]string{"hidepid=2"}, proc); !slices.Equal((&mountInfo{mountOpts: mo, superOpts: so}).options(), []string{"rw", "nosuid", "nodev", "noexec", "relatime", "hidepid=invisible"}) {
		t.Errorf("after a remount with hidepid=2: %v", so)
	}
	proc.superOpts = []string{"rw", "hidepid=invisible"}
	for _, opts := range [][]string{{"hidepid=2"}, {"hidepid=invisible"}} {
		if got := notInEffect(opts, proc); len(got) != 0 {
			t.Errorf("%v on hidepid=invisible: %v not in effect", opts, got)
		}
	}
	if got := notInEffect([]string{"hidepid=1"}, proc); !slices.Equal(got, []string{"hidepid=1"}) {
		t.Errorf("hidepid=1 on hidepid=invisible: %v", got)
	}
	my, _ := topMount(ms, "/srv/my data")
	if got := notInEffect([]string{"size=2048k", "rw", "atime"}, my); !slices.Equal(got, []string{"rw"}) {
		t.Errorf("ro mount: %v", got)
	}
}

// Bad input is refused when the recipe is read, on the attribute: what
// would inject a line, a field or an option into fstab or mount(8).
func TestMountBadInput(t *testing.T) {
	typ := newMountType("/nonexistent/fstab", "/nonexistent/mountinfo", "/nonexistent")
	list := func(xs ...string) cty.Value { return resourcetestList(xs) }
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string // "" valid
	}{
		{"device", cty.StringVal("/dev/sdb1"), ""},
		{"device", cty.StringVal("UUID=0a1b"), ""},
		{"device", cty.StringVal("//server/my share"), ""},
		{"device", cty.StringVal("/dev/sdb1\n/dev/sdc1 / ext4 defaults 0 0"), "control character"},
		{"device", cty.StringVal("/dev/sdb1 #"), `holds "#"`},
		{"device", cty.StringVal("-oremount"), `starts with "-"`},
		{"device", cty.StringVal("LABEL="), "names no LABEL"},
		{"device", cty.StringVal(""), "must not be empty"},
		{"mount_point", cty.StringVal("/srv/a#b"), `holds "#"`},
		{"mount_point", cty.StringVal("/srv/a\tb"), "control character"},
		{"fstype", cty.StringVal("ext4 defaults"), "not a file system type"},
		{"fstype", cty.StringVal("fuse.sshfs"), ""},
		{"fstype", cty.StringVal("#"), "not a file system type"},
		{"options", list("nodev", "nosuid"), ""},
		{"options", list("nodev,nosuid"), `options[0] "nodev,nosuid" holds a comma: write each option as its own element (["nodev", "nosuid"])`},
		{"options", list("ro", "x y"), "holds a space"},
		{"options", list("defaults\n/dev/sdc1"), "control character"},
		{"options", list("defaults", "#"), `holds "#"`},
		{"options", list("context=\"a,b\""), "comma"},
		{"options", list(""), "empty"},
		{"options", list("remount"), "toque remounts"},
		{"pass", cty.NumberIntVal(-1), "0 or more"},
		{"dump", cty.NumberFloatVal(1.5), "whole number"},
		{"enabled", cty.True, "read by toque"},
		{"mounted", cty.StringVal("x"), "read by toque"},
		{"fstab", cty.StringVal("tmpfs /x tmpfs defaults 0 0\n"), "read by toque"},
	} {
		p := typ.Schema().Property(c.prop)
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
			t.Errorf("%s = %#v: got %v, want %q", c.prop, c.v, err, c.want)
		}
	}
	if _, err := normalizeMountPoint(cty.StringVal("srv")); err == nil {
		t.Error("a relative mount point is accepted")
	}
	if v, err := normalizeMountPoint(cty.StringVal("//")); err != nil || v.AsString() != "/" {
		t.Errorf("/: %v %v", v, err)
	}
}

func resourcetestList(xs []string) cty.Value {
	vs := make([]cty.Value, len(xs))
	for i, x := range xs {
		vs[i] = cty.StringVal(x)
	}
	return cty.ListVal(vs)
}

// fakeMounts is a mount type reading a mount table and an fstab the test
// writes, whose tools fail the test: planning runs no process.
func fakeMounts(t *testing.T, mountinfo, fstabText string) (*mountType, string) {
	t.Helper()
	dir := t.TempDir()
	mi, tab := filepath.Join(dir, "mountinfo"), filepath.Join(dir, "fstab")
	resourcetest.WriteFile(t, mi, mountinfo, 0o644)
	if fstabText != "" {
		resourcetest.WriteFile(t, tab, fstabText, 0o644)
	}
	typ := newMountType(tab, mi, filepath.Join(dir, "disk"))
	typ.run = func(_ context.Context, _ *resources.Env, tool string, args ...string) error {
		t.Errorf("ran %s %v", tool, args)
		return fmt.Errorf("no process in this test")
	}
	return typ, tab
}

// The plan of each action, from a mount table and an fstab.
func TestMountPlan(t *testing.T) {
	planAsRoot(t)
	srv := mountDir(t, "srv")
	missing := filepath.Join(filepath.Dir(srv), "missing")
	mi := fmt.Sprintf("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n30 22 0:30 / %s rw,nosuid,nodev,relatime - tmpfs tmpfs rw,size=1024k\n", srv)
	tab := fmt.Sprintf("# fstab\ntmpfs %s tmpfs nosuid,nodev 0 0\n", srv)
	typ, _ := fakeMounts(t, mi, tab)
	res := func(action string, vals map[string]any) *resources.Resource {
		return resourcetest.NewRes(t, typ, action, vals)
	}

	// Mounted with the options: nothing to do. An option the kernel does
	// not show: a remount, the kernel's line shown before and after.
	_, step := resourcetest.Plan(t, typ, res("mount", map[string]any{"mount_point": srv, "device": "tmpfs", "fstype": "tmpfs", "options": []string{"nosuid", "nodev", "nofail"}}))
	if step.Kind != resources.NoOp {
		t.Errorf("in effect: %s %s", step.Kind, step.Reason)
	}
	st, step := resourcetest.Plan(t, typ, res("mount", map[string]any{"mount_point": srv, "device": "tmpfs", "options": []string{"nosuid", "nodev", "noexec"}}))
	c := step.Change("mounted")
	if step.Kind != resources.Update || c == nil || c.After.AsString() != "tmpfs on "+srv+" type tmpfs (rw,nosuid,nodev,noexec,relatime,size=1024k)" ||
		st.Values["mounted"].AsString() != "tmpfs on "+srv+" type tmpfs (rw,nosuid,nodev,relatime,size=1024k)" || c.Note != "remount: noexec" {
		t.Errorf("remount: %s %s %+v", step.Kind, step.Reason, c)
	}
	// The next action is planned from what the remount leaves.
	pred, err := resources.Predict(typ, res("mount", map[string]any{"mount_point": srv, "device": "tmpfs", "options": []string{"nosuid", "nodev", "noexec"}}), st, step)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := resources.PlanStep(typ, res("mount", map[string]any{"mount_point": srv, "device": "tmpfs", "options": []string{"nosuid", "nodev", "noexec"}}), pred); again.Kind != resources.NoOp {
		t.Errorf("after the predicted remount: %s %s", again.Kind, again.Reason)
	}
	resourcetest.PlanErr(t, typ, res("mount", map[string]any{"mount_point": srv, "device": "/dev/sdz9"}), "has tmpfs mounted, not /dev/sdz9")
	resourcetest.PlanErr(t, typ, res("mount", map[string]any{"mount_point": srv, "device": "tmpfs", "fstype": "ext4"}), "is a tmpfs file system, not ext4")
	resourcetest.PlanErr(t, typ, res("mount", map[string]any{"mount_point": srv}), "mount needs a device")
	if _, step := resourcetest.Plan(t, typ, res("remount", map[string]any{"mount_point": srv})); step.Kind != resources.Run {
		t.Errorf("remount: %s", step.Kind)
	}

	// Not mounted: mount, and a missing mount point is a need.
	_, step = resourcetest.Plan(t, typ, res("mount", map[string]any{"mount_point": missing, "device": "tmpfs", "fstype": "tmpfs", "options": []string{"nodev"}}))
	if step.Kind != resources.Create || step.Change("mounted").After.AsString() != "tmpfs on "+missing+" type tmpfs (nodev)" ||
		len(step.Needs) != 1 || step.Needs[0].Value != missing || step.Needs[0].Namespace != resources.NamespacePath {
		t.Errorf("mount: %s %+v %+v", step.Kind, step.Changes, step.Needs)
	}
	resourcetest.PlanErr(t, typ, res("mount", map[string]any{"mount_point": missing, "device": filepath.Join(missing, "img")}), "does not exist")
	if _, step := resourcetest.Plan(t, typ, res("umount", map[string]any{"mount_point": missing})); step.Kind != resources.NoOp {
		t.Errorf("umount of nothing: %s", step.Kind)
	}
	_, step = resourcetest.Plan(t, typ, res("umount", map[string]any{"mount_point": srv}))
	if step.Kind != resources.Update || !step.Change("mounted").After.IsNull() {
		t.Errorf("umount: %s %+v", step.Kind, step.Changes)
	}

	// fstab: the entry's line, before and after.
	_, step = resourcetest.Plan(t, typ, res("enable", map[string]any{"mount_point": srv, "device": "tmpfs", "fstype": "tmpfs", "options": []string{"nosuid", "nodev"}, "pass": 0}))
	if step.Kind != resources.NoOp {
		t.Errorf("enabled already: %s %s", step.Kind, step.Reason)
	}
	st, step = resourcetest.Plan(t, typ, res("enable", map[string]any{"mount_point": srv, "options": []string{"nosuid", "nodev", "noexec"}}))
	if step.Kind != resources.Update || st.Values["fstab"].AsString() != "tmpfs "+srv+" tmpfs nosuid,nodev 0 0\n" ||
		step.Change("fstab").After.AsString() != "tmpfs "+srv+" tmpfs nosuid,nodev,noexec 0 0\n" {
		t.Errorf("enable: %s %+v", step.Kind, step.Changes)
	}
	_, step = resourcetest.Plan(t, typ, res("enable", map[string]any{"mount_point": missing, "device": "/dev/sdb1", "fstype": "ext4"}))
	if step.Kind != resources.Create || step.Change("fstab").After.AsString() != "/dev/sdb1 "+missing+" ext4 defaults 0 2\n" {
		t.Errorf("enable a new one: %s %+v", step.Kind, step.Changes)
	}
	resourcetest.PlanErr(t, typ, res("enable", map[string]any{"mount_point": missing}), "enable needs a device")
	_, step = resourcetest.Plan(t, typ, res("disable", map[string]any{"mount_point": srv}))
	if step.Kind != resources.Update || step.Change("fstab").After.AsString() != "" {
		t.Errorf("disable: %s %+v", step.Kind, step.Changes)
	}
	if _, step := resourcetest.Plan(t, typ, res("disable", map[string]any{"mount_point": missing})); step.Kind != resources.NoOp {
		t.Errorf("disable of nothing: %s", step.Kind)
	}

	// An option known only at apply (lazy): the line is too, and what the
	// step leaves is planned from that.
	lazy := res("enable", map[string]any{"mount_point": srv, "device": "tmpfs"})
	lazy.Values["options"] = cty.UnknownVal(cty.List(cty.String))
	st, step = resourcetest.Plan(t, typ, lazy)
	if c := step.Change("fstab"); step.Kind != resources.Update || c == nil || c.After.IsKnown() {
		t.Errorf("lazy options: %s %+v", step.Kind, step.Changes)
	}
	if pred, err := resources.Predict(typ, lazy, st, step); err != nil || !isEnabled(pred) {
		t.Errorf("predicted from a lazy line: %v %v", pred, err)
	}

	// Two entries for one mount point: enable keeps one.
	typ2, _ := fakeMounts(t, mi, tab+"tmpfs "+srv+"/ tmpfs ro 0 0\n")
	_, step = resourcetest.Plan(t, typ2, resourcetest.NewRes(t, typ2, "enable", map[string]any{"mount_point": srv, "device": "tmpfs", "fstype": "tmpfs", "options": []string{"nosuid", "nodev"}, "pass": 0}))
	if step.Kind != resources.Update || !strings.Contains(step.Reason, "2 entries") {
		t.Errorf("duplicates: %s %s", step.Kind, step.Reason)
	}
}

// A mount point reached through a symbolic link, or that is a file, is
// refused: the kernel shows the mount at the path the link leads to.
func TestMountPointKinds(t *testing.T) {
	dir := t.TempDir()
	typ, _ := fakeMounts(t, "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", "")
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link"))
	resourcetest.WriteFile(t, filepath.Join(dir, "file"), "", 0o644)
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "mount", map[string]any{"mount_point": filepath.Join(dir, "link"), "device": "tmpfs"}), "set mount_point to "+filepath.Join(dir, "real"))
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "mount", map[string]any{"mount_point": filepath.Join(dir, "file"), "device": "tmpfs"}), "is not a directory")
}

// TestMountPlanRunsNoProcess: a plan of 50 mounts reads the mount table
// and fstab once each and starts no process (the tool runner fails the
// test when called).
func TestMountPlanRunsNoProcess(t *testing.T) {
	planAsRoot(t)
	typ, rs, views := fiftyMounts(t, t.TempDir())
	sts, err := typ.LoadAll(context.Background(), views)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[resources.Kind]int{}
	for i, r := range rs {
		step, err := resources.PlanStep(typ, r, sts[i])
		if err != nil {
			t.Fatal(err)
		}
		kinds[step.Kind]++
	}
	if kinds[resources.NoOp] != 25 || kinds[resources.Update] != 25 {
		t.Errorf("kinds %v", kinds)
	}
}

// fiftyMounts is 50 resources: 25 mounted as they should be, 25 whose
// fstab entry differs; and the views LoadAll reads them from.
func fiftyMounts(t testing.TB, dir string) (*mountType, []*resources.Resource, []*resources.Resource) {
	var mi, tab strings.Builder
	mi.WriteString("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n")
	tab.WriteString("# fstab\n")
	typ := newMountType(filepath.Join(dir, "fstab"), filepath.Join(dir, "mountinfo"), filepath.Join(dir, "disk"))
	typ.run = func(_ context.Context, _ *resources.Env, tool string, _ ...string) error {
		t.Fatalf("a plan ran %s", tool)
		return nil
	}
	var rs, views []*resources.Resource
	for i := range 50 {
		mp := filepath.Join(dir, fmt.Sprintf("m%02d", i))
		if err := os.Mkdir(mp, 0o755); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&mi, "%d 22 0:%d / %s rw,nosuid,nodev,relatime - tmpfs tmpfs rw,size=1024k\n", 100+i, 100+i, mp)
		fmt.Fprintf(&tab, "tmpfs %s tmpfs nosuid,nodev 0 0\n", mp)
		action := "mount"
		if i%2 == 1 {
			action = "enable"
		}
		r := resources.NewResource(typ.Schema(), mp, action, map[string]cty.Value{"mount_point": cty.StringVal(mp), "device": cty.StringVal("tmpfs"),
			"fstype": cty.StringVal("tmpfs"), "options": resourcetestList([]string{"nosuid", "nodev"}), "pass": cty.NumberIntVal(2)})
		rs, views = append(rs, r), append(views, r.LoadView())
	}
	if err := os.WriteFile(filepath.Join(dir, "mountinfo"), []byte(mi.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fstab"), []byte(tab.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return typ, rs, views
}

// BenchmarkMountPlan50 is the plan of 50 mounts: one read of the mount
// table and of fstab, then each resource's plan.
func BenchmarkMountPlan50(b *testing.B) {
	typ, rs, views := fiftyMounts(b, b.TempDir())
	b.ResetTimer()
	for range b.N {
		sts, err := typ.LoadAll(context.Background(), views)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range rs {
			if _, err := resources.PlanStep(typ, r, sts[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// A tmpfs mounted, remounted and unmounted for real, in a mount namespace
// of the test's own: each apply is followed by a plan that is a no-op.
func TestMountTmpfs(t *testing.T) {
	threadNS(t, syscall.CLONE_NEWNS)
	mp := mountDir(t, "shm")
	typ := newMountType(filepath.Join(t.TempDir(), "fstab"), threadMountinfo, "/dev/disk")
	env := resourcetest.TestEnv(t)
	mount := func(opts ...string) *resources.Resource {
		return resourcetest.NewRes(t, typ, "mount", map[string]any{"mount_point": mp, "device": "toque-tmp", "fstype": "tmpfs", "options": opts})
	}
	resourcetest.Apply(t, typ, env, mount("nosuid", "nodev", "size=1024k"), resources.Create)
	st := resourcetest.Load(t, typ, mount())
	if got := st.Values["mounted"].AsString(); got != "toque-tmp on "+mp+" type tmpfs (rw,nosuid,nodev,relatime,size=1024k)" {
		t.Errorf("mounted: %s", got)
	}
	// noexec joins; nosuid and nodev stay though only noexec differs.
	resourcetest.Apply(t, typ, env, mount("nosuid", "nodev", "noexec", "size=1024k"), resources.Update)
	if got := resourcetest.Load(t, typ, mount()).Extra["mount_options"]; got != "rw,nosuid,nodev,noexec,relatime" {
		t.Errorf("after remount: %s", got)
	}
	resourcetest.Apply(t, typ, env, mount("defaults", "nodev", "noexec", "size=2048k"), resources.Update)
	if got := resourcetest.Load(t, typ, mount()).Values["mounted"].AsString(); !strings.HasSuffix(got, "(rw,nodev,noexec,relatime,size=2048k)") {
		t.Errorf("after a second remount: %s", got)
	}
	// An option the kernel shows otherwise fails the apply, saying what
	// it shows.
	resourcetest.ConvergeErr(t, typ, env, mount("nodev", "noexec", "size=1m"), "size=1m not in effect")
	// remount runs every time; umount unmounts.
	r := resourcetest.NewRes(t, typ, "remount", map[string]any{"mount_point": mp, "options": []string{"nodev", "noexec", "size=1024k"}})
	_, step := resourcetest.Plan(t, typ, r)
	if err := resources.ConvergeStep(context.Background(), typ, env, r, resourcetest.Load(t, typ, r), step); err != nil || step.Kind != resources.Run {
		t.Fatalf("remount: %s %v", step.Kind, err)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "umount", map[string]any{"mount_point": mp, "device": "toque-tmp"}), resources.Update)
	if _, err := os.ReadFile(threadMountinfo); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resourcetest.ReadFile(t, threadMountinfo), mp) {
		t.Errorf("still mounted")
	}
}

// enable and disable rewrite one entry of a throwaway fstab, through the
// file type: atomically, with a backup, every other line kept.
func TestMountEnableDisable(t *testing.T) {
	testenv.MustHave(t, testenv.Root) // fstab is root's
	dir := t.TempDir()
	mp := filepath.Join(dir, "srv")
	before := "# <file system> <mount point> <type> <options> <dump> <pass>\nUUID=abc / ext4 errors=remount-ro 0 1\n\n# data:\ntmpfs\t" + mp + "\ttmpfs\tdefaults\t0\t0\n/dev/sda5 none swap sw 0 0\n"
	typ, tab := fakeMounts(t, "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", before)
	env := resourcetest.TestEnv(t)
	enable := resourcetest.NewRes(t, typ, "enable", map[string]any{"mount_point": mp, "options": []string{"nodev", "nosuid", "noexec"}})
	resourcetest.Apply(t, typ, env, enable, resources.Update)
	want := strings.Replace(before, "tmpfs\t"+mp+"\ttmpfs\tdefaults\t0\t0", "tmpfs "+mp+" tmpfs nodev,nosuid,noexec 0 0", 1)
	if got := resourcetest.ReadFile(t, tab); got != want {
		t.Errorf("enabled:\n%s\nwant:\n%s", got, want)
	}
	if resourcetest.PermOf(t, tab) != 0o644 {
		t.Errorf("mode %o", resourcetest.PermOf(t, tab))
	}
	resourcetest.NoTempFiles(t, dir)
	if backups, _ := filepath.Glob(filepath.Join(resources.BackupDir(env.StateDir), tab, "*")); len(backups) != 1 {
		t.Errorf("backups %v", backups)
	}
	other := filepath.Join(dir, "other")
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "enable", map[string]any{"mount_point": other, "device": "LABEL=data", "fstype": "ext4", "options": []string{"defaults", "nofail"}}), resources.Create)
	if got := resourcetest.ReadFile(t, tab); got != want+"LABEL=data "+other+" ext4 defaults,nofail 0 2\n" {
		t.Errorf("appended:\n%s", got)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "disable", map[string]any{"mount_point": mp}), resources.Update)
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "disable", map[string]any{"mount_point": other}), resources.Update)
	if got := resourcetest.ReadFile(t, tab); got != strings.Replace(before, "tmpfs\t"+mp+"\ttmpfs\tdefaults\t0\t0\n", "", 1) {
		t.Errorf("disabled:\n%s", got)
	}
	// An fstab that is not normalised text is not rewritten.
	resourcetest.WriteFile(t, tab, "tmpfs /x tmpfs defaults 0 0 # caf\xe9\n", 0o644)
	resourcetest.PlanErr(t, typ, enable, "not UTF-8 text")
}

// An ext4 image mounted through a loop device, named by its path and by
// its UUID (udev's link, here a throwaway /dev/disk).
func TestMountLoop(t *testing.T) {
	testenv.MustHave(t, testenv.LoopDev)
	threadNS(t, syscall.CLONE_NEWNS)
	dir := t.TempDir()
	img := filepath.Join(dir, "fs.img")
	const uuid = "0b7c1e2a-3a36-4d0c-9a53-3f4c9d2f6e11"
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Truncate(img, 8<<20)
	if out, err := exec.Command("/usr/sbin/mkfs.ext4", "-q", "-F", "-U", uuid, img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v %s", err, out)
	}
	mp := mountDir(t, "data")
	disk := filepath.Join(dir, "disk")
	typ := newMountType(filepath.Join(dir, "fstab"), threadMountinfo, disk)
	env := resourcetest.TestEnv(t)
	r := resourcetest.NewRes(t, typ, "mount", map[string]any{"mount_point": mp, "device": img, "fstype": "ext4", "options": []string{"loop", "nodev", "noatime"}})
	resourcetest.Apply(t, typ, env, r, resources.Create)
	m, _ := topMount(mustMountinfo(t), mp)
	if m == nil || !strings.HasPrefix(m.source, "/dev/loop") {
		t.Fatalf("mounted %+v", m)
	}
	// By UUID: the same device once udev's link leads to it; without
	// udev's links toque cannot tell, and says so.
	byUUID := resourcetest.NewRes(t, typ, "mount", map[string]any{"mount_point": mp, "device": "UUID=" + uuid, "options": []string{"nodev"}})
	resourcetest.PlanErr(t, typ, byUUID, "udev does not run here")
	os.MkdirAll(filepath.Join(disk, "by-uuid"), 0o755)
	os.Symlink(m.source, filepath.Join(disk, "by-uuid", uuid))
	if _, step := resourcetest.Plan(t, typ, byUUID); step.Kind != resources.NoOp {
		t.Errorf("by UUID: %s %s", step.Kind, step.Reason)
	}
	os.Remove(filepath.Join(disk, "by-uuid", uuid))
	os.Symlink("/dev/null", filepath.Join(disk, "by-uuid", uuid))
	resourcetest.PlanErr(t, typ, byUUID, "not UUID="+uuid)
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "umount", map[string]any{"mount_point": mp, "device": img}), resources.Update)
}

func mustMountinfo(t *testing.T) []mountInfo {
	t.Helper()
	ms, err := readMountinfo(threadMountinfo)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
