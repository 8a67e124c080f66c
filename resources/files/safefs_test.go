package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// withoutOpenat2 runs f twice: with openat2 where the kernel has it, and
// with the step-by-step walk older kernels get.
func withoutOpenat2(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", f)
	t.Run("step by step", func(t *testing.T) {
		was := noOpenat2.Load()
		noOpenat2.Store(true)
		t.Cleanup(func() { noOpenat2.Store(was) })
		f(t)
	})
}

// mkdir makes a directory with the permission bits mode (setgid and
// sticky included, as chmod(2) takes them).
func mkdir(t *testing.T, path string, mode uint32) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, to, at string) {
	t.Helper()
	if err := os.Symlink(to, at); err != nil {
		t.Fatal(err)
	}
}

// TestSymlinkedAncestors checks which symbolic links on the way to a
// managed path toque follows: those no user but root (or toque's own)
// could have made or replaced.
func TestSymlinkedAncestors(t *testing.T) {
	ft := FileType()
	withoutOpenat2(t, func(t *testing.T) {
		t.Run("a link in a directory only its owner can write is followed", func(t *testing.T) {
			base := t.TempDir()
			mkdir(t, filepath.Join(base, "real"), 0o755)
			symlink(t, "real", filepath.Join(base, "run")) // like /var/run -> /run
			p := filepath.Join(base, "run", "app.pid")
			resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "42\n"}), resources.Create)
			if resourcetest.ReadFile(t, filepath.Join(base, "real", "app.pid")) != "42\n" {
				t.Fatal("not written through the link")
			}
		})
		t.Run("absolute and relative targets with .. are resolved physically", func(t *testing.T) {
			base := t.TempDir()
			mkdir(t, filepath.Join(base, "a"), 0o755)
			mkdir(t, filepath.Join(base, "a", "b"), 0o755)
			mkdir(t, filepath.Join(base, "x"), 0o755)
			symlink(t, filepath.Join(base, "a", "b"), filepath.Join(base, "x", "abs"))
			symlink(t, "../../a/.", filepath.Join(base, "a", "b", "up")) // a/b/up -> a
			p := filepath.Join(base, "x", "abs", "up", "f")              // = a/f
			resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "x"}), resources.Create)
			if resourcetest.ReadFile(t, filepath.Join(base, "a", "f")) != "x" {
				t.Fatal("not written where the links lead")
			}
		})
		t.Run("a link in a directory others can write is refused", func(t *testing.T) {
			base := t.TempDir()
			mkdir(t, filepath.Join(base, "drop"), 0o777)
			mkdir(t, filepath.Join(base, "real"), 0o755)
			symlink(t, filepath.Join(base, "real"), filepath.Join(base, "drop", "sub"))
			p := filepath.Join(base, "drop", "sub", "f")
			r := resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "x"})
			_, err := ft.Load(t.Context(), r.LoadView())
			var ule *UnsafeLinkError
			if !errors.As(err, &ule) || !strings.Contains(err.Error(), "other users can write to that directory (mode 0777)") {
				t.Fatalf("Load = %v, want an UnsafeLinkError naming the mode", err)
			}
			if ule.Path != filepath.Join(base, "drop", "sub") || ule.Dir != filepath.Join(base, "drop") {
				t.Errorf("error names %s in %s", ule.Path, ule.Dir)
			}
			convergeErrAt(t, ft, r, &resources.State{Exists: false}, resources.Create, "other users can write")
			if _, err := os.Lstat(filepath.Join(base, "real", "f")); !os.IsNotExist(err) {
				t.Fatal("a file was created through the link")
			}
		})
		t.Run("a sticky directory protects its owner's links only", func(t *testing.T) {
			resourcetest.RequireRoot(t)
			base := t.TempDir()
			tmp := filepath.Join(base, "tmp")
			mkdir(t, tmp, 0o1777)
			mkdir(t, filepath.Join(base, "real"), 0o755)
			symlink(t, filepath.Join(base, "real"), filepath.Join(tmp, "mine"))
			p := filepath.Join(tmp, "mine", "f")
			resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "x"}), resources.Create)

			symlink(t, filepath.Join(base, "real"), filepath.Join(tmp, "theirs"))
			if err := os.Lchown(filepath.Join(tmp, "theirs"), 65534, 65534); err != nil {
				t.Fatal(err)
			}
			_, err := ft.Load(t.Context(), resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(tmp, "theirs", "f")}).LoadView())
			if err == nil || !strings.Contains(err.Error(), "mode 1777") {
				t.Fatalf("Load through another user's link in a sticky directory = %v, want a refusal", err)
			}
		})
		t.Run("a link in a directory another user owns is refused", func(t *testing.T) {
			resourcetest.RequireRoot(t)
			base := t.TempDir()
			home := filepath.Join(base, "home")
			mkdir(t, home, 0o755)
			mkdir(t, filepath.Join(base, "real"), 0o755)
			symlink(t, filepath.Join(base, "real"), filepath.Join(home, "sub"))
			if err := os.Chown(home, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			_, err := ft.Load(t.Context(), resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(home, "sub", "f")}).LoadView())
			if err == nil || !strings.Contains(err.Error(), "that directory belongs to") {
				t.Fatalf("Load = %v, want a refusal naming the owner", err)
			}
		})
		t.Run("a loop is an error, not a hang", func(t *testing.T) {
			base := t.TempDir()
			symlink(t, "b", filepath.Join(base, "a"))
			symlink(t, "a", filepath.Join(base, "b"))
			_, err := ft.Load(t.Context(), resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(base, "a", "f")}).LoadView())
			if err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
				t.Fatalf("Load = %v, want ELOOP", err)
			}
		})
		t.Run("a missing or non-directory ancestor", func(t *testing.T) {
			base := t.TempDir()
			resourcetest.WriteFile(t, filepath.Join(base, "file"), "x", 0o644)
			if st := resourcetest.Load(t, ft, resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(base, "no", "f")})); st.Exists {
				t.Fatal("a path under a missing directory exists")
			}
			_, err := ft.Load(t.Context(), resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(base, "file", "f")}).LoadView())
			if err == nil || !strings.Contains(err.Error(), "not a directory") {
				t.Fatalf("Load = %v", err)
			}
		})
	})
}

