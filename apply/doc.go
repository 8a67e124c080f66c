// Package apply executes a saved Plan on the host it was made for, once: it
// takes the apply locks, reads the plan's journal, runs the staleness
// pre-flight, converges each resource in plan order, recording each step
// in the journal, and writes a JSON report to the state directory.
//
// The steps follow design §8:
//
//  1. A plan marked errored is refused (verify.go). (The command verifies
//     the plan file's checksum, format version and host before calling
//     Apply.)
//  2. The state directory is opened and checked (statedir.go): created 0700
//     when missing, refused with an *UntrustedError when another user owns
//     it or could write it or a directory above it; every file in it is
//     opened no-follow relative to the opened directory and checked with
//     fstat before it is written. Then two locks are held with flock for
//     the whole run, always in this order: the host-wide lock
//     (Applier.HostLock; its directory is checked like the state
//     directory), so that applies with different state directories exclude
//     each other, and {StateDir}/apply.lock. A second apply fails fast with
//     a *LockHeldError naming the holder and which lock, or waits up to
//     Applier.LockTimeout for both (lock.go).
//  3. The plan's journal (journal.go), {StateDir}/journal/sha256-HEX.jsonl,
//     says what earlier applies of this plan did. A plan an apply finished
//     is refused with an *AlreadyAppliedError; an old plan with no journal
//     with a *PlanTooOldError; a journal that is not toque's, or not this
//     plan's, with a *JournalError. An unfinished apply is resumed: what the
//     journal says it finished is reported "done earlier" (Hooks.Resumed)
//     and not done again, and the notifications its changes owe are run.
//  4. Pre-flight (preflight.go): every other resource the plan read is
//     read again before anything changes (those whose type reads the
//     plan's predicted host after the others, through what their steps
//     predict: foresight.go). A reading identical to the
//     plan's is fine; a resource already in the planned state counts as
//     "already done"; a run an earlier apply of the plan started but did
//     not see end, or any other difference, makes the plan stale: Apply
//     returns a *StaleError listing every difference and the host is
//     untouched.
//  5. Converge in plan order (converge.go). Right before each resource it
//     is read again; a difference from the plan at that point was caused
//     by this run (an earlier resource), so the resource converges toward
//     the live reading and its report says how it differed — but only
//     within what the plan showed (allowed.go): a step that would change a
//     property the plan did not list, or do more than the planned kind of
//     step, fails that resource instead.
//     A panicking resource type fails only its resource.
//  6. Notifications (notify.go), following what really changed: a
//     "before" edge runs its target right before the notifier changes, an
//     "immediately" one right after it changed, and "delayed" ones are
//     queued, de-duplicated and run at the end in queue order — also after
//     a failure, which is reported after them. A target's action runs only
//     as a notified run the plan lists (Plan.NotifiedRuns), checked against
//     that plan like a resource; a notifier that did not change fires
//     nothing, and the report says so (Report.Notified).
//     Every step's outcome is appended to the journal, and made durable,
//     before the hooks hear of it; a run (kind "run") is recorded as started
//     before it starts. An apply that cannot write its journal stops before
//     the next step.
//  7. The end-state check (endstate.go): once the whole plan was carried
//     out, every resource is read again, batched as pre-flight reads, and
//     compared with the state the plan's steps predict
//     (resources.Predict); what did not end so is listed in the report
//     (NotAsPlanned) and Apply returns an *EndStateError.
//     Applier.SkipVerify turns it off.
//  8. A Report is written as JSON to {StateDir}/reports/ (finish.go) once
//     convergence has started, also when the run failed or was
//     interrupted; then the journal records the end of the apply,
//     finished or not. A finished plan's journal is compacted; journals
//     older than JournalRetention are pruned.
//
// Progress reaches the user through the Hooks interface, which the command
// implements; this package never prints.
//
// # Errors and exit codes
//
// The command maps Apply's error to an exit status with errors.As, checking
// in this order:
//
//	nil                      0  done (failures of ignore_failure resources included)
//	*StaleError              3  the plan no longer matches the host; nothing was changed
//	*LockHeldError           4  another apply holds the lock; nothing was changed
//	*InterruptedError        5  the first SIGINT stopped the run between resources,
//	                            or the second aborted it (Aborted)
//	*AlreadyAppliedError     6  an apply of the plan finished already; nothing was changed
//	*EndStateError           7  the plan was carried out, but resources did not end
//	                            as it predicted (they are listed)
//	anything else            1  error: an errored plan, an untrusted state
//	                            directory (*UntrustedError), a journal toque cannot
//	                            read or write (*JournalError), a plan too old to tell
//	                            (*PlanTooOldError), a pre-flight read failure,
//	                            a failed resource (*ResourceError), a report
//	                            that could not be written
//
// A run that did not finish (exit 1 for a failed resource, 5) leaves the
// plan unfinished: applying the same plan again resumes it.
//
// Package apply is not the planner, the plan file reader or the renderer
// (package plan), and not the CLI (package command): it does not verify plan
// files, read HCL, print, or handle signals itself — the caller turns the
// first SIGINT into Applier.Stop and the second into cancelling ctx.
package apply
