package system

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
	"github.com/toquehq/toque/resources/resourcetest"
)

// moduleRoot is a throwaway root with what Load reads: loop and xfs
// loaded (xfs in use), kvm built in with parameters, mem built in
// without, nbd and btrfs available to the kernel "6.1.0-test", and an
// alias. Its modprobe is a script, the one fake of these tests: a real
// modprobe would change the host's kernel, which no namespace isolates
// (and this kernel may load no modules at all). The script loads and
// unloads in the root's /proc/modules, so the read-back is the type's
// own. It returns the type and the commands run.
func moduleRoot(t *testing.T) (*kernelModuleType, *[]string) {
	t.Helper()
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"proc/modules":                            "loop 32768 0 - Live 0x0000000000000000\nxfs 1994752 2 - Live 0x0000000000000000\n",
		"sys/module/loop/initstate":               "live\n",
		"sys/module/loop/refcnt":                  "0\n",
		"sys/module/xfs/initstate":                "live\n",
		"sys/module/xfs/refcnt":                   "2\n",
		"sys/module/kvm/parameters/halt_poll_ns":  "200000\n",
		"lib/modules/6.1.0-test/modules.dep":      "kernel/drivers/block/nbd.ko.xz:\nkernel/fs/btrfs/btrfs.ko.zst: kernel/lib/libcrc32c.ko.zst\nkernel/fs/xfs/xfs.ko.xz:\n",
		"lib/modules/6.1.0-test/modules.builtin":  "kernel/drivers/char/mem.ko\n",
		"lib/modules/6.1.0-test/modules.alias":    "alias fs-btrfs btrfs\nalias pci:v00008086d* e1000e\n",
		"etc/modprobe.d/README":                   "kept\n",
		"etc/modules-load.d/keep-this-other.conf": "dummy\n",
	})
	typ := newKernelModuleType(root, "6.1.0-test")
	var ran []string
	typ.run = func(_ context.Context, _ *resources.Env, tool string, args ...string) error {
		ran = append(ran, strings.Join(append([]string{tool}, args...), " "))
		if tool != "modprobe" {
			return nil
		}
		mods := filepath.Join(root, "proc/modules")
		text := resourcetest.ReadFile(t, mods)
		if args[0] == "-r" {
			var keep []string
			for _, l := range strings.SplitAfter(text, "\n") {
				if !strings.HasPrefix(l, args[1]+" ") {
					keep = append(keep, l)
				}
			}
			text = strings.Join(keep, "")
		} else {
			text += args[0] + " 4096 0 - Live 0x0000000000000000\n"
		}
		return os.WriteFile(mods, []byte(text), 0o644)
	}
	return typ, &ran
}

// What each action plans, from the module's state and its files.
func TestKernelModulePlan(t *testing.T) {
	planAsRoot(t)
	typ, _ := moduleRoot(t)
	res := func(action, mod string, vals map[string]any) *resources.Resource {
		if vals == nil {
			vals = map[string]any{}
		}
		vals["modname"] = mod
		return resourcetest.NewRes(t, typ, action, vals)
	}
	groups := func(action, mod string, vals map[string]any) string {
		t.Helper()
		_, step := resourcetest.Plan(t, typ, res(action, mod, vals))
		if step.Kind == resources.NoOp {
			return "no-op: " + step.Reason
		}
		return string(step.Kind) + " " + strings.Join(step.Groups, ",")
	}
	for _, c := range []struct {
		action, mod string
		vals        map[string]any
		want        string
	}{
		{"install", "nbd", nil, "create load,boot"},
		{"install", "nbd", map[string]any{"options": []string{"max_part=8", "nbds_max=4"}}, "create options,load,boot"},
		{"install", "loop", nil, "update boot"},
		{"install", "fs-btrfs", nil, "create load,boot"},
		{"install", "mem", nil, "update boot"},
		{"load", "loop", nil, "no-op: already in the desired state: loaded"},
		{"load", "kvm", nil, "no-op: already in the desired state: built into the kernel"},
		{"unload", "nbd", nil, "no-op: already in the desired state: not loaded"},
		{"unload", "loop", nil, "update unload"},
		{"blacklist", "loop", nil, "update blacklist,unload"},
		{"blacklist", "nbd", nil, "create blacklist"},
		{"disable", "loop", nil, "update disable,unload"},
		{"enable", "nbd", nil, "no-op: already in the desired state: not loaded"},
		{"uninstall", "nbd", nil, "no-op: already in the desired state: not loaded"},
	} {
		if got := groups(c.action, c.mod, c.vals); got != c.want {
			t.Errorf("%s %s %v: %s, want %s", c.action, c.mod, c.vals, got, c.want)
		}
	}
	resourcetest.PlanErr(t, typ, res("load", "nosuch", nil), "the running kernel 6.1.0-test has no module nosuch")
	resourcetest.PlanErr(t, typ, res("unload", "kvm", nil), "it is built into the kernel")
	resourcetest.PlanErr(t, typ, res("blacklist", "xfs", nil), "cannot unload xfs: 2 references")

	// What a change says: the file and what it holds.
	_, step := resourcetest.Plan(t, typ, res("install", "nbd", map[string]any{"options": []string{"max_part=8"}}))
	c := step.Change("options")
	if c == nil || !strings.HasSuffix(c.Note, "/etc/modprobe.d/options_nbd.conf: options nbd max_part=8") || step.Change("loaded").Note != "modprobe nbd" ||
		!strings.HasSuffix(step.Change("loads_at_boot").Note, "/etc/modules-load.d/nbd.conf: nbd") {
		t.Errorf("changes %+v", step.Changes)
	}
	// A disabled module cannot be loaded; install enables it first.
	resourcetest.WriteFile(t, filepath.Join(typ.root, "etc/modprobe.d/disable_nbd.conf"), "install nbd /bin/false\n", 0o644)
	resourcetest.PlanErr(t, typ, res("load", "nbd", nil), "disables it")
	if got := groups("install", "nbd", nil); got != "update enable,load,boot" {
		t.Errorf("install of a disabled module: %s", got)
	}
	// Without /proc/modules the kernel loads nothing.
	os.Remove(filepath.Join(typ.root, "proc/modules"))
	resourcetest.PlanErr(t, typ, res("load", "nbd", nil), "this kernel loads no modules")
	if got := groups("load", "kvm", nil); !strings.HasPrefix(got, "no-op") {
		t.Errorf("a built-in module with no /proc/modules: %s", got)
	}
}

