package views

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/resources"
)

// Kinds of error in machine outputs (the "kind" of a JSON diagnostic, the
// "error_kind" of apply -json's error event). Commands set the kinds that
// no error type says (usage, a refused plan file, a digest mismatch);
// typed errors have their class's (errorClasses).
const (
	KindStale          = "stale"
	KindLockHeld       = "lock_held"
	KindInterrupted    = "interrupted"
	KindResourceFailed = "resource_failed"
	KindDigestMismatch = "digest_mismatch"
	KindUntrusted      = "untrusted_state"
	KindAlreadyApplied = "already_applied"
	KindNotAsPlanned   = "not_as_planned"
	KindJournal        = "journal"
	KindPlanRefused    = "plan_refused"
	KindNeedsRoot      = "needs_root"
	KindUsage          = "usage"
	KindOther          = "error"
)

// Exit statuses, documented in the README. Commands return them (command
// re-exports them as command.Exit*); ExitStatus derives a failed command's
// from its diagnostics.
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
	// ExitNotAsPlanned: apply: the plan was carried out, but reading the
	// host again at the end found resources that did not end as the
	// plan predicted (apply.EndStateError).
	ExitNotAsPlanned = 7
)

// ErrInterrupted is the error of a command that only reads (plan,
// install, the console…) stopped by a signal: nothing was changed. An
// apply stopped by a signal is an *apply.InterruptedError.
var ErrInterrupted = errors.New("interrupted: stopped before finishing; nothing was changed and no plan was saved")

// errorClass is one kind of error toque tells apart: how to find it in an
// error's chain, the kind machine outputs give it, the exit status of a
// command that fails with it, and its wording for people.
type errorClass struct {
	// kind is the "kind" of its JSON diagnostic and the "error_kind" of
	// apply -json's error event.
	kind string
	// exit is the exit status it gives; 0 when it gives none of its own
	// (a command failing with it exits ExitError).
	exit int
	// holds reports whether err's chain holds an error of the class.
	holds func(err error) bool
	// word words err (which holds the class's error) for people: a summary
	// and a detail that lists what the error holds. nil: the error's own
	// message is its wording.
	word func(err error) (summary, detail string)
}

// errorClasses are the typed errors, in the order they are looked for in an
// error's chain. An error whose chain holds more than one is of the first
// class it holds (a journal that cannot be written, under a resource error
// or an aborted apply, is a journal error), except for its exit status: that
// is the first one a class of its chain gives (an apply aborted while its
// journal failed exits ExitInterrupted). ExitStatus, errorKind and worded
// read this table and nothing else; TestErrorClasses fails for a typed error
// of package apply that has no row here.
var errorClasses = []errorClass{
	typed(KindUntrusted, 0, untrustedText),
	typed(KindAlreadyApplied, ExitAlreadyApplied, alreadyAppliedText),
	typed(KindJournal, 0, journalText),
	typed(KindJournal, 0, journalDamageText),
	typed(KindPlanRefused, 0, planTooOldText),
	typed(KindStale, ExitStale, staleText),
	typed(KindLockHeld, ExitLockHeld, lockHeldText),
	typed[*apply.InterruptedError](KindInterrupted, ExitInterrupted, nil),
	{kind: KindInterrupted, exit: ExitInterrupted, holds: func(err error) bool { return errors.Is(err, ErrInterrupted) }},
	typed[*apply.ResourceError](KindResourceFailed, 0, nil),
	typed[*resources.NeedsRootError](KindNeedsRoot, 0, nil),
	typed(KindNotAsPlanned, ExitNotAsPlanned, notAsPlannedText),
}

// typed is the class of the errors of type E, worded by word (nil: by their
// own message).
func typed[E error](kind string, exit int, word func(E) (summary, detail string)) errorClass {
	c := errorClass{kind: kind, exit: exit, holds: func(err error) bool {
		_, ok := errors.AsType[E](err)
		return ok
	}}
	if word != nil {
		c.word = func(err error) (string, string) {
			e, _ := errors.AsType[E](err)
			return word(e)
		}
	}
	return c
}

// classOf is the class of err: the first one its chain holds (see
// errorClasses); nil for an error of no class.
func classOf(err error) *errorClass {
	for i := range errorClasses {
		if errorClasses[i].holds(err) {
			return &errorClasses[i]
		}
	}
	return nil
}

// exitOf is the exit status err gives of its own: the first one a class
// of its chain gives; 0 when none does.
func exitOf(err error) int {
	for _, c := range errorClasses {
		if c.exit != 0 && c.holds(err) {
			return c.exit
		}
	}
	return 0
}

// onlyNeedsRoot reports whether diags has errors and every one is what
// only root may do (a plan made as another user, which leaves those
// resources out): the plan is then still worth showing.
func onlyNeedsRoot(diags diag.Diagnostics) bool {
	n := 0
	for _, d := range diags {
		if d.Severity != diag.Error {
			continue
		}
		if kindOf(d) != KindNeedsRoot {
			return false
		}
		n++
	}
	return n > 0
}

