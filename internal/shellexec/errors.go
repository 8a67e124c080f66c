package shellexec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// NotFoundError reports that the interpreter or command to run does not exist
// or is not an executable file. Nothing was started.
type NotFoundError struct {
	What string // "interpreter" or "command"
	Name string // as given in the Spec
	Err  error  // why, when more than "not in PATH"; may be nil
}

func (e *NotFoundError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s %q: %v", e.What, e.Name, e.Err)
	}
	return fmt.Sprintf("%s %q not found in PATH", e.What, e.Name)
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// DirError reports that the working directory does not exist or is not a
// directory. Nothing was started.
type DirError struct {
	Dir string
	Err error
}

func (e *DirError) Error() string {
	return fmt.Sprintf("working directory %q: %v", e.Dir, e.Err)
}

func (e *DirError) Unwrap() error { return e.Err }

// UserError reports an unknown user or group, or that toque may not switch to
// them (only root may run a command as another user). Nothing was started.
type UserError struct {
	User  string // as given; empty when the problem is the group alone
	Group string // as given; empty when the problem is the user alone
	Err   error
}

func (e *UserError) Error() string {
	var who []string
	if e.User != "" {
		who = append(who, fmt.Sprintf("user %q", e.User))
	}
	if e.Group != "" {
		who = append(who, fmt.Sprintf("group %q", e.Group))
	}
	return fmt.Sprintf("%s: %v", strings.Join(who, ", "), e.Err)
}

func (e *UserError) Unwrap() error { return e.Err }

// TimeoutError reports that the process ran past its timeout and its process
// group was killed. Result holds what it printed before.
type TimeoutError struct {
	Timeout time.Duration
	Result  *Result
}

func (e *TimeoutError) Error() string {
	how := "terminated"
	if e.Result != nil && e.Result.Signal != "" {
		how = "killed with " + e.Result.Signal
	}
	return fmt.Sprintf("timed out after %s (process group %s)", e.Timeout, how)
}

// ExitError reports that the process ran and ended with an exit code that is
// not in Spec.Returns, or was killed by a signal it was not sent by Run.
// Guards treat it as "false", not as a failure.
type ExitError struct {
	Result  *Result
	Returns []int // the allowed codes, for the message
}

func (e *ExitError) Error() string {
	if e.Result.Signal != "" && e.Result.ExitCode < 0 {
		return fmt.Sprintf("killed by signal %s", e.Result.Signal)
	}
	allowed := make([]string, len(e.Returns))
	for i, c := range e.Returns {
		allowed[i] = strconv.Itoa(c)
	}
	return fmt.Sprintf("exited with code %d (allowed: %s)", e.Result.ExitCode, strings.Join(allowed, ", "))
}
