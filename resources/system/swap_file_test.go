package system

import (
	"context"
	"os"
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

// swapTest is a swap_file type whose /proc/swaps and fstab are throwaway
// files. mkswap is the real one (it writes only the test's file); swapon
// and swapoff are the one fake, a script that lists the file in that
// /proc/swaps or takes it out: the kernel's swap is the host's, shared by
// every namespace, and a test must not hand it a file. It returns the
// type, the directory and the commands run.
func swapTest(t *testing.T) (*swapFileType, string, *[]string) {
	t.Helper()
	dir := t.TempDir()
	swaps := filepath.Join(dir, "swaps")
	resourcetest.WriteFile(t, swaps, "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n", 0o644)
	typ := newSwapFileType(swaps, filepath.Join(dir, "fstab"))
	var ran []string
	typ.run = func(ctx context.Context, env *resources.Env, tool string, args ...string) error {
		ran = append(ran, tool)
		switch tool {
		case "swapon":
			f, err := os.OpenFile(swaps, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString(fstabEscape(args[0]) + "\tfile\t\t65532\t\t0\t\t-2\n")
			return err
		case "swapoff":
			var keep []string
			for _, l := range strings.SplitAfter(resourcetest.ReadFile(t, swaps), "\n") {
				if !strings.HasPrefix(l, fstabEscape(args[0])+"\t") {
					keep = append(keep, l)
				}
			}
			return os.WriteFile(swaps, []byte(strings.Join(keep, "")), 0o644)
		}
		return runHostTool(ctx, env, tool, args...)
	}
	return typ, dir, &ran
}

// A swap file made, turned on and listed in fstab; made anew at another
// size; taken out of fstab; turned off and deleted.
func TestSwapFile(t *testing.T) {
	testenv.MustHave(t, testenv.Root) // a swap file is root's
	typ, dir, ran := swapTest(t)
	resourcetest.WriteFile(t, typ.fstab, "# fstab\nUUID=abc / ext4 defaults 0 1\n", 0o644)
	env := resourcetest.TestEnv(t)
	path := filepath.Join(dir, "my swap")
	create := func(vals map[string]any) *resources.Resource {
		vals["path"] = path
		return resourcetest.NewRes(t, typ, "create", vals)
	}
	step := resourcetest.Apply(t, typ, env, create(map[string]any{"size": 4, "persist": true}), resources.Create)
	if strings.Join(step.Groups, ",") != "allocate,mkswap,swapon,fstab" || step.Change("fstab").After.AsString() != fstabEscape(path)+" swap swap defaults 0 0\n" {
		t.Errorf("step %v %+v", step.Groups, step.Changes)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != 4<<20 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file %v %v", fi, err)
	}
	st := resourcetest.Load(t, typ, create(map[string]any{}))
	if st.Extra["signature"] != "swap" || st.Extra["holes"] != "" || !st.Values["active"].True() {
		t.Errorf("state %v %v", st.Values, st.Extra)
	}
	if got := resourcetest.ReadFile(t, typ.fstab); got != "# fstab\nUUID=abc / ext4 defaults 0 1\n"+strings.ReplaceAll(path, " ", `\040`)+" swap swap defaults 0 0\n" {
		t.Errorf("fstab %q", got)
	}
	if !slices.Equal(*ran, []string{"mkswap", "swapon"}) {
		t.Errorf("ran %v", *ran)
	}

	*ran = nil
	resourcetest.Apply(t, typ, env, create(map[string]any{"size": 8}), resources.Update)
	if fi, _ := os.Stat(path); fi.Size() != 8<<20 || !slices.Equal(*ran, []string{"swapoff", "mkswap", "swapon"}) {
		t.Errorf("resized: %d bytes, ran %v", fi.Size(), *ran)
	}
	os.Chmod(path, 0o644)
	resourcetest.Apply(t, typ, env, create(map[string]any{"persist": false}), resources.Update)
	if got := resourcetest.ReadFile(t, typ.fstab); got != "# fstab\nUUID=abc / ext4 defaults 0 1\n" {
		t.Errorf("fstab %q", got)
	}
	if resourcetest.PermOf(t, path) != 0o600 {
		t.Errorf("mode %o", resourcetest.PermOf(t, path))
	}
	*ran = nil
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "remove", map[string]any{"path": path}), resources.Delete)
	if _, err := os.Stat(path); !os.IsNotExist(err) || !slices.Equal(*ran, []string{"swapoff"}) {
		t.Errorf("removed: %v, ran %v", err, *ran)
	}
}

// A file that is not toque's swap file is never overwritten nor deleted;
// a swap file where the kernel cannot swap is refused; a swapon that does
// not take is an error.
func TestSwapFileRefuses(t *testing.T) {
	planAsRoot(t)
	typ, dir, _ := swapTest(t)
	data := filepath.Join(dir, "data")
	resourcetest.WriteFile(t, data, "precious\n", 0o600)
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"path": data, "size": 1}), "is not a swap file")
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "remove", map[string]any{"path": data}), "toque deletes only a swap file")
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"path": dir, "size": 1}), "not a regular file")
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"path": filepath.Join(dir, "new")}), "create needs a size")
	if _, step := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"path": filepath.Join(dir, "no/such/swap"), "size": 1})); len(step.Needs) != 1 || step.Needs[0].Value != filepath.Join(dir, "no/such") {
		t.Errorf("needs %+v", step.Needs)
	}
	if _, step := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "remove", map[string]any{"path": filepath.Join(dir, "new")})); step.Kind != resources.NoOp {
		t.Errorf("remove of nothing: %s", step.Kind)
	}
	typ.run = func(context.Context, *resources.Env, string, ...string) error { return nil }
	if os.Geteuid() == 0 {
		resourcetest.ConvergeErr(t, typ, resourcetest.TestEnv(t), resourcetest.NewRes(t, typ, "create", map[string]any{"path": filepath.Join(dir, "new"), "size": 1}), "swapon "+filepath.Join(dir, "new")+" exited 0, yet")
	}
}

// On a tmpfs (mounted in a mount namespace of the test's thread) a swap
// file cannot work, and the plan says so.
func TestSwapFileOnTmpfs(t *testing.T) {
	threadNS(t, syscall.CLONE_NEWNS)
	typ, _, _ := swapTest(t)
	d := mountDir(t, "mem")
	if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"path": filepath.Join(d, "swap"), "size": 1}), "is on tmpfs")
}

func TestSwapFileBadInput(t *testing.T) {
	typ := newSwapFileType("/nonexistent", "/nonexistent")
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"path", cty.StringVal("/swapfile"), ""},
		{"path", cty.StringVal("swapfile"), "not an absolute path"},
		{"path", cty.StringVal("/swap\nUUID=x / ext4 defaults 0 0"), "control character"},
		{"path", cty.StringVal("/swap#1"), `holds "#"`},
		{"size", cty.NumberIntVal(0), "1 or more"},
		{"size", cty.NumberFloatVal(1.5), "whole number"},
		{"timeout", cty.NumberIntVal(0), "greater than 0"},
		{"active", cty.True, "read by toque"},
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
