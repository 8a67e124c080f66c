package resources

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zclconf/go-cty/cty"
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
	writeFile(t, file, "x", 0o644)
	_, myUID, _, _ := whoami(t)

	t.Run("load absent", func(t *testing.T) {
		if st := load(t, dt, newRes(t, dt, "", map[string]any{"path": filepath.Join(dir, "none")})); st.Exists {
			t.Fatalf("want absent, got %+v", st)
		}
	})
	t.Run("load present", func(t *testing.T) {
		st := load(t, dt, newRes(t, dt, "", map[string]any{"path": existing}))
		if !st.Exists || st.Extra["kind"] != "directory" || !st.Values["mode"].RawEquals(cty.StringVal("0700")) {
			t.Fatalf("got %+v", st)
		}
	})

	cases := []struct {
		name    string
		path    string
		action  string
		vals    map[string]any
		kind    Kind
		changes []string
	}{
		{"create absent", filepath.Join(dir, "new"), "", map[string]any{}, Create, []string{"mode"}},
		{"unset mode left alone", existing, "", map[string]any{}, NoOp, nil},
		{"mode equal", existing, "", map[string]any{"mode": "700"}, NoOp, nil},
		{"mode differs", existing, "", map[string]any{"mode": "0755"}, Update, []string{"mode"}},
		{"owner by id", existing, "", map[string]any{"owner": myUID}, NoOp, nil},
		{"delete present", existing, "delete", map[string]any{}, Delete, nil},
		{"delete absent", filepath.Join(dir, "new"), "delete", map[string]any{}, NoOp, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.vals["path"] = c.path
			_, step := plan(t, dt, newRes(t, dt, c.action, c.vals))
			if step.Kind != c.kind || !slices.Equal(changedProps(step), c.changes) {
				t.Fatalf("got %s %v (%s), want %s %v", step.Kind, changedProps(step), step.Reason, c.kind, c.changes)
			}
		})
	}
	t.Run("file at path", func(t *testing.T) {
		planErr(t, dt, newRes(t, dt, "", map[string]any{"path": file}), "cannot manage a file at "+file)
		planErr(t, dt, newRes(t, dt, "delete", map[string]any{"path": file}), "cannot manage a file")
	})
}

func TestDirectoryConverge(t *testing.T) {
	dt := DirectoryType()
	t.Run("create with default mode", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		apply(t, dt, testEnv(t), newRes(t, dt, "", map[string]any{"path": p}), Create)
		if got := permOf(t, p); got != 0o755 {
			t.Fatalf("mode = %04o, want 0755", got)
		}
	})
	t.Run("create ignores the umask", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		apply(t, dt, testEnv(t), newRes(t, dt, "", map[string]any{"path": p, "mode": "1777"}), Create)
		if got := permOf(t, p); got != 0o1777 {
			t.Fatalf("mode = %04o, want 1777", got)
		}
	})
	t.Run("missing parent without recursive", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "a", "b")
		convergeErr(t, dt, testEnv(t), newRes(t, dt, "", map[string]any{"path": filepath.Join(parent, "c")}),
			"parent directory "+parent+" does not exist")
	})
	t.Run("recursive create", func(t *testing.T) {
		root := t.TempDir()
		p := filepath.Join(root, "a", "b", "c")
		apply(t, dt, testEnv(t), newRes(t, dt, "", map[string]any{"path": p, "recursive": true, "mode": "0700"}), Create)
		if permOf(t, p) != 0o700 {
			t.Errorf("leaf mode = %04o, want 0700", permOf(t, p))
		}
		if fi, err := os.Stat(filepath.Join(root, "a", "b")); err != nil || !fi.IsDir() {
			t.Errorf("parent not created: %v", err)
		}
	})
	t.Run("update mode and owner", func(t *testing.T) {
		requireRoot(t)
		p := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		step := apply(t, dt, testEnv(t), newRes(t, dt, "", map[string]any{"path": p, "mode": "2770", "owner": "65534", "group": "65534"}), Update)
		if !slices.Equal(step.Groups, []string{"mode", "owner"}) {
			t.Errorf("groups = %v", step.Groups)
		}
		if permOf(t, p) != 0o2770 {
			t.Errorf("mode = %04o, want 2770", permOf(t, p))
		}
	})
	t.Run("delete empty", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		apply(t, dt, testEnv(t), newRes(t, dt, "delete", map[string]any{"path": p}), Delete)
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("still there: %v", err)
		}
	})
	t.Run("non-empty delete refused", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		convergeErr(t, dt, testEnv(t), newRes(t, dt, "delete", map[string]any{"path": p}), "directory "+p+" is not empty; set recursive = true")
		if _, err := os.Stat(filepath.Join(p, "sub")); err != nil {
			t.Fatalf("content was removed: %v", err)
		}
	})
	t.Run("recursive delete", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "d")
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(p, "sub", "f"), "x", 0o644)
		apply(t, dt, testEnv(t), newRes(t, dt, "delete", map[string]any{"path": p, "recursive": true}), Delete)
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
		planErr(t, dt, newRes(t, dt, "", map[string]any{"path": link, "mode": "0750"}), "unless the recipe sets manage_symlink_source = true")
		apply(t, dt, testEnv(t), newRes(t, dt, "", map[string]any{"path": link, "mode": "0750", "manage_symlink_source": true}), Update)
		if permOf(t, real) != 0o750 {
			t.Errorf("target mode = %04o", permOf(t, real))
		}
		planErr(t, dt, newRes(t, dt, "delete", map[string]any{"path": link}), "will not delete through a link")
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
	writeFile(t, filepath.Join(vault, "keep"), "x", 0o600)

	doomed := filepath.Join(base, "doomed")
	mkdir(t, doomed, 0o755)
	mkdir(t, filepath.Join(doomed, "sub"), 0o755)
	symlink(t, vault, filepath.Join(doomed, "sub", "to-vault"))
	symlink(t, vault, filepath.Join(doomed, "to-vault"))
	apply(t, dt, testEnv(t), newRes(t, dt, "delete", map[string]any{"path": doomed, "recursive": true}), Delete)
	if _, err := os.Lstat(doomed); !os.IsNotExist(err) {
		t.Fatalf("still there: %v", err)
	}
	if readFile(t, filepath.Join(vault, "keep")) != "x" {
		t.Fatal("a recursive delete went through a link")
	}

	drop := filepath.Join(base, "drop")
	mkdir(t, drop, 0o777)
	symlink(t, vault, filepath.Join(drop, "a"))
	r := newRes(t, dt, "", map[string]any{"path": filepath.Join(drop, "a", "b", "c"), "recursive": true})
	convergeErrAt(t, dt, r, Absent(), Create, "other users can write to that directory")
	if _, err := os.Lstat(filepath.Join(vault, "b")); !os.IsNotExist(err) {
		t.Fatal("a recursive create went through a link")
	}
}
