package command

import (
	"errors"
	"syscall"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/internal/diag"
)

// Exit codes. They are documented in the README.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitChanges     = 2 // plan -detailed-exitcode: the plan has changes
	ExitStale       = 3 // apply: the host no longer matches the plan
	ExitLockHeld    = 4 // apply: another apply holds the lock
	ExitInterrupted = 5 // stopped by a signal before finishing
	// ExitAlreadyApplied: apply: the plan was applied already (its journal
	// says an apply of it finished); nothing was changed.
	ExitAlreadyApplied = 6
)

// errInterrupted is the error of a read-only command (plan, install…)
// stopped by a signal: nothing was changed.
var errInterrupted = errors.New("interrupted: stopped before finishing; nothing was changed and no plan was saved")

// exitStatus is the one mapping from a command's diagnostics to its exit
// status: 0 without errors; 3 for a stale plan, 4 for a held apply lock, 5
// for an interrupted run, 6 for a plan applied already (the first such
// error decides); 1 for any other error. plan -detailed-exitcode's 2 is decided by plan itself, when this
// is 0.
func exitStatus(diags diag.Diagnostics) int {
	for _, d := range diags {
		if d.Severity != diag.Error || d.Err == nil {
			continue
		}
		var stale *apply.StaleError
		var held *apply.LockHeldError
		var intr *apply.InterruptedError
		var applied *apply.AlreadyAppliedError
		switch {
		case errors.As(d.Err, &applied):
			return ExitAlreadyApplied
		case errors.As(d.Err, &stale):
			return ExitStale
		case errors.As(d.Err, &held):
			return ExitLockHeld
		case errors.As(d.Err, &intr), errors.Is(d.Err, errInterrupted):
			return ExitInterrupted
		}
	}
	if diags.HasErrors() {
		return ExitError
	}
	return ExitOK
}

// readerGone reports whether err is stdout's reader having closed it (toque
// show plan.out | head): the reader has seen enough, which is a normal end,
// not an error to report.
func readerGone(err error) bool {
	return errors.Is(err, syscall.EPIPE)
}
