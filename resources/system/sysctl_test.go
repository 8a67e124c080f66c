package system

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/resourcetest"
)

// Keys and values as sysctl reads them: dotted or as a path, one line.
func TestSysctlKeyAndValue(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/ip_forward":              "net.ipv4.ip_forward",
		"/net/ipv4/conf/eth0.1/forwarding": "net.ipv4.conf.eth0/1.forwarding",
		" kernel.shmmni ":                  "kernel.shmmni",
		"net..x":                           "error",
		"net.ipv4.x=1":                     "error",
		"net ipv4":                         "error",
		"..":                               "error",
	} {
		v, err := normalizeSysctlKey(cty.StringVal(in))
		got := "error"
		if err == nil {
			got = v.AsString()
		}
		if got != want {
			t.Errorf("key %q: %q (%v), want %q", in, got, err, want)
		}
	}
	typ := newSysctlType("/proc/sys", "/etc/sysctl.d")
	if got := typ.procPath("net.ipv4.conf.eth0/1.forwarding"); got != "/proc/sys/net/ipv4/conf/eth0.1/forwarding" {
		t.Errorf("proc path %s", got)
	}
	for in, want := range map[string]string{"1": "1", " 32768\t 60999 ": "32768 60999", "a\nb": "error", "  ": "error"} {
		v, err := normalizeSysctlValue(cty.StringVal(in))
		got := "error"
		if err == nil {
			got = v.AsString()
		}
		if got != want {
			t.Errorf("value %q: %q (%v), want %q", in, got, err, want)
		}
	}
}

// Plan reads /proc/sys (a file read, no process) and refuses what the
// kernel would: a key it does not have, a read-only one.
func TestSysctlPlanReadsTheKernel(t *testing.T) {
	// As root, whoever runs the tests: this is what root's plan says.
	defer func(f func() int) { hostexec.EffectiveUID = f }(hostexec.EffectiveUID)
	hostexec.EffectiveUID = func() int { return 0 }
	typ := newSysctlType("/proc/sys", t.TempDir())
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net.ipv4.no_such_key", "value": "1"}), "this kernel has no parameter net.ipv4.no_such_key")
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "kernel.ostype", "value": "BSD"}), "kernel.ostype is read-only")
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net.ipv4", "value": "1"}), "is a group of parameters")
	live := strings.TrimSpace(resourcetest.ReadFile(t, "/proc/sys/net/ipv4/ip_local_port_range"))
	st, step := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net.ipv4.ip_local_port_range", "value": live}))
	if got := st.Values["value"].AsString(); got != strings.Join(strings.Fields(live), " ") {
		t.Errorf("live value %q", got)
	}
	// The same value, tabs or not, is no change; only the file is missing.
	if step.Kind != resources.Update || len(step.Changes) != 0 || strings.Join(step.Groups, ",") != "persist" {
		t.Errorf("step %s %v %v: %s", step.Kind, step.Changes, step.Groups, step.Reason)
	}
	_, step = resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net.ipv4.ip_local_port_range", "value": "1024 65000"}))
	if strings.Join(resourcetest.ChangedProps(step), ",") != "value" || strings.Join(step.Groups, ",") != "value,persist" {
		t.Errorf("step %s %v %v: %s", step.Kind, step.Changes, step.Groups, step.Reason)
	}
}

// A container's /proc/sys is a read-only mount: a value that differs is a
// plan error saying so (sysctl -w would fail at apply); one that does not
// is persisted as anywhere.
func TestSysctlReadOnlyMount(t *testing.T) {
	threadNS(t, syscall.CLONE_NEWNS)
	defer func(f func() int) { hostexec.EffectiveUID = f }(hostexec.EffectiveUID)
	hostexec.EffectiveUID = func() int { return 0 }
	proc := mountDir(t, "sys")
	if err := syscall.Mount("toque-sys", proc, "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(proc, "kernel"), 0o755); err != nil {
		t.Fatal(err)
	}
	resourcetest.WriteFile(t, filepath.Join(proc, "kernel/kptr_restrict"), "0\n", 0o644)
	if err := syscall.Mount("", proc, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	typ := newSysctlType(proc, t.TempDir())
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "kernel.kptr_restrict", "value": "2"}),
		"kernel.kptr_restrict is 0 and cannot be set here: "+proc+"/kernel/kptr_restrict is on a read-only mount")
	_, step := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "kernel.kptr_restrict", "value": "0"}))
	if step.Kind != resources.Update || strings.Join(step.Groups, ",") != "persist" {
		t.Errorf("the same value: %s %v (%s)", step.Kind, step.Groups, step.Reason)
	}
}

