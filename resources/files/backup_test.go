package files

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// backupsOf returns the directory of path's backups in env's state
// directory and the backups there, newest first.
func backupsOf(t testing.TB, env *resources.Env, path string) (string, []string) {
	t.Helper()
	dir, err := BackupsOf(env.StateDir, path)
	if err != nil {
		t.Fatal(err)
	}
	names, _, err := listBackups(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, names
}

// TestBackupsDoNotCollide checks that two paths that flattened to one
// name (/d/a_b and /d/a/b were both d_a_b) keep their own backups, and
// pruning one leaves the other's alone.
func TestBackupsDoNotCollide(t *testing.T) {
	ft := FileType()
	root := t.TempDir()
	ab := filepath.Join(root, "d", "a_b")
	aSlashB := filepath.Join(root, "d", "a", "b")
	if err := os.MkdirAll(filepath.Dir(aSlashB), 0o755); err != nil {
		t.Fatal(err)
	}
	resourcetest.WriteFile(t, ab, "ab-0", 0o644)
	resourcetest.WriteFile(t, aSlashB, "a/b-0", 0o644)
	env := resourcetest.TestEnv(t)
	resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": ab, "content": "ab-1", "backup": 3}), resources.Update)
	resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": ab, "content": "ab-2", "backup": 3}), resources.Update)
	for i := 1; i <= 3; i++ {
		// backup = 1 prunes /d/a/b down to one backup each time.
		resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": aSlashB, "content": fmt.Sprint("a/b-", i), "backup": 1}), resources.Update)
	}
	abDir, abNames := backupsOf(t, env, ab)
	if len(abNames) != 2 || resourcetest.ReadFile(t, filepath.Join(abDir, abNames[0])) != "ab-1" || resourcetest.ReadFile(t, filepath.Join(abDir, abNames[1])) != "ab-0" {
		t.Fatalf("backups of %s = %v; pruning %s removed them", ab, abNames, aSlashB)
	}
	dir, names := backupsOf(t, env, aSlashB)
	if len(names) != 1 || resourcetest.ReadFile(t, filepath.Join(dir, names[0])) != "a/b-2" {
		t.Fatalf("backups of %s = %v", aSlashB, names)
	}
	// A file named like a backup stamp is another path, not a backup.
	odd := filepath.Join(root, "d", "20200101000000.000000000")
	resourcetest.WriteFile(t, odd, "odd-0", 0o644)
	resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": odd, "content": "odd-1"}), resources.Update)
	if _, names := backupsOf(t, env, filepath.Join(root, "d")); len(names) != 0 {
		t.Fatalf("the backup of %s counts as a backup of its directory: %v", odd, names)
	}
	if _, names := backupsOf(t, env, odd); len(names) != 1 {
		t.Fatalf("backups of %s = %v", odd, names)
	}
}

// TestBackupLeftoversAreCleanedUp checks that what a killed run leaves (a
// zero-byte backup, as toque made before backups were written atomically;
// the temporary backup file; a managed file's temporary file) is removed
// by the next backup of that file and never counted as a backup.
func TestBackupLeftoversAreCleanedUp(t *testing.T) {
	ft := FileType()
	root := t.TempDir()
	p := filepath.Join(root, "app.conf")
	resourcetest.WriteFile(t, p, "v0", 0o644)
	env := resourcetest.TestEnv(t)
	dir, err := BackupsOf(env.StateDir, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		resourcetest.WriteFile(t, filepath.Join(dir, old.Add(time.Duration(i)*time.Second).Format(backupStamp)), "", 0o600)
	}
	real := filepath.Join(dir, old.Add(time.Hour).Format(backupStamp))
	resourcetest.WriteFile(t, real, "an older v", 0o600)
	resourcetest.WriteFile(t, filepath.Join(dir, backupTemp), "half a cop", 0o600)
	resourcetest.WriteFile(t, filepath.Join(root, ".app.conf.toque-tmp"), "half a new", 0o600)
	if names, leftovers, _ := listBackups(dir); len(names) != 1 || len(leftovers) != 4 {
		t.Fatalf("listBackups = %v, leftovers %v; want 1 backup and 4 leftovers", names, leftovers)
	}

	resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "v1", "backup": 2}), resources.Update)
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	_, names := backupsOf(t, env, p)
	if len(entries) != 2 || !slices.Contains(got, filepath.Base(real)) || len(names) != 2 || resourcetest.ReadFile(t, filepath.Join(dir, names[0])) != "v0" {
		t.Fatalf("backup directory holds %v, want the older backup and v0's only", got)
	}
	resourcetest.NoTempFiles(t, root)
}

// TestEmptyFileIsNotBackedUp: there is nothing to restore, and a
// zero-byte backup is what a killed run leaves.
func TestEmptyFileIsNotBackedUp(t *testing.T) {
	ft := FileType()
	p := filepath.Join(t.TempDir(), "empty")
	resourcetest.WriteFile(t, p, "", 0o644)
	env := resourcetest.TestEnv(t)
	resourcetest.Apply(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": "now something"}), resources.Update)
	if _, names := backupsOf(t, env, p); len(names) != 0 {
		t.Fatalf("backups = %v", names)
	}
}

// BenchmarkBackupPrune measures what one update's backup costs (copy,
// then prune to the newest 5) when the state directory already holds 0 or
// 10,000 backups of other files: 2,000 files of the same directory with 5
// backups each, the worst case for pruning by listing. It runs on tmpfs
// where there is one, so that fsync, whose cost does not depend on the
// backups already there, does not drown what does.
func BenchmarkBackupPrune(b *testing.B) {
	for _, existing := range []int{0, 10000} {
		b.Run(fmt.Sprintf("existing=%d", existing), func(b *testing.B) {
			state := tmpfsDir(b)
			env := &resources.Env{StateDir: state}
			stamp := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range existing {
				dir, _ := BackupsOf(state, fmt.Sprintf("/srv/data/file-%04d", i/5))
				if i%5 == 0 {
					if err := os.MkdirAll(dir, 0o700); err != nil {
						b.Fatal(err)
					}
				}
				name := filepath.Join(dir, stamp.Add(time.Duration(i)*time.Second).Format(backupStamp))
				if err := os.WriteFile(name, []byte("x"), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			src := filepath.Join(tmpfsDir(b), "target")
			if err := os.WriteFile(src, []byte("content of the file\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			f, err := os.Open(src)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.ResetTimer()
			for i := range b.N {
				if _, err := backupFrom(env, "/srv/data/target", f, 0o644, 5, stamp.Add(time.Duration(i)*time.Millisecond)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
