package apply

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// StaleError is returned when pre-flight finds that the host changed since
// the plan was made. Nothing was changed. Exit code 3.
type StaleError struct {
	Resources []StaleResource
}

// StaleResource is one resource whose live state no longer matches the plan.
type StaleResource struct {
	Address     string
	Differences []plan.Difference
	// Planned is the kind of step the plan holds; Now is what the type
	// would do from the live reading (empty when it could not say).
	Planned resources.Kind
	Now     resources.Kind
	// StartedEarlier is set for a run an earlier apply of the plan started
	// and did not see end (killed while it ran): toque cannot tell whether
	// it ran, so a person must decide, with a new plan.
	StartedEarlier time.Time
}

func (e *StaleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the plan is stale: %s changed on the host since the plan was made, or may have, so nothing was applied:\n", e.What())
	for _, r := range e.Resources {
		for _, d := range r.Differences {
			fmt.Fprintf(&b, "\n  %s: %s: %s at plan time, now %s", r.Address, d.Property, orNone(d.Then), orNone(d.Now))
		}
		if r.Now != "" && r.Now != r.Planned {
			fmt.Fprintf(&b, "\n  %s: the plan says %s, the host now needs %s", r.Address, r.Planned, r.Now)
		}
	}
	b.WriteString("\n\nRun toque plan again and review the new plan.")
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// LockHeldError is returned when another apply holds the lock: the
// host-wide one (HostWide) or the state directory's. Nothing was changed.
// Exit code 4.
type LockHeldError struct {
	// PID, User, Hostname, Since and StateDir describe the holder as it
	// recorded itself; PID is 0 when the holder's record could not be
	// read.
	PID      int
	User     string
	Hostname string
	Since    time.Time
	StateDir string
	// Path is the lock file; HostWide is set when it is the host-wide
	// lock (Applier.HostLock) rather than the state directory's.
	Path     string
	HostWide bool
	// Waited is how long this apply waited (LockTimeout) before giving up.
	Waited time.Duration
}

func (e *LockHeldError) Error() string {
	var b strings.Builder
	b.WriteString("another toque apply holds the ")
	if e.HostWide {
		b.WriteString("host-wide ")
	}
	b.WriteString("lock")
	if e.PID != 0 {
		fmt.Fprintf(&b, ": pid %d", e.PID)
		if e.User != "" {
			fmt.Fprintf(&b, " (user %s)", e.User)
		}
		if !e.Since.IsZero() {
			fmt.Fprintf(&b, " since %s", e.Since.Format(time.RFC3339))
		}
		if e.StateDir != "" {
			fmt.Fprintf(&b, ", with state directory %s", e.StateDir)
		}
	} else {
		b.WriteString(" (its holder did not record itself)")
	}
	fmt.Fprintf(&b, "; lock file %s", e.Path)
	if e.Waited > 0 {
		fmt.Fprintf(&b, "; gave up after waiting %s", e.Waited.Round(time.Millisecond))
	}
	return b.String()
}

// InterruptedError is returned with the report when the run was stopped
// before its end: by Applier.Stop between resources, or by cancelling ctx
// (Aborted). Exit code 5.
type InterruptedError struct {
	// After is the address of the last resource that was started, or ""
	// when none was.
	After string
	// NotStarted counts resources with planned work that did not run.
	NotStarted int
	// Aborted is true when ctx was cancelled (the second SIGINT).
	Aborted bool
	// Err is the resource error of an aborted resource, if any.
	Err error
}

func (e *InterruptedError) Error() string {
	verb := "stopped"
	if e.Aborted {
		verb = "aborted"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apply %s", verb)
	if e.After != "" {
		fmt.Fprintf(&b, " after %s", e.After)
	} else {
		b.WriteString(" before the first change")
	}
	fmt.Fprintf(&b, "; %d resource%s with planned changes not started", e.NotStarted, plural(e.NotStarted))
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// ownFailure reports whether err is the failure of addr itself, not of a
// target it notified (whose own ignore_failure decides for it) nor of the
// journal (which stops every apply).
func ownFailure(err error, addr string) bool {
	var je *JournalError
	if errors.As(err, &je) {
		return false
	}
	var re *ResourceError
	if errors.As(err, &re) {
		return re.Address == addr
	}
	return true
}

// ResourceError is one resource that failed: a read, a refused step, an
// error or a panic in its type.
type ResourceError struct {
	Address string
	Err     error
}

func (e *ResourceError) Error() string { return e.Address + ": " + e.Err.Error() }

func (e *ResourceError) Unwrap() error { return e.Err }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
