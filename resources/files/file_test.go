package files

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

func TestFileLoad(t *testing.T) {
	dir := t.TempDir()
	ft := FileType()

	t.Run("absent", func(t *testing.T) {
		st := resourcetest.Load(t, ft, resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(dir, "nope")}))
		if st.Exists {
			t.Fatalf("want absent, got %+v", st)
		}
	})
	t.Run("present", func(t *testing.T) {
		p := filepath.Join(dir, "present")
		resourcetest.WriteFile(t, p, "hello\n", 0o640)
		st := resourcetest.Load(t, ft, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "ignored"}))
		if !st.Exists || st.Extra["kind"] != "file" {
			t.Fatalf("want an existing file, got %+v", st)
		}
		want := map[string]cty.Value{
			"content": cty.StringVal("hello\n"),
			"mode":    cty.StringVal("0640"),
		}
		for k, v := range want {
			if !st.Values[k].RawEquals(v) {
				t.Errorf("%s = %#v, want %#v", k, st.Values[k], v)
			}
		}
		me, _, myGroup, _ := resourcetest.Whoami(t)
		if st.Values["owner"].AsString() != me || st.Values["group"].AsString() != myGroup {
			t.Errorf("owner/group = %#v/%#v, want %s/%s", st.Values["owner"], st.Values["group"], me, myGroup)
		}
	})
	t.Run("load view hides desired state but whether content is set", func(t *testing.T) {
		r := resourcetest.NewRes(t, ft, "", map[string]any{"path": "/x", "content": "c", "mode": "600", "backup": 2})
		v := r.LoadView()
		if !v.IsSet("content") || v.IsSet("mode") || !v.IsSet("path") || !v.IsSet("backup") {
			t.Fatalf("LoadView values = %v", v.Values)
		}
	})
	t.Run("metadata only when the recipe sets no content", func(t *testing.T) {
		p := filepath.Join(dir, "metadata")
		resourcetest.WriteFile(t, p, "not read\n", 0o640)
		ft := BuiltinFileType()
		st := resourcetest.Load(t, ft, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "mode": "0600"}))
		if _, read := st.Values["content"]; read || !st.Values["mode"].RawEquals(cty.StringVal("0640")) || st.Private != nil {
			t.Fatalf("values %v, private %v: want the mode and no content", st.Values, st.Private)
		}
		// A delete reads the content: the plan shows what goes.
		st = resourcetest.Load(t, ft, resourcetest.NewRes(t, ft, "delete", map[string]any{"path": p}))
		if !st.Values["content"].RawEquals(cty.StringVal("not read\n")) {
			t.Fatalf("a delete did not read the content: %v", st.Values)
		}
	})
}

