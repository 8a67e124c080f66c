package command

import (
	"errors"
	"syscall"

	"github.com/toquehq/toque/command/views"
)

// Exit codes, documented in the README. They are views' (views.ExitStatus
// derives a failed command's from its diagnostics, through the one table
// of typed errors); main and the tests read them here.
const (
	ExitOK             = views.ExitOK
	ExitError          = views.ExitError
	ExitChanges        = views.ExitChanges        // plan -detailed-exitcode: the plan has changes
	ExitStale          = views.ExitStale          // apply: the host no longer matches the plan
	ExitLockHeld       = views.ExitLockHeld       // apply: another apply holds the lock
	ExitInterrupted    = views.ExitInterrupted    // stopped by a signal before finishing
	ExitAlreadyApplied = views.ExitAlreadyApplied // apply: the plan was applied already; nothing was changed
	ExitNotAsPlanned   = views.ExitNotAsPlanned   // apply: carried out, but some resources did not end as planned
)

// readerGone reports whether err is stdout's reader having closed it (toque
// show plan.out | head): the reader has seen enough, which is a normal end,
// not an error to report.
func readerGone(err error) bool {
	return errors.Is(err, syscall.EPIPE)
}