// install and uninstall for real in the throwaway root: Chef's files
// (under toque's header), modprobe and its read-back, and one initramfs
// update for the files.
func TestKernelModuleConverge(t *testing.T) {
	testenv.MustHave(t, testenv.Root) // the files are root's
	typ, ran := moduleRoot(t)
	testutil.WriteFiles(t, typ.root, map[string]string{"usr/sbin/update-initramfs": "#!/bin/sh\n"})
	os.Chmod(filepath.Join(typ.root, "usr/sbin/update-initramfs"), 0o755)
	env := resourcetest.TestEnv(t)
	install := resourcetest.NewRes(t, typ, "install", map[string]any{"modname": "nbd", "options": []string{"max_part=8", "nbds_max=4"}})
	step := resourcetest.Apply(t, typ, env, install, resources.Create)
	if !strings.Contains(step.Reason, "then update-initramfs -u") {
		t.Errorf("reason %s", step.Reason)
	}
	header := "# Managed by toque (kernel_module[nbd]): changes made here are undone by its next apply.\n"
	for path, want := range map[string]string{
		"etc/modprobe.d/options_nbd.conf": header + "options nbd max_part=8 nbds_max=4\n",
		"etc/modules-load.d/nbd.conf":     header + "nbd\n",
		"etc/modprobe.d/README":           "kept\n",
	} {
		if got := resourcetest.ReadFile(t, filepath.Join(typ.root, path)); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	if want := []string{"modprobe nbd", "update-initramfs -u"}; !slices.Equal(*ran, want) {
		t.Errorf("ran %q, want %q", *ran, want)
	}
	st := resourcetest.Load(t, typ, install)
	if !st.Values["loaded"].True() || !st.Values["loads_at_boot"].True() || strings.Join(props.StringList(st.Values["options"]), " ") != "max_part=8 nbds_max=4" {
		t.Errorf("state %v", st.Values)
	}
	*ran = nil
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "blacklist", map[string]any{"modname": "nbd"}), resources.Update)
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "uninstall", map[string]any{"modname": "nbd"}), resources.Update)
	for _, p := range []string{"etc/modprobe.d/options_nbd.conf", "etc/modules-load.d/nbd.conf", "etc/modprobe.d/blacklist_nbd.conf"} {
		if _, err := os.Stat(filepath.Join(typ.root, p)); !os.IsNotExist(err) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if want := []string{"modprobe -r nbd", "update-initramfs -u", "update-initramfs -u"}; !slices.Equal(*ran, want) {
		t.Errorf("ran %q, want %q", *ran, want)
	}
	// modprobe that exits 0 and loads nothing fails the apply.
	typ.run = func(context.Context, *resources.Env, string, ...string) error { return nil }
	resourcetest.ConvergeErr(t, typ, env, resourcetest.NewRes(t, typ, "load", map[string]any{"modname": "btrfs"}), "modprobe btrfs exited 0, yet btrfs is not loaded")
}

func TestKernelModuleBadInput(t *testing.T) {
	typ := newKernelModuleType(t.TempDir(), "x")
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"modname", cty.StringVal("snd-hda-intel"), ""},
		{"modname", cty.StringVal("../../bin/sh"), "not a module name"},
		{"modname", cty.StringVal("loop max_loop=8"), "not a module name"},
		{"modname", cty.StringVal("-r"), "starts with \"-\""},
		{"options", resourcetestList([]string{"max_loop=8", "debug"}), ""},
		{"options", resourcetestList([]string{"max_loop=8 max_part=2"}), "not one module parameter"},
		{"options", resourcetestList([]string{"x=1\ninstall loop /bin/sh"}), "not one module parameter"},
		{"options", resourcetestList([]string{"x=#1"}), "not one module parameter"},
		{"load_dir", cty.StringVal("etc/modules-load.d"), "absolute"},
		{"loaded", cty.True, "read by toque"},
		{"blacklisted", cty.False, "read by toque"},
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

// The host's own modules are read, never changed: whatever this kernel
// has, Load answers without a process.
func TestKernelModuleReadsTheHost(t *testing.T) {
	typ := newKernelModuleType("", "")
	typ.run = func(_ context.Context, _ *resources.Env, tool string, _ ...string) error {
		t.Fatalf("ran %s", tool)
		return nil
	}
	st := resourcetest.Load(t, typ, resourcetest.NewRes(t, typ, "load", map[string]any{"modname": "toque_no_such_module"}))
	if st.Values["loaded"].True() || !strings.HasPrefix(st.Extra["module"], "missing: ") {
		t.Errorf("state %v %v", st.Values, st.Extra)
	}
}
