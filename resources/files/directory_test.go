package files

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

func TestDirectoryLoadAndPlan(t *testing.T) {
	dt := DirectoryType()
	dir := t.TempDir()
	existing := filepath.Join(dir, "d")
	if err := os.Mkdir(existing, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(existing, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "f")
	resourcetest.WriteFile(t, file, "x", 0o644)
	_, myUID, _, _ := resourcetest.Whoami(t)

	t.Run("load absent", func(t *testing.T) {
		if st := resourcetest.Load(t, dt, resourcetest.NewRes(t, dt, "", map[string]any{"path": filepath.Join(dir, "none")})); st.Exists {
			t.Fatalf("want absent, got %+v", st)
		}
	})
	t.Run("load present", func(t *testing.T) {
		st := resourcetest.Load(t, dt, resourcetest.NewRes(t, dt, "", map[string]any{"path": existing}))
		if !st.Exists || st.Extra["kind"] != "directory" || !st.Values["mode"].RawEquals(cty.StringVal("0700")) {
			t.Fatalf("got %+v", st)
		}
	})

	cases := []struct {
		name    string
		path    string
		action  string
		vals    map[string]any
		kind    resources.Kind
		changes []string
	}{
		{"create absent", filepath.Join(dir, "new"), "", map[string]any{}, resources.Create, []string{"mode"}},
		{"unset mode left alone", existing, "", map[string]any{}, resources.NoOp, nil},
		{"mode equal", existing, "", map[string]any{"mode": "700"}, resources.NoOp, nil},
		{"mode differs", existing, "", map[string]any{"mode": "0755"}, resources.Update, []string{"mode"}},
		{"owner by id", existing, "", map[string]any{"owner": myUID}, resources.NoOp, nil},
		{"delete present", existing, "delete", map[string]any{}, resources.Delete, nil},
		{"delete absent", filepath.Join(dir, "new"), "delete", map[string]any{}, resources.NoOp, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.vals["path"] = c.path
			_, step := resourcetest.Plan(t, dt, resourcetest.NewRes(t, dt, c.action, c.vals))
			if step.Kind != c.kind || !slices.Equal(resourcetest.ChangedProps(step), c.changes) {
				t.Fatalf("got %s %v (%s), want %s %v", step.Kind, resourcetest.ChangedProps(step), step.Reason, c.kind, c.changes)
			}
		})
	}
	t.Run("file at path", func(t *testing.T) {
		resourcetest.PlanErr(t, dt, resourcetest.NewRes(t, dt, "", map[string]any{"path": file}), "cannot manage a file at "+file)
		resourcetest.PlanErr(t, dt, resourcetest.NewRes(t, dt, "delete", map[string]any{"path": file}), "cannot manage a file")
	})
}

