//go:build unix && !linux

package shellexec

import (
	"errors"
	"os/exec"
	"syscall"
)

var errThreadUnusable = errors.New("cannot give a thread its own umask")

// umaskThreadUsable is false: only Linux can give one thread its own umask,
// so elsewhere the umask is set by the /bin/sh wrapper.
func umaskThreadUsable() bool { return false }

func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

func startInThread(cmd *exec.Cmd, umask int, waitCh chan<- error) error {
	return errThreadUnusable
}
