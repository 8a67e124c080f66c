package apply

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

// nobody returns the uid and gid of the user nobody, skipping the test
// unless it runs as root (only root can give a file to another user).
func nobody(t *testing.T) (int, int) {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Nobody)
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

func mustUntrusted(t *testing.T, err error, path, reason string) {
	t.Helper()
	var ue *UntrustedError
	if !errors.As(err, &ue) {
		t.Fatalf("error %v, want *UntrustedError", err)
	}
	if ue.Path != path || !strings.Contains(ue.Reason, reason) {
		t.Errorf("refused %q because it %q; want %q, %q", ue.Path, ue.Reason, path, reason)
	}
}

func TestOpenStateDirCreatesPrivateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "state")
	old := syscall.Umask(0o277) // would leave the owner unable to write
	defer syscall.Umask(old)
	sd, err := OpenStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state directory %v, %v; want a 0700 directory", fi.Mode(), err)
	}
	sub, err := sd.Subdir("reports")
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if fi, err := os.Lstat(filepath.Join(dir, "reports")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("subdirectory %v, %v; want 0700", fi.Mode(), err)
	}
	// An existing private directory is opened again as it is.
	sd2, err := OpenStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sd2.Close()
}

func TestOpenStateDirRefusesUntrustedDirectories(t *testing.T) {
	cases := []struct {
		name string
		// setup prepares base and returns the state directory to open and
		// the path that must be refused.
		setup  func(t *testing.T, base string) (state, refused string)
		reason string
	}{
		{"group-writable", func(t *testing.T, base string) (string, string) {
			d := filepath.Join(base, "state")
			mkdirMode(t, d, 0o770)
			return d, d
		}, "writable by its group"},
		{"world-writable", func(t *testing.T, base string) (string, string) {
			d := filepath.Join(base, "state")
			mkdirMode(t, d, 0o707)
			return d, d
		}, "writable by every user"},
		{"a symbolic link", func(t *testing.T, base string) (string, string) {
			real := filepath.Join(base, "real")
			mkdirMode(t, real, 0o700)
			d := filepath.Join(base, "state")
			if err := os.Symlink(real, d); err != nil {
				t.Fatal(err)
			}
			return d, d
		}, "symbolic link"},
		{"a file", func(t *testing.T, base string) (string, string) {
			d := filepath.Join(base, "state")
			if err := os.WriteFile(d, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return d, d
		}, "not a directory"},
		{"a parent anyone can write", func(t *testing.T, base string) (string, string) {
			p := filepath.Join(base, "shared")
			mkdirMode(t, p, 0o777)
			return filepath.Join(p, "state"), p
		}, "writable by every user without the sticky bit"},
		{"owned by another user", func(t *testing.T, base string) (string, string) {
			uid, gid := nobody(t)
			d := filepath.Join(base, "state")
			mkdirMode(t, d, 0o700)
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
			return d, d
		}, "is owned by uid"},
		{"a parent owned by another user", func(t *testing.T, base string) (string, string) {
			uid, gid := nobody(t)
			p := filepath.Join(base, "home")
			mkdirMode(t, p, 0o755)
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(p, "state"), p
		}, "could replace what is below it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			state, refused := c.setup(t, base)
			before := snapshotTree(t, base)
			sd, err := OpenStateDir(state)
			if err == nil {
				sd.Close()
				t.Fatal("an untrusted state directory was opened")
			}
			mustUntrusted(t, err, refused, c.reason)
			if after := snapshotTree(t, base); after != before {
				t.Errorf("refusing changed the tree:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func TestOpenStateDirAcceptsStickyWorldWritableParent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tmp")
	mkdirMode(t, p, os.ModeSticky|0o777)
	sd, err := OpenStateDir(filepath.Join(p, "state"))
	if err != nil {
		t.Fatalf("a state directory below a sticky directory such as /tmp: %v", err)
	}
	sd.Close()
}

// TestApplyRefusesHostileStateFiles plants a link (or a second hard link)
// where apply writes, pointing at a sentinel: apply must refuse or replace
// the entry, and the sentinel must not change.
func TestApplyRefusesHostileStateFiles(t *testing.T) {
	cases := []struct {
		name    string
		plant   func(t *testing.T, state, sentinel string)
		refused string // "" when apply must succeed
	}{
		{"lock file a symbolic link", func(t *testing.T, state, sentinel string) {
			symlink(t, sentinel, filepath.Join(state, LockFileName))
		}, LockFileName},
		{"lock file a hard link", func(t *testing.T, state, sentinel string) {
			if err := os.Link(sentinel, filepath.Join(state, LockFileName)); err != nil {
				t.Skipf("cannot make a hard link here: %v", err)
			}
		}, LockFileName},
		{"reports folder a symbolic link", func(t *testing.T, state, sentinel string) {
			symlink(t, filepath.Dir(sentinel), filepath.Join(state, "reports"))
		}, "reports"},
		{"backup folder a symbolic link", func(t *testing.T, state, sentinel string) {
			symlink(t, filepath.Dir(sentinel), filepath.Join(state, "backup"))
		}, "backup"},
		{"last report a symbolic link", func(t *testing.T, state, sentinel string) {
			mkdirMode(t, filepath.Join(state, "reports"), 0o700)
			symlink(t, sentinel, filepath.Join(state, "reports", "last.json"))
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, h := newApplier(t, testRegistry())
			mkdirMode(t, a.StateDir, 0o700)
			sentinel := filepath.Join(t.TempDir(), "sentinel")
			if err := os.WriteFile(sentinel, []byte("do not touch\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c.plant(t, a.StateDir, sentinel)
			f := filepath.Join(t.TempDir(), "f")
			p := makePlan(t, a.Registry, tfile(f, "x"))

			_, err := a.Apply(context.Background(), p)
			if c.refused == "" {
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				if fi, err := os.Lstat(filepath.Join(a.StateDir, "reports", "last.json")); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("last.json was not replaced by a regular file: %v %v", fi.Mode(), err)
				}
			} else {
				mustUntrusted(t, err, filepath.Join(a.StateDir, c.refused), "")
				if len(h.Events()) != 0 {
					t.Errorf("resources ran despite the refusal: %v", h.Events())
				}
				mustNotExist(t, f)
			}
			if got := readFile(t, sentinel); got != "do not touch\n" {
				t.Errorf("the sentinel changed through the planted link: %q", got)
			}
			if fi, _ := os.Stat(sentinel); fi.Mode().Perm() != 0o644 {
				t.Errorf("the sentinel's mode changed: %v", fi.Mode())
			}
		})
	}
}

func TestApplyRefusesStateDirOfAnotherUser(t *testing.T) {
	uid, gid := nobody(t)
	a, _ := newApplier(t, testRegistry())
	mkdirMode(t, a.StateDir, 0o700)
	if err := os.Chown(a.StateDir, uid, gid); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "f")
	_, err := a.Apply(context.Background(), makePlan(t, a.Registry, tfile(f, "x")))
	mustUntrusted(t, err, a.StateDir, "is owned by uid "+strconv.Itoa(uid))
	mustNotExist(t, f)
	mustNotExist(t, filepath.Join(a.StateDir, LockFileName))
}

func TestHostLockHeldByApplyWithAnotherStateDir(t *testing.T) {
	hostLock := filepath.Join(t.TempDir(), "run", "apply.lock")
	holder := startHostHolder(t, hostLock)
	a, h := newApplier(t, testRegistry())
	a.HostLock = hostLock
	f := filepath.Join(t.TempDir(), "f")
	_, err := a.Apply(context.Background(), makePlan(t, a.Registry, tfile(f, "x")))
	var le *LockHeldError
	if !errors.As(err, &le) {
		t.Fatalf("Apply error %v, want *LockHeldError", err)
	}
	if !le.HostWide || le.PID != holder.Process.Pid || le.Path != hostLock || le.StateDir != holderStateDir {
		t.Errorf("lock error %+v; want the host-wide lock held by pid %d with state directory %s", le, holder.Process.Pid, holderStateDir)
	}
	if !strings.Contains(err.Error(), "host-wide") || !strings.Contains(err.Error(), holderStateDir) {
		t.Errorf("message %q does not say it is the host-wide lock and whose", err)
	}
	if len(h.Events()) != 0 {
		t.Error("something ran without the host-wide lock")
	}
	mustNotExist(t, f)
	if fi, err := os.Stat(filepath.Dir(hostLock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("host lock directory %v, %v; want 0700", fi.Mode(), err)
	}
}

func TestHostLockThatIsTheStateDirLock(t *testing.T) {
	a, _ := newApplier(t, testRegistry())
	a.HostLock = filepath.Join(a.StateDir, LockFileName)
	f := filepath.Join(t.TempDir(), "f")
	if _, err := a.Apply(context.Background(), makePlan(t, a.Registry, tfile(f, "x"))); err != nil {
		t.Fatalf("one file named as both locks must be locked once: %v", err)
	}
}

func TestHostLockDirectoryMustBeTrusted(t *testing.T) {
	base := t.TempDir()
	shared := filepath.Join(base, "run")
	mkdirMode(t, shared, 0o777)
	a, _ := newApplier(t, testRegistry())
	a.HostLock = filepath.Join(shared, "apply.lock")
	f := filepath.Join(t.TempDir(), "f")
	_, err := a.Apply(context.Background(), makePlan(t, a.Registry, tfile(f, "x")))
	mustUntrusted(t, err, shared, "every user")
	mustNotExist(t, f)
}

func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// snapshotTree lists every entry under dir with its mode and, for a file,
// its size.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String() + " " + strconv.FormatInt(fi.Size(), 10) + "\n")
		return nil
	})
	return b.String()
}
