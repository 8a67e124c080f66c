//go:build unix

package host

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// kernelRelease is uname -r, or "" when uname fails.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return string(bytes.TrimRight(u.Release[:], "\x00"))
}
