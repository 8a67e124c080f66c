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
	KindAlreadyApplied = "already_applied"
	KindJournal        = "journal"
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
	var applied *apply.AlreadyAppliedError
	var journal *apply.JournalError
	var damage *apply.JournalDamage
	var old *apply.PlanTooOldError
	switch {
	case errors.As(err, &untrusted):
		return KindUntrusted
	case errors.As(err, &applied):
		return KindAlreadyApplied
	case errors.As(err, &journal), errors.As(err, &damage):
		return KindJournal
	case errors.As(err, &old):
		return KindPlanRefused
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
	var applied *apply.AlreadyAppliedError
	var old *apply.PlanTooOldError
	var journal *apply.JournalError
	var damage *apply.JournalDamage
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
	case errors.As(d.Err, &applied):
		out.Summary, out.Detail = "The plan was already applied", alreadyAppliedText(applied)
	case errors.As(d.Err, &old):
		out.Summary, out.Detail = "The plan is too old to apply", fmt.Sprintf("It was made at %s. toque keeps the record of what each plan's applies did for %d days, so it can no longer tell whether this plan was applied, and a plan is applied once. Nothing was changed. Run toque plan again and review the new plan.",
			old.Created.UTC().Format(time.RFC3339), int(old.Retention/(24*time.Hour)))
	case errors.As(d.Err, &damage):
		out.Summary, out.Detail = "Ignored an unfinished line at the end of the apply journal", fmt.Sprintf(
			"%s ends with %d bytes that are not a whole line: an earlier apply of this plan was killed, or the host crashed, while it recorded a step. toque ignores them and resumes from what the journal holds whole: a step whose end was lost is checked again before it is done, and a run that may have happened makes the plan stale.",
			EscapeLine(damage.Path), damage.Bytes)
	case errors.As(d.Err, &journal):
		out.Summary, out.Detail = "Cannot use the apply journal", fmt.Sprintf(
			"%s: %s. The journal records what each apply of a plan did, so that a plan is applied once and an interrupted apply resumes without repeating work; toque will not guess without it. If the journal cannot be read, nothing was changed: run toque plan again (a new plan has a journal of its own), and keep the damaged file for a look. If it could not be written, the apply stopped before the next resource.",
			EscapeLine(journal.Path), EscapeLine(journal.Err.Error()))
	default:
		return d
	}
	return &out
}

func staleText(e *apply.StaleError) (summary, detail string) {
	n := len(e.Resources)
	var b strings.Builder
	doubt := false
	for _, r := range e.Resources {
		doubt = doubt || !r.StartedEarlier.IsZero()
	}
	if doubt {
		fmt.Fprintf(&b, "%d resource%s changed on the host since the plan was made, or may have been changed by an earlier apply of it, so nothing was applied:\n", n, plural(n))
	} else {
		fmt.Fprintf(&b, "%d resource%s changed on the host since the plan was made, so nothing was applied:\n", n, plural(n))
	}
	for _, r := range e.Resources {
		if !r.StartedEarlier.IsZero() {
			fmt.Fprintf(&b, "\n  %s: an earlier apply of this plan started it at %s and was stopped before it recorded its end: it may or may not have run", EscapeLine(r.Address), r.StartedEarlier.UTC().Format(time.RFC3339))
			continue
		}
		for _, d := range r.Differences {
			fmt.Fprintf(&b, "\n  %s: %s: %s at plan time, now %s", EscapeLine(r.Address), EscapeLine(d.Property), EscapeLine(orNone(d.Then)), EscapeLine(orNone(d.Now)))
		}
		if r.Now != "" && r.Now != r.Planned {
			fmt.Fprintf(&b, "\n  %s: the plan says %s, the host now needs %s", EscapeLine(r.Address), r.Planned, r.Now)
		}
	}
	if doubt {
		b.WriteString("\n\ntoque will not run it again, nor skip it, on a guess: check what it did, then run toque plan again and review whether the new plan runs it.")
	} else {
		b.WriteString("\n\nRun toque plan again and review the new plan.")
	}
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

func alreadyAppliedText(e *apply.AlreadyAppliedError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "An apply of this plan (%s) finished at %s", e.PlanDigest, e.At.UTC().Format(time.RFC3339))
	if e.Report != "" {
		fmt.Fprintf(&b, "; its report is %s", EscapeLine(e.Report))
	}
	b.WriteString(". A saved plan is applied once: applying it again would run its commands again. Nothing was changed. To converge the host again, run toque plan and review the new plan.")
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