// TestManagedPathIsALink checks manage_symlink_source: a link at the
// managed path itself is followed only when the recipe asks, and then only
// where no other user could have made it.
func TestManagedPathIsALink(t *testing.T) {
	ft := FileType()
	base := t.TempDir()
	secret := filepath.Join(base, "secret")
	resourcetest.WriteFile(t, secret, "root only\n", 0o600)
	drop := filepath.Join(base, "drop")
	mkdir(t, drop, 0o777)
	symlink(t, secret, filepath.Join(drop, "report"))
	withoutOpenat2(t, func(t *testing.T) {
		r := resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(drop, "report"), "content": "x"})
		st := resourcetest.Load(t, ft, r)
		if _, read := st.Values["content"]; read || st.Extra["kind"] != "symlink" {
			t.Fatalf("the link's target was read: %+v", st)
		}
		resourcetest.PlanErr(t, ft, r, "manage_symlink_source")
		follow := resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(drop, "report"), "content": "x", "manage_symlink_source": true})
		if _, err := ft.Load(t.Context(), follow.LoadView()); err == nil || !strings.Contains(err.Error(), "other users can write") {
			t.Fatalf("following a link in a world-writable directory: %v", err)
		}
	})
	if resourcetest.ReadFile(t, secret) != "root only\n" {
		t.Fatal("the secret changed")
	}
}