// Persisting a value the kernel already has writes 99-toque-KEY.conf and
// nothing else; remove deletes it. (Setting values is tested inside a
// network namespace, end to end.)
func TestSysctlPersists(t *testing.T) {
	testenv.MustHave(t, testenv.Root) // the file is root's
	dir := t.TempDir()
	typ := newSysctlType("/proc/sys", dir)
	env := resourcetest.TestEnv(t)
	live := strings.TrimSpace(resourcetest.ReadFile(t, "/proc/sys/net/ipv4/ip_forward"))
	r := resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net/ipv4/ip_forward", "value": live})
	resourcetest.Apply(t, typ, env, r, resources.Update)
	path := filepath.Join(dir, "99-toque-net.ipv4.ip_forward.conf")
	if got := resourcetest.ReadFile(t, path); !strings.HasSuffix(got, "\nnet.ipv4.ip_forward = "+live+"\n") || resourcetest.PermOf(t, path) != 0o644 {
		t.Errorf("persisted %q mode %04o", got, resourcetest.PermOf(t, path))
	}
	// Someone else's edit of the file is undone.
	resourcetest.WriteFile(t, path, "net.ipv4.ip_forward = 7\n", 0o644)
	_, step := resourcetest.Plan(t, typ, r)
	if !strings.Contains(step.Reason, "holds another value or text") {
		t.Errorf("reason %q", step.Reason)
	}
	resourcetest.Apply(t, typ, env, r, resources.Update)
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "remove", map[string]any{"key": "net.ipv4.ip_forward"}), resources.Delete)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("not removed: %v", err)
	}
	if _, s := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "remove", map[string]any{"key": "net.ipv4.ip_forward"})); s.Kind != resources.NoOp {
		t.Errorf("remove again: %s", s.Kind)
	}
}

// TestSysctlConfFileIsOneName: a key whose dotted form holds "/" (an
// interface named eth0.1) persists in one file of the directory, never in
// a subdirectory, and two keys never share a file.
func TestSysctlConfFileIsOneName(t *testing.T) {
	typ := newSysctlType(t.TempDir(), "/etc/sysctl.d")
	seen := map[string]string{}
	for _, key := range []string{"net.ipv4.conf.eth0/1.forwarding", "net.ipv4.conf.eth0_1.forwarding", "net.ipv4.conf.eth0%2F1.forwarding", "vm.swappiness"} {
		p := typ.confPath(key)
		if filepath.Dir(p) != "/etc/sysctl.d" || !strings.HasSuffix(p, ".conf") {
			t.Errorf("%s persists in %s", key, p)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s share %s", key, other, p)
		}
		seen[p] = key
	}
}

// TestSysctlApplyWithoutValuePointsAtValue: the error for apply with no
// value names the property that is missing.
func TestSysctlApplyWithoutValuePointsAtValue(t *testing.T) {
	typ := newSysctlType(t.TempDir(), t.TempDir())
	_, err := resources.PlanStep(typ, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "vm.swappiness"}), resources.Absent())
	var pe *resources.PropertyError
	if !errors.As(err, &pe) || pe.Property != "value" {
		t.Errorf("got %v", err)
	}
}

