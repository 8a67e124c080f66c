package system

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
