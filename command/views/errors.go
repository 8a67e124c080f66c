package views

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/internal/diag"
)

// Kinds of error in machine outputs (the "kind" of a JSON diagnostic, the
// "error_kind" of apply -json's error event). Commands set the kinds that
// no error type says (usage, a refused plan file, a digest mismatch);
// apply's typed errors say theirs.
const (
	KindStale          = "stale"
	KindLockHeld       = "lock_held"
	KindInterrupted    = "interrupted"
	KindResourceFailed = "resource_failed"
	KindDigestMismatch = "digest_mismatch"
	KindUntrusted      = "untrusted_state"
	KindPlanRefused    = "plan_refused"
	KindUsage          = "usage"
	KindOther          = "error"
)

// errorKind classifies an error: KindStale, KindLockHeld, KindInterrupted,
// KindUntrusted, KindResourceFailed, or KindOther.
func errorKind(err error) string {
	var stale *apply.StaleError
	var held *apply.LockHeldError
	var intr *apply.InterruptedError
	var rerr *apply.ResourceError
	var untrusted *apply.UntrustedError
	switch {
	case errors.As(err, &untrusted):
		return KindUntrusted
	case errors.As(err, &stale):
		return KindStale
	case errors.As(err, &held):
		return KindLockHeld
	case errors.As(err, &intr):
		return KindInterrupted
	case errors.As(err, &rerr):
		return KindResourceFailed
	}
	return KindOther
}

// kindOf is d's kind: the one its command set, else its error's, else ""
// (a diagnostic about the recipes).
func kindOf(d *diag.Diagnostic) string {
	if d.Kind != "" {
		return d.Kind
	}
	if d.Err != nil {
		return errorKind(d.Err)
	}
	return ""
}

// worded returns d with apply's typed errors worded for people: a summary
// and a detail that lists what the error holds (every stale difference,
// the lock's holder). Other diagnostics are returned as they are.
func worded(d *diag.Diagnostic) *diag.Diagnostic {
	if d.Err == nil || d.Summary != d.Err.Error() {
		return d // worded by whoever made it
	}
	var stale *apply.StaleError
	var held *apply.LockHeldError
	var untrusted *apply.UntrustedError
	out := *d
	switch {
	case errors.As(d.Err, &stale):
		out.Summary, out.Detail = staleText(stale)
	case errors.As(d.Err, &held):
		out.Summary, out.Detail = "Another toque apply holds the lock", lockHeldText(held)
		if held.HostWide {
			out.Summary = "Another toque apply holds the host-wide lock"
		}
	case errors.As(d.Err, &untrusted):
		out.Summary, out.Detail = "Refusing an untrusted state directory", untrustedText(untrusted)
	default:
		return d
	}
	return &out
}

func staleText(e *apply.StaleError) (summary, detail string) {
	n := len(e.Resources)
	var b strings.Builder
	fmt.Fprintf(&b, "%d resource%s changed on the host since the plan was made, so nothing was applied:\n", n, plural(n))
	for _, r := range e.Resources {
		for _, d := range r.Differences {
			fmt.Fprintf(&b, "\n  %s: %s: %s at plan time, now %s", EscapeLine(r.Address), EscapeLine(d.Property), EscapeLine(orNone(d.Then)), EscapeLine(orNone(d.Now)))
		}
		if r.Now != "" && r.Now != r.Planned {
			fmt.Fprintf(&b, "\n  %s: the plan says %s, the host now needs %s", EscapeLine(r.Address), r.Planned, r.Now)
		}
	}
	b.WriteString("\n\nRun toque plan again and review the new plan.")
	return "The plan is stale", b.String()
}

func lockHeldText(e *apply.LockHeldError) string {
	var b strings.Builder
	if e.PID != 0 {
		fmt.Fprintf(&b, "It is held by pid %d", e.PID)
		if e.User != "" {
			fmt.Fprintf(&b, " (user %s)", EscapeLine(e.User))
		}
		if !e.Since.IsZero() {
			fmt.Fprintf(&b, " since %s", e.Since.Format(time.RFC3339))
		}
		if e.StateDir != "" {
			fmt.Fprintf(&b, ", applying with state directory %s", EscapeLine(e.StateDir))
		}
		b.WriteString(".")
	} else {
		b.WriteString("Its holder did not record itself.")
	}
	fmt.Fprintf(&b, " Lock file: %s.", EscapeLine(e.Path))
	if e.HostWide {
		b.WriteString(" One apply runs on a host at a time, whatever its state directory.")
	}
	if e.Waited > 0 {
		fmt.Fprintf(&b, " Gave up after waiting %s.", e.Waited.Round(time.Millisecond))
	}
	b.WriteString(" Nothing was changed. Wait for that apply to finish, or give -lock-timeout=DURATION to wait for it.")
	return b.String()
}

func untrustedText(e *apply.UntrustedError) string {
	return fmt.Sprintf("%s %s. Nothing was changed: toque writes its lock, journal, reports and backups there, "+
		"so another user who controls them could make it overwrite any file. Give it to the user toque runs as, writable by no one else (chmod 0700), "+
		"remove any link planted in it, or choose another directory (-state-dir or TOQUE_STATE_DIR; TOQUE_HOST_LOCK for the host-wide lock).",
		EscapeLine(e.Path), EscapeLine(e.Reason))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