func TestFilePlan(t *testing.T) {
	dir := t.TempDir()
	ft := FileType()
	existing := filepath.Join(dir, "existing")
	resourcetest.WriteFile(t, existing, "old\n", 0o600)
	me, myUID, myGroup, _ := resourcetest.Whoami(t)

	cases := []struct {
		name    string
		path    string
		action  string
		vals    map[string]any
		kind    resources.Kind
		changes []string
		groups  []string
		reason  string
	}{
		{"create absent", filepath.Join(dir, "new"), "", map[string]any{"content": "x"}, resources.Create, []string{"content", "mode"}, []string{"content", "mode"}, "does not exist"},
		{"update content", existing, "create", map[string]any{"content": "new\n"}, resources.Update, []string{"content"}, []string{"content"}, "content differs"},
		{"no-op", existing, "create", map[string]any{"content": "old\n"}, resources.NoOp, nil, nil, "already in the desired state"},
		{"unset mode left alone", existing, "create", map[string]any{"content": "old\n", "owner": me}, resources.NoOp, nil, nil, ""},
		{"mode 600 equals 0600", existing, "create", map[string]any{"mode": "600"}, resources.NoOp, nil, nil, ""},
		{"mode 384 equals 0600", existing, "create", map[string]any{"mode": 384}, resources.NoOp, nil, nil, ""},
		{"mode differs", existing, "create", map[string]any{"mode": "0644"}, resources.Update, []string{"mode"}, []string{"mode"}, "mode differs"},
		{"owner by id equals its name", existing, "create", map[string]any{"owner": myUID, "group": myGroup}, resources.NoOp, nil, nil, ""},
		{"content and mode", existing, "create", map[string]any{"content": "n", "mode": "0644"}, resources.Update, []string{"content", "mode"}, []string{"content", "mode"}, "content and mode differ"},
		{"create_if_missing exists", existing, "create_if_missing", map[string]any{"content": "other"}, resources.NoOp, nil, nil, "exists; create_if_missing leaves it as it is"},
		{"create_if_missing absent", filepath.Join(dir, "new"), "create_if_missing", map[string]any{}, resources.Create, []string{"mode"}, []string{"mode"}, ""},
		{"delete existing", existing, "delete", map[string]any{}, resources.Delete, nil, nil, ""},
		{"delete absent", filepath.Join(dir, "new"), "delete", map[string]any{}, resources.NoOp, nil, nil, "does not exist"},
		{"touch existing", existing, "touch", map[string]any{}, resources.Update, nil, []string{"touch"}, "touch updates the modification time"},
		{"touch absent", filepath.Join(dir, "new"), "touch", map[string]any{}, resources.Create, []string{"mode"}, []string{"mode"}, ""},
		{"nothing", existing, "nothing", map[string]any{"content": "x"}, resources.NoOp, nil, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.vals["path"] = c.path
			_, step := resourcetest.Plan(t, ft, resourcetest.NewRes(t, ft, c.action, c.vals))
			if step.Kind != c.kind {
				t.Fatalf("kind = %s (%s), want %s", step.Kind, step.Reason, c.kind)
			}
			if got := resourcetest.ChangedProps(step); !slices.Equal(got, c.changes) {
				t.Errorf("changes = %v, want %v", got, c.changes)
			}
			if !slices.Equal(step.Groups, c.groups) {
				t.Errorf("groups = %v, want %v", step.Groups, c.groups)
			}
			if c.reason != "" && step.Reason != c.reason {
				t.Errorf("reason = %q, want %q", step.Reason, c.reason)
			}
		})
	}

	// Root gives the file away at apply; anyone else could not, so the
	// plan refuses it.
	t.Run("owner differs", func(t *testing.T) {
		r := resourcetest.NewRes(t, ft, "create", map[string]any{"path": existing, "owner": resourcetest.SomeoneElse()})
		if root, _ := testenv.Has(testenv.Root); !root {
			resourcetest.PlanErr(t, ft, r, "needs root")
			return
		}
		_, step := resourcetest.Plan(t, ft, r)
		if step.Kind != resources.Update || !slices.Equal(resourcetest.ChangedProps(step), []string{"owner"}) || !slices.Equal(step.Groups, []string{"owner"}) {
			t.Fatalf("got %s %v %v (%s), want update [owner]", step.Kind, resourcetest.ChangedProps(step), step.Groups, step.Reason)
		}
	})
	t.Run("create marks the default mode", func(t *testing.T) {
		_, step := resourcetest.Plan(t, ft, resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(dir, "new")}))
		c := step.Change("mode")
		if c == nil || !c.Default || !c.After.RawEquals(cty.StringVal("0644")) {
			t.Fatalf("mode change = %+v, want default 0644", c)
		}
	})
	t.Run("plan is deterministic", func(t *testing.T) {
		r := resourcetest.NewRes(t, ft, "", map[string]any{"path": existing, "content": "new", "mode": "0644"})
		st := resourcetest.Load(t, ft, r)
		a, _ := resources.PlanStep(ft, r, st)
		b, _ := resources.PlanStep(ft, r, st)
		if a.Kind != b.Kind || a.Reason != b.Reason || !slices.Equal(resourcetest.ChangedProps(a), resourcetest.ChangedProps(b)) || !slices.Equal(a.Groups, b.Groups) {
			t.Fatalf("two plans differ: %+v vs %+v", a, b)
		}
	})
	t.Run("unknown action", func(t *testing.T) {
		resourcetest.PlanErr(t, ft, resourcetest.NewRes(t, ft, "explode", map[string]any{"path": existing}), `no action "explode"`)
	})
}