func TestDirectoryConverge(t *testing.T) {
	dt := DirectoryType()
	t.Run("create with default mode", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		resourcetest.Apply(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "", map[string]any{"path": p}), resources.Create)
		if got := resourcetest.PermOf(t, p); got != 0o755 {
			t.Fatalf("mode = %04o, want 0755", got)
		}
	})
	t.Run("create ignores the umask", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		resourcetest.Apply(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "", map[string]any{"path": p, "mode": "1777"}), resources.Create)
		if got := resourcetest.PermOf(t, p); got != 0o1777 {
			t.Fatalf("mode = %04o, want 1777", got)
		}
	})
	t.Run("missing parent without recursive", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "a", "b")
		resourcetest.ConvergeErr(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "", map[string]any{"path": filepath.Join(parent, "c")}),
			"parent directory "+parent+" does not exist")
	})
	t.Run("recursive create", func(t *testing.T) {
		root := t.TempDir()
		p := filepath.Join(root, "a", "b", "c")
		resourcetest.Apply(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "", map[string]any{"path": p, "recursive": true, "mode": "0700"}), resources.Create)
		if resourcetest.PermOf(t, p) != 0o700 {
			t.Errorf("leaf mode = %04o, want 0700", resourcetest.PermOf(t, p))
		}
		if fi, err := os.Stat(filepath.Join(root, "a", "b")); err != nil || !fi.IsDir() {
			t.Errorf("parent not created: %v", err)
		}
	})
	t.Run("update mode and owner", func(t *testing.T) {
		resourcetest.RequireRoot(t)
		p := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		step := resourcetest.Apply(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "", map[string]any{"path": p, "mode": "2770", "owner": "65534", "group": "65534"}), resources.Update)
		if !slices.Equal(step.Groups, []string{"mode", "owner"}) {
			t.Errorf("groups = %v", step.Groups)
		}
		if resourcetest.PermOf(t, p) != 0o2770 {
			t.Errorf("mode = %04o, want 2770", resourcetest.PermOf(t, p))
		}
	})
	t.Run("delete empty", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		resourcetest.Apply(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "delete", map[string]any{"path": p}), resources.Delete)
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("still there: %v", err)
		}
	})
	t.Run("non-empty delete refused", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		resourcetest.ConvergeErr(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "delete", map[string]any{"path": p}), "directory "+p+" is not empty; set recursive = true")
		if _, err := os.Stat(filepath.Join(p, "sub")); err != nil {
			t.Fatalf("content was removed: %v", err)
		}
	})
	t.Run("recursive delete", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		resourcetest.WriteFile(t, filepath.Join(p, "sub", "f"), "x", 0o644)
		resourcetest.Apply(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "delete", map[string]any{"path": p, "recursive": true}), resources.Delete)
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("still there: %v", err)
		}
	})
	t.Run("symlink to a directory is managed only when asked, and not deleted", func(t *testing.T) {
		root := t.TempDir()
		real := filepath.Join(root, "real")
		link := filepath.Join(root, "link")
		if err := os.Mkdir(real, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		resourcetest.PlanErr(t, dt, resourcetest.NewRes(t, dt, "", map[string]any{"path": link, "mode": "0750"}), "unless the recipe sets manage_symlink_source = true")
		resourcetest.Apply(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "", map[string]any{"path": link, "mode": "0750", "manage_symlink_source": true}), resources.Update)
		if resourcetest.PermOf(t, real) != 0o750 {
			t.Errorf("target mode = %04o", resourcetest.PermOf(t, real))
		}
		resourcetest.PlanErr(t, dt, resourcetest.NewRes(t, dt, "delete", map[string]any{"path": link}), "will not delete through a link")
	})
}

// TestDirectoryRecursiveNeverFollowsLinks: a recursive delete removes a
// link inside, not what it points to; a recursive create refuses a link on
// the way that another user could have made.
func TestDirectoryRecursiveNeverFollowsLinks(t *testing.T) {
	dt := DirectoryType()
	base := t.TempDir()
	vault := filepath.Join(base, "vault")
	mkdir(t, vault, 0o700)
	resourcetest.WriteFile(t, filepath.Join(vault, "keep"), "x", 0o600)

	doomed := filepath.Join(base, "doomed")
	mkdir(t, doomed, 0o755)
	mkdir(t, filepath.Join(doomed, "sub"), 0o755)
	symlink(t, vault, filepath.Join(doomed, "sub", "to-vault"))
	symlink(t, vault, filepath.Join(doomed, "to-vault"))
	resourcetest.Apply(t, dt, resourcetest.TestEnv(t), resourcetest.NewRes(t, dt, "delete", map[string]any{"path": doomed, "recursive": true}), resources.Delete)
	if _, err := os.Lstat(doomed); !os.IsNotExist(err) {
		t.Fatalf("still there: %v", err)
	}
	if resourcetest.ReadFile(t, filepath.Join(vault, "keep")) != "x" {
		t.Fatal("a recursive delete went through a link")
	}

	drop := filepath.Join(base, "drop")
	mkdir(t, drop, 0o777)
	symlink(t, vault, filepath.Join(drop, "a"))
	r := resourcetest.NewRes(t, dt, "", map[string]any{"path": filepath.Join(drop, "a", "b", "c"), "recursive": true})
	convergeErrAt(t, dt, r, resources.Absent(), resources.Create, "other users can write to that directory")
	if _, err := os.Lstat(filepath.Join(vault, "b")); !os.IsNotExist(err) {
		t.Fatal("a recursive create went through a link")
	}
}
