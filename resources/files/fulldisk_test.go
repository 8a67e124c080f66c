package files

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// smallTmpfs mounts a tmpfs of size bytes on a new directory and returns
// it. The mount is made in a mount namespace of the test's own thread
// (unshare(CLONE_NEWNS) on a locked OS thread, mounts made private), so
// the host never sees it; everything that must see it has to run on this
// goroutine, and the thread is discarded when the test ends. It skips the
// test, saying why, where that is not possible (not root, no namespaces).
func smallTmpfs(t *testing.T, size int) string {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Unshare) // a tmpfs in a mount namespace
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Never unlocked: the goroutine's thread, whose mount namespace is not
	// the process's, ends with the test.
	runtime.LockOSThread()
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		t.Fatalf("cannot make a mount namespace: %v", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("cannot make mounts private in the new namespace: %v", err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)+",mode=0755"); err != nil {
		t.Fatalf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes a file in dir until the file system is full, then frees
// spare bytes of it.
func fill(t *testing.T, dir string, spare int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		fi, err := f.Stat()
		if err == nil {
			err = f.Truncate(max(fi.Size()-spare, 0))
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}()
	chunk := bytes.Repeat([]byte{'f'}, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				// Whatever part of a page is left, take it too.
				for {
					if _, err := f.Write([]byte{'f'}); err != nil {
						return
					}
				}
			}
			t.Fatal(err)
		}
	}
}

// TestFullDisk writes files on a full file system: every failure must
// leave the file unchanged or say that it is left partially written and
// where its backup is.
func TestFullDisk(t *testing.T) {
	ft := FileType()
	old := strings.Repeat("old line\n", 100) // 900 bytes
	// Three chunks of rewriteInPlace; the disk has room for one and a half.
	big := strings.Repeat("new content\n", 3*inPlaceChunk/12)
	setup := func(t *testing.T) (string, *resources.Env) {
		dir := smallTmpfs(t, 4*inPlaceChunk)
		p := filepath.Join(dir, "app.conf")
		resourcetest.WriteFile(t, p, old, 0o644)
		fill(t, dir, inPlaceChunk+inPlaceChunk/2)
		return p, resourcetest.TestEnv(t) // the state directory is not on the full disk
	}
	full := func(t *testing.T) string {
		dir := smallTmpfs(t, 4*inPlaceChunk)
		p := filepath.Join(dir, "app.conf")
		resourcetest.WriteFile(t, p, old, 0o644)
		fill(t, dir, 0)
		return p
	}

	t.Run("in place, with space reserved first: unchanged", func(t *testing.T) {
		p, env := setup(t)
		r := resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": big, "atomic_update": false})
		resourcetest.ConvergeErr(t, ft, env, r, "the file is unchanged")
		resourcetest.ConvergeErr(t, ft, env, r, "no space left on device")
		if resourcetest.ReadFile(t, p) != old {
			t.Fatal("the file changed")
		}
	})
	t.Run("in place, on a file system that reserves nothing: partially written, says where the backup is", func(t *testing.T) {
		p, env := setup(t)
		was := reserveSpace
		reserveSpace = func(int, int64) error { return syscall.EOPNOTSUPP }
		t.Cleanup(func() { reserveSpace = was })
		r := resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": big, "atomic_update": false})
		st, step := resourcetest.Plan(t, ft, r)
		err := resources.ConvergeStep(t.Context(), ft, env, r, st, step)
		if err == nil {
			t.Fatal("converged on a full disk")
		}
		_, backups := backupsOf(t, env, p)
		dir, _ := BackupsOf(env.StateDir, p)
		if len(backups) != 1 {
			t.Fatalf("backups = %v", backups)
		}
		backup := filepath.Join(dir, backups[0])
		for _, want := range []string{p + " is left partially written", "its previous content is in the backup " + backup, "no space left on device", " of 3145728 bytes"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		// What the error says: the new content up to where it failed
		// (at least the first chunk), and nothing of the old, which was
		// shorter.
		var written int
		if _, serr := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "failed after "):], "failed after %d of", &written); serr != nil || written < inPlaceChunk || written >= len(big) {
			t.Fatalf("error %q does not say how far the write got (%v)", err, serr)

		}
		if got := resourcetest.ReadFile(t, p); got != big[:written] {
			t.Errorf("the file holds %d bytes, not the %d the error says", len(got), written)
		}
		if resourcetest.ReadFile(t, backup) != old {
			t.Error("the backup does not hold the previous content")
		}
	})
	t.Run("in place without a backup says so", func(t *testing.T) {
		p, env := setup(t)
		was := reserveSpace
		reserveSpace = func(int, int64) error { return syscall.EOPNOTSUPP }
		t.Cleanup(func() { reserveSpace = was })
		r := resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": big, "atomic_update": false, "backup": 0})
		resourcetest.ConvergeErr(t, ft, env, r, "is left partially written: no backup was kept")
	})
	t.Run("atomic: unchanged, no temporary file left", func(t *testing.T) {
		p, env := setup(t)
		resourcetest.ConvergeErr(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": big}), "the file is unchanged")
		if resourcetest.ReadFile(t, p) != old {
			t.Fatal("the file changed")
		}
		resourcetest.NoTempFiles(t, filepath.Dir(p))
	})
	t.Run("backups on the full disk: nothing changed", func(t *testing.T) {
		p := full(t)
		env := &resources.Env{StateDir: filepath.Join(filepath.Dir(p), "state")}
		resourcetest.ConvergeErr(t, ft, env, resourcetest.NewRes(t, ft, "", map[string]any{"path": p, "content": big, "atomic_update": false}), "(nothing was changed)")
		if resourcetest.ReadFile(t, p) != old {
			t.Fatal("the file changed")
		}
	})
}
