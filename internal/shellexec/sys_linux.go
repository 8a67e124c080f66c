package shellexec

import (
	"errors"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
)

// errThreadUnusable means the umask thread could not be set up; Run falls
// back to the /bin/sh wrapper.
var errThreadUnusable = errors.New("cannot give a thread its own umask")

// threadBroken is set once unshare(CLONE_FS) has failed (seccomp, say), so
// later runs go straight to the wrapper.
var threadBroken atomic.Bool

func umaskThreadUsable() bool { return !threadBroken.Load() }

// sysProcAttr puts the child in its own process group and has the kernel
// kill it if toque's thread that started it dies.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
}

// startInThread starts cmd with the given umask without touching toque's
// own: on a locked OS thread that unshares its filesystem attributes (umask,
// cwd, root) from the rest of the process, sets the umask there and forks.
// The thread then waits for the child and is never unlocked, so the runtime
// destroys it when this goroutine ends: its odd umask never leaks to other
// goroutines. (Should the thread be the main thread, the runtime parks it
// for good instead; it runs nothing else either way.) Waiting there also keeps the parent-death signal, which the
// kernel ties to the forking thread, from firing early.
func startInThread(cmd *exec.Cmd, umask int, waitCh chan<- error) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_FS); err != nil {
			threadBroken.Store(true)
			runtime.UnlockOSThread() // unchanged: safe to reuse
			started <- errThreadUnusable
			return
		}
		syscall.Umask(umask)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waitCh <- cmd.Wait()
	}()
	return <-started
}