func TestFileOnOtherKinds(t *testing.T) {
	dir := t.TempDir()
	ft := FileType()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "missing"), dangling); err != nil {
		t.Fatal(err)
	}
	toDir := filepath.Join(dir, "todir")
	if err := os.Symlink(sub, toDir); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, action, want string
	}{
		{"directory create", sub, "create", "cannot manage a directory at " + sub},
		{"directory delete", sub, "delete", "cannot manage a directory"},
		{"directory touch", sub, "touch", "cannot manage a directory"},
		{"dangling link", dangling, "create", "unless the recipe sets manage_symlink_source = true"},
		{"link to directory", toDir, "create", "unless the recipe sets manage_symlink_source = true"},
		{"followed dangling link", dangling, "create", "dangling link"},
		{"followed link to directory", toDir, "create", "which is a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vals := map[string]any{"path": c.path, "content": "x"}
			if strings.HasPrefix(c.name, "followed") {
				vals["manage_symlink_source"] = true
			}
			resourcetest.PlanErr(t, ft, resourcetest.NewRes(t, ft, c.action, vals), c.want)
		})
	}
	t.Run("delete removes a dangling link, not its target", func(t *testing.T) {
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "delete", map[string]any{"path": dangling}), resources.Delete)
		if _, err := os.Lstat(dangling); !os.IsNotExist(err) {
			t.Fatalf("link still there: %v", err)
		}
	})
}