// ExitStatus is the one mapping from a command's diagnostics to its exit
// status: ExitOK without errors; the status the class of an error gives
// (ExitStale, ExitLockHeld, ExitInterrupted, ExitAlreadyApplied: the first
// error that gives one decides); ExitError for any other error. plan
// -detailed-exitcode's ExitChanges is decided by plan itself, when this is
// ExitOK.
func ExitStatus(diags diag.Diagnostics) int {
	for _, d := range diags {
		if d.Severity != diag.Error || d.Err == nil {
			continue
		}
		if st := exitOf(d.Err); st != 0 {
			return st
		}
	}
	if diags.HasErrors() {
		return ExitError
	}
	return ExitOK
}

// errorKind classifies an error for machine outputs: its class's kind, or
// KindOther.
func errorKind(err error) string {
	if c := classOf(err); c != nil {
		return c.kind
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

// worded returns d with a typed error worded for people by its class: a
// summary and a detail that lists what the error holds (every stale
// difference, the lock's holder). Other diagnostics are returned as they
// are.
func worded(d *diag.Diagnostic) *diag.Diagnostic {
	if d.Err == nil || d.Summary != d.Err.Error() {
		return d // worded by whoever made it
	}
	c := classOf(d.Err)
	if c == nil || c.word == nil {
		return d
	}
	out := *d
	out.Summary, out.Detail = c.word(d.Err)
	return &out
}

func staleText(e *apply.StaleError) (summary, detail string) {
	var b strings.Builder
	doubt := false
	for _, r := range e.Resources {
		doubt = doubt || !r.StartedEarlier.IsZero()
	}
	if doubt {
		fmt.Fprintf(&b, "%s changed on the host since the plan was made, or may have been changed by an earlier apply of it, so nothing was applied:\n", e.What())
	} else {
		fmt.Fprintf(&b, "%s changed on the host since the plan was made, so nothing was applied:\n", e.What())
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

func lockHeldText(e *apply.LockHeldError) (summary, detail string) {
	summary = "Another toque apply holds the lock"
	if e.HostWide {
		summary = "Another toque apply holds the host-wide lock"
	}
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
	return summary, b.String()
}

func alreadyAppliedText(e *apply.AlreadyAppliedError) (summary, detail string) {
	var b strings.Builder
	fmt.Fprintf(&b, "An apply of this plan (%s) finished at %s", e.PlanDigest, e.At.UTC().Format(time.RFC3339))
	if e.Report != "" {
		fmt.Fprintf(&b, "; its report is %s", EscapeLine(e.Report))
	}
	b.WriteString(". A saved plan is applied once: applying it again would run its commands again. Nothing was changed. To converge the host again, run toque plan and review the new plan.")
	return "The plan was already applied", b.String()
}

func untrustedText(e *apply.UntrustedError) (summary, detail string) {
	return "Refusing an untrusted state directory", fmt.Sprintf("%s %s. Nothing was changed: toque writes its lock, journal, reports and backups there, "+
		"so another user who controls them could make it overwrite any file. Give it to the user toque runs as, writable by no one else (chmod 0700), "+
		"remove any link planted in it, or choose another directory (-state-dir or TOQUE_STATE_DIR; TOQUE_HOST_LOCK for the host-wide lock).",
		EscapeLine(e.Path), EscapeLine(e.Reason))
}

func planTooOldText(e *apply.PlanTooOldError) (summary, detail string) {
	return "The plan is too old to apply", fmt.Sprintf("It was made at %s. toque keeps the record of what each plan's applies did for %d days, so it can no longer tell whether this plan was applied, and a plan is applied once. Nothing was changed. Run toque plan again and review the new plan.",
		e.Created.UTC().Format(time.RFC3339), int(e.Retention/(24*time.Hour)))
}

func journalDamageText(e *apply.JournalDamage) (summary, detail string) {
	return "Ignored an unfinished line at the end of the apply journal", fmt.Sprintf(
		"%s ends with %d bytes that are not a whole line: an earlier apply of this plan was killed, or the host crashed, while it recorded a step. toque ignores them and resumes from what the journal holds whole: a step whose end was lost is checked again before it is done, and a run that may have happened makes the plan stale.",
		EscapeLine(e.Path), e.Bytes)
}

func journalText(e *apply.JournalError) (summary, detail string) {
	return "Cannot use the apply journal", fmt.Sprintf(
		"%s: %s. The journal records what each apply of a plan did, so that a plan is applied once and an interrupted apply resumes without repeating work; toque will not guess without it. If the journal cannot be read, nothing was changed: run toque plan again (a new plan has a journal of its own), and keep the damaged file for a look. If it could not be written, the apply stopped before the next resource.",
		EscapeLine(e.Path), EscapeLine(e.Err.Error()))
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

func notAsPlannedText(e *apply.EndStateError) (summary, detail string) {
	var b strings.Builder
	n := 0
	seen := map[string]bool{}
	for _, d := range e.Differences {
		if !seen[d.Address] {
			seen[d.Address] = true
			n++
		}
	}
	fmt.Fprintf(&b, "The plan was carried out, but reading the host again at the end, %d resource%s did not end where the plan said:\n", n, plural(n))
	for _, d := range e.Differences {
		fmt.Fprintf(&b, "\n  %s: %s: predicted %s, actual %s", EscapeLine(d.Address), EscapeLine(d.Property), EscapeLine(orNoneWord(d.Predicted)), EscapeLine(orNoneWord(d.Actual)))
	}
	b.WriteString("\n\nSomething besides the plan's steps changed them: a side effect of an earlier step, a package's maintainer script, or another process. Run toque plan to see what it would take now.")
	return "Resources did not end as planned", b.String()
}

func orNoneWord(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