// TestHardLinkInWritableDirectory checks that a regular file with other
// names, in a directory other users can write, is not changed: it could
// be a name of a file they may not change.
func TestHardLinkInWritableDirectory(t *testing.T) {
	ft := FileType()
	base := t.TempDir()
	secret := filepath.Join(base, "secret")
	resourcetest.WriteFile(t, secret, "root only\n", 0o600)
	drop := filepath.Join(base, "drop")
	mkdir(t, drop, 0o777)
	if err := os.Link(secret, filepath.Join(drop, "report")); err != nil {
		t.Fatal(err)
	}
	for _, vals := range []map[string]any{
		{"mode": "0666"},
		{"content": "x", "atomic_update": false},
		{"owner": "65534"},
	} {
		vals["path"] = filepath.Join(drop, "report")
		resourcetest.PlanErr(t, ft, resourcetest.NewRes(t, ft, "", vals), "has 2 names (hard links), and other users can write to that directory (mode 0777)")
	}
	// Deleting removes one name and backs up the content: allowed.
	env := resourcetest.TestEnv(t)
	resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "delete", map[string]any{"path": filepath.Join(drop, "report")}), resources.Delete)
	if resourcetest.ReadFile(t, secret) != "root only\n" || resourcetest.PermOf(t, secret) != 0o600 {
		t.Fatal("the secret changed")
	}
	// The same in a directory only its owner can write is fine.
	own := filepath.Join(base, "own")
	mkdir(t, own, 0o755)
	if err := os.Link(secret, filepath.Join(own, "alias")); err != nil {
		t.Fatal(err)
	}
	resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(own, "alias"), "mode": "0640"}), resources.Update)
	if resourcetest.PermOf(t, secret) != 0o640 {
		t.Fatal("a hard link in a safe directory was not managed")
	}
}

// convergeErrAt converges r with a hand-made state and step, expecting an
// error containing want.
func convergeErrAt(t *testing.T, typ resources.Type, r *resources.Resource, st *resources.State, kind resources.Kind, want string) {
	t.Helper()
	var ch []resources.Change
	if kind == resources.Create {
		ch = resources.CreateDiff(r)
	}
	step := &resources.Step{Kind: kind, Changes: ch, Groups: r.Schema().Groups(ch)}
	err := resources.ConvergeStep(t.Context(), typ, resourcetest.TestEnv(t), r, st, step)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Converge %s = %v, want an error containing %q", r.Address(), err, want)
	}
}

func TestTempNames(t *testing.T) {
	if got := tempName("motd", "tmp"); got != ".motd.toque-tmp" {
		t.Errorf("tempName = %q", got)
	}
	long := strings.Repeat("x", 250)
	if got := tempName(long, "tmp"); len(got) > 255 || !strings.HasSuffix(got, ".toque-tmp") || got != tempName(long, "tmp") {
		t.Errorf("tempName of a long name = %q", got)
	}
	// A leftover (even a link to something precious) is removed by name.
	base := t.TempDir()
	precious := filepath.Join(base, "precious")
	resourcetest.WriteFile(t, precious, "keep", 0o600)
	dir := filepath.Join(base, "d")
	mkdir(t, dir, 0o755)
	symlink(t, precious, filepath.Join(dir, ".f.toque-tmp"))
	ft := FileType()
	resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(dir, "f"), "content": "new"}), resources.Create)
	resourcetest.NoTempFiles(t, dir)
	if resourcetest.ReadFile(t, precious) != "keep" {
		t.Fatal("a leftover link was written through")
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); errors.Is(err, fs.ErrNotExist) {
		t.Fatal("not created")
	}
}

// publicDir is a temporary directory every user may reach (t.TempDir
// makes 0700 ones): where a plan may show a file's current content.
func publicDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

// TestPrivateContent checks when Load marks a file's current content as
// not to be shown: unless every user of the host may read it already.
func TestPrivateContent(t *testing.T) {
	ft := FileType()
	base := publicDir(t)
	closed := filepath.Join(base, "closed")
	mkdir(t, closed, 0o700)
	cases := []struct {
		name string
		dir  string
		mode os.FileMode
		want string // "" means shown
	}{
		{"readable by all", base, 0o644, ""},
		{"readable by others only", base, 0o604, ""},
		{"owner and group only", base, 0o640, "not every user of this host may read it (mode 0640, owner "},
		{"owner only", base, 0o600, "(mode 0600"},
		{"nobody", base, 0o000, "(mode 0000"},
		{"readable by all in a closed directory", closed, 0o644, "a directory on the way to it is closed to other users"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.mode&0o400 == 0 {
				resourcetest.RequireRoot(t) // to read a file of mode 0000
			}
			p := filepath.Join(c.dir, strings.ReplaceAll(c.name, " ", "-"))
			resourcetest.WriteFile(t, p, "current\n", c.mode)
			r := resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "new\n"})
			st := resourcetest.Load(t, ft, r)
			got := st.Private["content"]
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Fatalf("Private = %q, want %q", got, c.want)
			}
			if strings.Contains(got, "current\n") {
				t.Fatal("the note holds the content")
			}
		})
	}
}