// Keys sharing a conf_file: each persists as its block (Chef's comment
// lines, then KEY = VALUE), in the order applied, rewritten in place; the
// file's other lines are kept, a key's file from before conf_file is
// removed, and remove takes out the key's lines only.
func TestSysctlConfFile(t *testing.T) {
	testenv.MustHave(t, testenv.Root) // the file is root's
	dir := t.TempDir()
	typ := newSysctlType("/proc/sys", dir)
	env := resourcetest.TestEnv(t)
	fwd := strings.TrimSpace(resourcetest.ReadFile(t, "/proc/sys/net/ipv4/ip_forward"))
	ports := strings.Join(strings.Fields(resourcetest.ReadFile(t, "/proc/sys/net/ipv4/ip_local_port_range")), " ")
	path := filepath.Join(dir, "90-hardening.conf")
	old := typ.confPath("net.ipv4.ip_forward")
	resourcetest.WriteFile(t, old, confContent("net.ipv4.ip_forward", fwd, nil), 0o644)

	r1 := resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net.ipv4.ip_forward", "value": fwd, "conf_file": "90-hardening.conf", "comment": "No routing."})
	_, step := resourcetest.Plan(t, typ, r1)
	if strings.Join(step.Groups, ",") != "persist,unpersist_old" || step.Change("conf").After.AsString() != "# No routing.\nnet.ipv4.ip_forward = "+fwd+"\n" || !strings.Contains(step.Reason, old) {
		t.Errorf("step %v %+v: %s", step.Groups, step.Changes, step.Reason)
	}
	// The conf_file the host lacks is provided, root's and 0644, for a
	// later resource that sets its mode (a file planned from it).
	if len(step.Provides) != 1 || step.Provides[0].Value != path || step.Provides[0].Prediction.Fact("mode") != "0644" || step.Provides[0].Prediction.By != r1.Address() {
		t.Errorf("provides %+v", step.Provides)
	}
	resourcetest.Apply(t, typ, env, r1, resources.Update)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the key's own file is still there: %v", err)
	}
	r2 := resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net/ipv4/ip_local_port_range", "value": ports, "conf_file": "90-hardening.conf", "comment": []string{"Ports", "for clients."}})
	if step := resourcetest.Apply(t, typ, env, r2, resources.Update); len(step.Provides) != 0 {
		t.Errorf("a conf_file that exists is provided: %+v", step.Provides)
	}
	want := confHeader("90-hardening.conf") + "# No routing.\nnet.ipv4.ip_forward = " + fwd + "\n# Ports\n# for clients.\nnet.ipv4.ip_local_port_range = " + ports + "\n"
	if got := resourcetest.ReadFile(t, path); got != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	if resourcetest.PermOf(t, path) != 0o644 {
		t.Errorf("mode %o", resourcetest.PermOf(t, path))
	}

	// Someone's line and a changed comment: the key's block is rewritten
	// where it is, the rest kept; a key set twice is set once.
	resourcetest.WriteFile(t, path, want+"kernel.sysrq = 0\n-net.ipv4.ip_forward=7\n", 0o644)
	r1 = resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net.ipv4.ip_forward", "value": fwd, "conf_file": "90-hardening.conf", "comment": []string{"Routing off."}})
	st, step := resourcetest.Plan(t, typ, r1)
	if st.Values["conf"].AsString() != "# No routing.\nnet.ipv4.ip_forward = "+fwd+"\n-net.ipv4.ip_forward=7\n" || !strings.Contains(step.Reason, "sets it 2 times") {
		t.Errorf("persisted %q: %s", st.Values["conf"].AsString(), step.Reason)
	}
	resourcetest.Apply(t, typ, env, r1, resources.Update)
	want = confHeader("90-hardening.conf") + "# Routing off.\nnet.ipv4.ip_forward = " + fwd + "\n# Ports\n# for clients.\nnet.ipv4.ip_local_port_range = " + ports + "\nkernel.sysrq = 0\n"
	if got := resourcetest.ReadFile(t, path); got != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "remove", map[string]any{"key": "net.ipv4.ip_local_port_range", "conf_file": "90-hardening.conf"}), resources.Delete)
	if got := resourcetest.ReadFile(t, path); got != confHeader("90-hardening.conf")+"# Routing off.\nnet.ipv4.ip_forward = "+fwd+"\nkernel.sysrq = 0\n" {
		t.Errorf("removed:\n%s", got)
	}
	resourcetest.NoTempFiles(t, dir)
}

// The value is read back after sysctl -w: a value the kernel keeps in
// another spelling, or refuses, fails the apply and persists nothing.
// In a network namespace of the test's thread, so the host's keys stay.
func TestSysctlReadBack(t *testing.T) {
	threadNS(t, syscall.CLONE_NEWNET)
	dir := t.TempDir()
	typ := newSysctlType("/proc/sys", dir)
	env := resourcetest.TestEnv(t)
	resourcetest.ConvergeErr(t, typ, env, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net.ipv4.ip_forward", "value": "01"}), `the kernel holds "1" after sysctl -w set it; nothing was persisted`)
	resourcetest.ConvergeErr(t, typ, env, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net.ipv4.ip_local_port_range", "value": "2000 1000"}), "Invalid argument")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("persisted: %v", entries)
	}
	// A value the kernel keeps as written is set, read back and persisted.
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "apply", map[string]any{"key": "net.ipv4.ip_forward", "value": "1", "conf_file": "90-net.conf"}), resources.Update)
	if got := strings.TrimSpace(resourcetest.ReadFile(t, "/proc/sys/net/ipv4/ip_forward")); got != "1" {
		t.Errorf("ip_forward %s", got)
	}
}

func TestSysctlBadInput(t *testing.T) {
	typ := newSysctlType(t.TempDir(), t.TempDir())
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"conf_file", cty.StringVal("90-hardening.conf"), ""},
		{"conf_file", cty.StringVal("../x.conf"), "must be the name of a file"},
		{"conf_file", cty.StringVal("sub/x.conf"), "no \"/\""},
		{"conf_file", cty.StringVal("x.txt"), "ending in .conf"},
		{"comment", cty.StringVal("one line"), ""},
		{"comment", cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b\nnet.ipv4.ip_forward = 1")}), "each element is one line"},
		{"comment", cty.NumberIntVal(3), "a string or a list of strings"},
		{"conf", cty.StringVal("x"), "read by toque"},
	} {
		p := typ.Schema().Property(c.prop)
		v, err := c.v, error(nil)
		if p.Normalize != nil {
			v, err = p.Normalize(v)
		}
		if err == nil && p.Validate != nil {
			err = p.Validate(v)
		}
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
}
