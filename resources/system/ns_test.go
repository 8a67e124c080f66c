package system

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

// threadNS moves the test's goroutine onto an OS thread of its own in new
// namespaces of the kinds flags name (syscall.CLONE_NEWNS for mounts,
// CLONE_NEWUTS for the hostname), so that what the test mounts or names
// is seen only by that thread and the processes it starts (mount(8),
// hostname): never by the host, nor by the other tests. In a new mount
// namespace every mount is made private, and /run is a fresh tmpfs, so
// that libmount's utab goes there and not into the host's /run. The
// thread is never unlocked: it ends with the test, and its namespaces
// with it. Everything that must see them runs on the test's goroutine,
// and reads the thread's mount table, /proc/thread-self/mountinfo.
func threadNS(t *testing.T, flags int) {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Unshare)
	runtime.LockOSThread()
	if err := syscall.Unshare(flags); err != nil {
		t.Fatalf("cannot make namespaces %#x: %v", flags, err)
	}
	if flags&syscall.CLONE_NEWNS == 0 {
		return
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("cannot make mounts private in the new namespace: %v", err)
	}
	if err := syscall.Mount("tmpfs", "/run", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		t.Fatalf("cannot hide /run in the new namespace: %v", err)
	}
}

// threadMountinfo is the mount table threadNS's mounts show in.
const threadMountinfo = "/proc/thread-self/mountinfo"

// mountDir makes a directory to mount on, under the test's temporary
// directory.
func mountDir(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for syscall.Unmount(d, syscall.MNT_DETACH) == nil {
		}
	})
	return d
}
