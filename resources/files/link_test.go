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

func TestLinkSymbolic(t *testing.T) {
	lt := LinkType()
	root := t.TempDir()
	a := filepath.Join(root, "a")
	b := filepath.Join(root, "b")
	resourcetest.WriteFile(t, a, "A", 0o644)
	resourcetest.WriteFile(t, b, "B", 0o644)
	link := filepath.Join(root, "link")
	env := resourcetest.TestEnv(t)

	t.Run("load absent", func(t *testing.T) {
		if st := resourcetest.Load(t, lt, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": link, "to": a})); st.Exists {
			t.Fatalf("want absent: %+v", st)
		}
	})
	t.Run("create", func(t *testing.T) {
		step := resourcetest.Apply(t, lt, env, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": link, "to": a}), resources.Create)
		if !slices.Equal(resourcetest.ChangedProps(step), []string{"to", "link_type"}) || !step.Change("link_type").Default {
			t.Errorf("changes = %+v", step.Changes)
		}
		if got, err := os.Readlink(link); err != nil || got != a {
			t.Fatalf("readlink = %q, %v", got, err)
		}
		resourcetest.NoTempFiles(t, root)
	})
	t.Run("load present", func(t *testing.T) {
		st := resourcetest.Load(t, lt, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": link}))
		if st.Extra["kind"] != "symlink" || !st.Values["to"].RawEquals(cty.StringVal(a)) || !st.Values["link_type"].RawEquals(cty.StringVal("symbolic")) {
			t.Fatalf("got %+v", st)
		}
	})
	t.Run("update to", func(t *testing.T) {
		before := resourcetest.InodeOf(t, link)
		step := resourcetest.Apply(t, lt, env, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": link, "to": b}), resources.Update)
		if !slices.Equal(resourcetest.ChangedProps(step), []string{"to"}) || !slices.Equal(step.Groups, []string{"link"}) {
			t.Errorf("step = %+v", step)
		}
		if got, _ := os.Readlink(link); got != b {
			t.Fatalf("readlink = %q, want %q", got, b)
		}
		if resourcetest.InodeOf(t, link) == before {
			t.Error("the link was not replaced by a rename")
		}
		resourcetest.NoTempFiles(t, root)
	})
	t.Run("relative to", func(t *testing.T) {
		rel := filepath.Join(root, "rel")
		resourcetest.Apply(t, lt, env, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": rel, "to": "a"}), resources.Create)
		if resourcetest.ReadFile(t, rel) != "A" {
			t.Fatal("relative link does not resolve in the link's directory")
		}
	})
	t.Run("owner", func(t *testing.T) {
		resourcetest.RequireRoot(t)
		resourcetest.Apply(t, lt, env, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": link, "to": b, "owner": "65534"}), resources.Update)
		fi, _ := os.Lstat(link)
		if newStatInfo(fi).uid != 65534 {
			t.Fatal("lchown not applied")
		}
		fa, _ := os.Stat(b)
		if newStatInfo(fa).uid != 0 {
			t.Fatal("chown followed the link")
		}
		// Re-pointing keeps the link's owner although the recipe no longer sets it.
		resourcetest.Apply(t, lt, env, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": link, "to": a}), resources.Update)
		fi, _ = os.Lstat(link)
		if newStatInfo(fi).uid != 65534 {
			t.Error("re-pointing changed the link's owner")
		}
	})
	t.Run("refuses to replace a regular file", func(t *testing.T) {
		resourcetest.PlanErr(t, lt, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": a, "to": b}), "is a regular file, not a symbolic link; refusing to replace it")
		resourcetest.PlanErr(t, lt, resourcetest.NewRes(t, lt, "delete", map[string]any{"target_file": a}), "refusing to delete it")
	})
	t.Run("refuses a directory", func(t *testing.T) {
		resourcetest.PlanErr(t, lt, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": root + "/", "to": a}), "is a directory")
	})
	t.Run("to is required for create", func(t *testing.T) {
		resourcetest.PlanErr(t, lt, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": filepath.Join(root, "x")}), "to is required")
	})
	t.Run("missing parent", func(t *testing.T) {
		parent := filepath.Join(root, "no", "dir")
		resourcetest.ConvergeErr(t, lt, env, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": filepath.Join(parent, "l"), "to": a}), "parent directory "+parent+" does not exist")
	})
	t.Run("delete removes the link only", func(t *testing.T) {
		resourcetest.Apply(t, lt, env, resourcetest.NewRes(t, lt, "delete", map[string]any{"target_file": link}), resources.Delete)
		if _, err := os.Lstat(link); !os.IsNotExist(err) {
			t.Fatalf("link still there: %v", err)
		}
		if resourcetest.ReadFile(t, a) != "A" {
			t.Fatal("the target was changed")
		}
		_, step := resourcetest.Plan(t, lt, resourcetest.NewRes(t, lt, "delete", map[string]any{"target_file": link}))
		if step.Kind != resources.NoOp {
			t.Fatalf("delete of an absent link planned %s", step.Kind)
		}
	})
}

func TestLinkHard(t *testing.T) {
	lt := LinkType()
	root := t.TempDir()
	a := filepath.Join(root, "a")
	b := filepath.Join(root, "b")
	resourcetest.WriteFile(t, a, "A", 0o644)
	resourcetest.WriteFile(t, b, "B", 0o644)
	link := filepath.Join(root, "hard")
	env := resourcetest.TestEnv(t)
	hard := func(action, to string) *resources.Resource {
		vals := map[string]any{"target_file": link, "link_type": "hard"}
		if to != "" {
			vals["to"] = to
		}
		return resourcetest.NewRes(t, lt, action, vals)
	}

	t.Run("create", func(t *testing.T) {
		resourcetest.Apply(t, lt, env, hard("", a), resources.Create)
		fa, _ := os.Stat(a)
		fl, _ := os.Lstat(link)
		if !os.SameFile(fa, fl) {
			t.Fatal("not a hard link to a")
		}
		resourcetest.NoTempFiles(t, root)
	})
	t.Run("load recognises the link", func(t *testing.T) {
		st := resourcetest.Load(t, lt, hard("", a))
		if !st.Values["to"].RawEquals(cty.StringVal(a)) || st.Extra["nlink"] != "2" {
			t.Fatalf("got %+v", st)
		}
		st = resourcetest.Load(t, lt, hard("", b))
		if _, ok := st.Values["to"]; ok {
			t.Fatalf("a hard link to a reads as one to b: %+v", st)
		}
	})
	t.Run("re-link to another file", func(t *testing.T) {
		step := resourcetest.Apply(t, lt, env, hard("", b), resources.Update)
		if !slices.Equal(resourcetest.ChangedProps(step), []string{"to"}) {
			t.Errorf("changes = %v", resourcetest.ChangedProps(step))
		}
		fb, _ := os.Stat(b)
		fl, _ := os.Lstat(link)
		if !os.SameFile(fb, fl) || resourcetest.ReadFile(t, a) != "A" {
			t.Fatal("re-link failed or changed a")
		}
	})
	t.Run("symbolic link wanted where a hard link is", func(t *testing.T) {
		resourcetest.PlanErr(t, lt, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": link, "to": b}), "is a regular file")
	})
	t.Run("refuses to replace a standalone file", func(t *testing.T) {
		lone := filepath.Join(root, "lone")
		resourcetest.WriteFile(t, lone, "precious", 0o644)
		r := resourcetest.NewRes(t, lt, "", map[string]any{"target_file": lone, "to": a, "link_type": "hard"})
		resourcetest.PlanErr(t, lt, r, "refusing to replace it and lose its content")
		resourcetest.PlanErr(t, lt, resourcetest.NewRes(t, lt, "delete", map[string]any{"target_file": lone, "link_type": "hard"}), "refusing to delete it")
	})
	t.Run("replaces a symbolic link", func(t *testing.T) {
		sym := filepath.Join(root, "sym")
		if err := os.Symlink(a, sym); err != nil {
			t.Fatal(err)
		}
		step := resourcetest.Apply(t, lt, env, resourcetest.NewRes(t, lt, "", map[string]any{"target_file": sym, "to": a, "link_type": "hard"}), resources.Update)
		if !slices.Equal(resourcetest.ChangedProps(step), []string{"link_type"}) || !slices.Equal(step.Groups, []string{"link"}) {
			t.Errorf("changes = %v, groups = %v", resourcetest.ChangedProps(step), step.Groups)
		}
		fa, _ := os.Stat(a)
		fs, _ := os.Lstat(sym)
		if !os.SameFile(fa, fs) {
			t.Fatal("not a hard link to a")
		}
	})
	t.Run("delete of a link to another file is refused", func(t *testing.T) {
		resourcetest.PlanErr(t, lt, hard("delete", a), "is not a hard link to "+a)
	})
	t.Run("delete", func(t *testing.T) {
		resourcetest.Apply(t, lt, env, hard("delete", b), resources.Delete)
		if _, err := os.Lstat(link); !os.IsNotExist(err) {
			t.Fatalf("still there: %v", err)
		}
		if resourcetest.ReadFile(t, b) != "B" {
			t.Fatal("the source was changed")
		}
	})
	t.Run("missing source", func(t *testing.T) {
		resourcetest.ConvergeErr(t, lt, env, hard("", filepath.Join(root, "nope")), "creating hard link")
	})
}