func TestFileConverge(t *testing.T) {
	ft := FileType()

	t.Run("create writes content and default mode", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "motd")
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "hello\n"}), resources.Create)
		if got := resourcetest.ReadFile(t, p); got != "hello\n" {
			t.Errorf("content = %q", got)
		}
		if got := resourcetest.PermOf(t, p); got != 0o644 {
			t.Errorf("mode = %04o, want 0644", got)
		}
		resourcetest.NoTempFiles(t, dir)
	})
	t.Run("create ignores the umask", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "open")
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "mode": "0666"}), resources.Create)
		if got := resourcetest.PermOf(t, p); got != 0o666 {
			t.Errorf("mode = %04o, want 0666", got)
		}
	})
	t.Run("setuid survives chown", func(t *testing.T) {
		resourcetest.RequireRoot(t)
		p := filepath.Join(t.TempDir(), "suid")
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "mode": "4755", "owner": "65534"}), resources.Create)
		if got := resourcetest.PermOf(t, p); got != 0o4755 {
			t.Errorf("mode = %04o, want 4755", got)
		}
	})
	t.Run("atomic update replaces the inode and keeps mode and owner", func(t *testing.T) {
		resourcetest.RequireRoot(t)
		dir := t.TempDir()
		p := filepath.Join(dir, "f")
		resourcetest.WriteFile(t, p, "old", 0o600)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		before := resourcetest.InodeOf(t, p)
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "new"}), resources.Update)
		if resourcetest.ReadFile(t, p) != "new" {
			t.Fatal("content not written")
		}
		if resourcetest.InodeOf(t, p) == before {
			t.Error("atomic update kept the inode; want a rename over it")
		}
		if got := resourcetest.PermOf(t, p); got != 0o600 {
			t.Errorf("mode = %04o, want the old 0600", got)
		}
		fi, _ := os.Stat(p)
		if uid := newStatInfo(fi).uid; uid != 65534 {
			t.Errorf("owner = %d, want the old 65534", uid)
		}
		resourcetest.NoTempFiles(t, dir)
	})
	t.Run("in-place update keeps the inode", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.WriteFile(t, p, "old content", 0o640)
		before := resourcetest.InodeOf(t, p)
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "new", "atomic_update": false}), resources.Update)
		if resourcetest.ReadFile(t, p) != "new" || resourcetest.InodeOf(t, p) != before || resourcetest.PermOf(t, p) != 0o640 {
			t.Fatalf("content %q inode kept %v mode %04o", resourcetest.ReadFile(t, p), resourcetest.InodeOf(t, p) == before, resourcetest.PermOf(t, p))
		}
	})
	t.Run("in-place create", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "c", "mode": "0600", "atomic_update": false}), resources.Create)
		if resourcetest.ReadFile(t, p) != "c" || resourcetest.PermOf(t, p) != 0o600 {
			t.Fatalf("content %q mode %04o", resourcetest.ReadFile(t, p), resourcetest.PermOf(t, p))
		}
	})
	t.Run("binary content is replaced", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.WriteFile(t, p, "\xff\xfe\x00", 0o644)
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "text"}), resources.Update)
		if resourcetest.ReadFile(t, p) != "text" {
			t.Fatalf("content = %q", resourcetest.ReadFile(t, p))
		}
	})
	t.Run("mode only is a chmod", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.WriteFile(t, p, "same", 0o600)
		before := resourcetest.InodeOf(t, p)
		env := resourcetest.TestEnv(t)
		resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "mode": 420}), resources.Update)
		if resourcetest.PermOf(t, p) != 0o644 || resourcetest.InodeOf(t, p) != before {
			t.Fatalf("mode %04o, inode kept %v", resourcetest.PermOf(t, p), resourcetest.InodeOf(t, p) == before)
		}
		if _, names := backupsOf(t, env, p); len(names) != 0 {
			t.Errorf("a chmod made backups: %v", names)
		}
	})
	t.Run("owner by name", func(t *testing.T) {
		resourcetest.RequireRoot(t)
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.WriteFile(t, p, "x", 0o644)
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "owner": "65534", "group": "65534"}), resources.Update)
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "owner": "root", "group": "0"}), resources.Update)
		fi, _ := os.Stat(p)
		if si := newStatInfo(fi); si.uid != 0 || si.gid != 0 {
			t.Fatalf("owner %d:%d, want 0:0", si.uid, si.gid)
		}
	})
	t.Run("unknown owner is an error naming it", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.ConvergeErr(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "owner": "no-such-user-xyz"}), `user "no-such-user-xyz" does not exist`)
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Error("the file was created although its owner is unknown")
		}
	})
	t.Run("missing parent", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "x", "y")
		resourcetest.ConvergeErr(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(parent, "f"), "content": "c"}),
			"parent directory "+parent+" does not exist; create it with a directory resource")
	})
	t.Run("through a symlink", func(t *testing.T) {
		dir := t.TempDir()
		real := filepath.Join(dir, "real")
		link := filepath.Join(dir, "link")
		resourcetest.WriteFile(t, real, "old", 0o644)
		if err := os.Symlink("real", link); err != nil {
			t.Fatal(err)
		}
		resourcetest.PlanErr(t, ft, resourcetest.NewRes(t, ft, "", map[string]any{"path": link, "content": "new"}), "unless the recipe sets manage_symlink_source = true")
		if st := resourcetest.Load(t, ft, resourcetest.NewRes(t, ft, "", map[string]any{"path": link})); st.Extra["kind"] != "symlink" || len(st.Values) != 0 {
			t.Fatalf("a link not followed was read through: %+v", st)
		}
		st, _ := resourcetest.Plan(t, ft, resourcetest.NewRes(t, ft, "", map[string]any{"path": link, "manage_symlink_source": true}))
		if st.Extra["kind"] != "symlink" || st.Extra["link_target"] != "real" || st.Extra["resolved_path"] != real {
			t.Fatalf("extra = %v", st.Extra)
		}
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": link, "content": "new", "mode": "0600", "manage_symlink_source": true}), resources.Update)
		if target, err := os.Readlink(link); err != nil || target != "real" {
			t.Fatalf("the link was replaced: %q, %v", target, err)
		}
		if resourcetest.ReadFile(t, real) != "new" || resourcetest.PermOf(t, real) != 0o600 {
			t.Fatalf("real file: %q %04o", resourcetest.ReadFile(t, real), resourcetest.PermOf(t, real))
		}
	})
	t.Run("bytes that are not NFC text still differ", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.WriteFile(t, p, "e\u0301", 0o644) // decomposed; cty normalises it to "é"
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "\u00e9"}), resources.Update)
		if resourcetest.ReadFile(t, p) != "\u00e9" {
			t.Fatalf("content = %q", resourcetest.ReadFile(t, p))
		}
	})
}

