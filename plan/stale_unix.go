//go:build unix

package plan

import "syscall"

const noFollow = syscall.O_NOFOLLOW