func TestFileBackups(t *testing.T) {
	ft := FileType()
	t.Run("rotation keeps the newest N", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "etc", "app.conf")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		resourcetest.WriteFile(t, p, "v0", 0o640)
		env := resourcetest.TestEnv(t)
		for i := 1; i <= 4; i++ {
			resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "v" + string(rune('0'+i)), "backup": 2}), resources.Update)
		}
		dir, names := backupsOf(t, env, p)
		if len(names) != 2 {
			t.Fatalf("backups = %v, want 2", names)
		}
		if got := resourcetest.ReadFile(t, filepath.Join(dir, names[0])); got != "v3" {
			t.Errorf("newest backup = %q, want v3", got)
		}
		if got := resourcetest.ReadFile(t, filepath.Join(dir, names[1])); got != "v2" {
			t.Errorf("older backup = %q, want v2", got)
		}
		if got := resourcetest.PermOf(t, filepath.Join(dir, names[0])); got != 0o640 {
			t.Errorf("backup mode = %04o, want the file's 0640", got)
		}
		if want := filepath.Join(env.StateDir, "backup", p); dir != want {
			t.Errorf("backups are in %s, want %s (the path, mirrored)", dir, want)
		}
		if _, err := time.Parse(backupStamp, names[0]); err != nil {
			t.Errorf("backup stamp %q: %v", names[0], err)
		}
	})
	t.Run("backup 0 keeps none", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.WriteFile(t, p, "old", 0o644)
		env := resourcetest.TestEnv(t)
		resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "new", "backup": 0}), resources.Update)
		if _, names := backupsOf(t, env, p); len(names) != 0 {
			t.Fatalf("backups = %v", names)
		}
	})
	t.Run("no state dir keeps none", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.WriteFile(t, p, "old", 0o644)
		resourcetest.Apply(t, ft, &resources.Env{}, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "new"}), resources.Update)
	})
}

func TestFileDeleteAndTouch(t *testing.T) {
	ft := FileType()
	t.Run("delete backs up and removes", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.WriteFile(t, p, "keep me", 0o644)
		env := resourcetest.TestEnv(t)
		resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "delete", map[string]any{"path": p}), resources.Delete)
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("still there: %v", err)
		}
		dir, names := backupsOf(t, env, p)
		if len(names) != 1 || resourcetest.ReadFile(t, filepath.Join(dir, names[0])) != "keep me" {
			t.Fatalf("backups = %v", names)
		}
	})
	t.Run("touch updates mtime only", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.WriteFile(t, p, "x", 0o600)
		old := time.Now().Add(-48 * time.Hour)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "touch", map[string]any{"path": p}), resources.Update)
		fi, _ := os.Stat(p)
		if time.Since(fi.ModTime()) > time.Minute {
			t.Errorf("mtime %v not updated", fi.ModTime())
		}
		if resourcetest.ReadFile(t, p) != "x" || resourcetest.PermOf(t, p) != 0o600 {
			t.Errorf("touch changed more than the time")
		}
	})
	t.Run("touch creates", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		resourcetest.Apply(t, ft, resourcetest.TestEnv(t), resourcetest.NewRes(t, ft, "touch", map[string]any{"path": p}), resources.Create)
		if resourcetest.ReadFile(t, p) != "" {
			t.Error("want an empty file")
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := resourcetest.NewRes(t, ft, "", map[string]any{"path": filepath.Join(t.TempDir(), "f")})
		if _, err := ft.Load(ctx, r.LoadView()); err == nil {
			t.Fatal("Load with a cancelled context succeeded")
		}
	})
}
