package apply

import (
	"time"

	"github.com/toquehq/toque/plan"
)

// Hooks is how progress reaches the user: the command implements it to
// print "file[/x]: Creating…", "Creation complete after 0s", "Still
// creating… [10s elapsed]". Apply calls the hooks from one goroutine at a
// time: Heartbeat runs on a timer goroutine, but only between PreApply and
// PostApply of the same resource, and never after PostApply started.
type Hooks interface {
	// PreApply is called right before a resource with planned work is read
	// again and converged.
	PreApply(r *plan.Resource)
	// PostApply is called after every resource PreApply was called for,
	// with its outcome ("changed", "unchanged", "failed", "failed
	// (ignored)", or "skipped" when a guard that an earlier change of this
	// run flipped now skips it: DiffersFromPlan says which) and duration.
	PostApply(r *plan.Resource, rr ResourceReport)
	// Heartbeat is called every Applier.Heartbeat while a resource runs.
	Heartbeat(r *plan.Resource, elapsed time.Duration)
	// AlreadyDone is called, in plan order and instead of PreApply and
	// PostApply, for a resource with planned work that was found already in
	// the planned state (an earlier, interrupted run of the plan did it).
	AlreadyDone(r *plan.Resource)
	// Output is called, between PreApply and PostApply, with each line a
	// resource with live_stream = true prints (stream is "stdout" or
	// "stderr"), as it prints it; the line is escaped already. It is
	// called from the process's reader goroutines, concurrently with
	// Heartbeat: implementations lock.
	Output(r *plan.Resource, stream, line string)
	// Resumed is called, instead of PreApply and PostApply, for a resource
	// or notified run that an earlier, unfinished apply of the same plan
	// finished (the journal says so): it is not done again. rr has the
	// outcome "done earlier", and its Reason says what that apply did and
	// when. Resources come in plan order, before the first resource this
	// apply converges; notified runs after them.
	Resumed(r *plan.Resource, rr ResourceReport)
	// Warning is called with something that did not stop the apply but
	// deserves a look: a *JournalDamage, or a journal that could not be
	// compacted or pruned.
	Warning(err error)
}

// NopHooks ignores every call.
type NopHooks struct{}

func (NopHooks) PreApply(*plan.Resource)                  {}
func (NopHooks) PostApply(*plan.Resource, ResourceReport) {}
func (NopHooks) Heartbeat(*plan.Resource, time.Duration)  {}
func (NopHooks) AlreadyDone(*plan.Resource)               {}
func (NopHooks) Output(*plan.Resource, string, string)    {}
func (NopHooks) Resumed(*plan.Resource, ResourceReport)   {}
func (NopHooks) Warning(error)                            {}

// syncingHooks is how apply calls the command's hooks: before anything is
// printed, the journal is made durable and the progress that waited for
// it is printed (journal.afterSync), so that progress keeps plan order and
// never reports an outcome that is not on disk. Heartbeat and Output, which
// come from other goroutines while a resource runs, go straight through.
type syncingHooks struct{ r *run }

func (h syncingHooks) PreApply(p *plan.Resource) {
	h.r.syncJournal()
	h.r.out.PreApply(p)
}

func (h syncingHooks) PostApply(p *plan.Resource, rr ResourceReport) {
	h.r.syncJournal()
	h.r.out.PostApply(p, rr)
}

func (h syncingHooks) Heartbeat(p *plan.Resource, d time.Duration) { h.r.out.Heartbeat(p, d) }

func (h syncingHooks) AlreadyDone(p *plan.Resource) {
	h.r.syncJournal()
	h.r.out.AlreadyDone(p)
}

func (h syncingHooks) Output(p *plan.Resource, stream, line string) { h.r.out.Output(p, stream, line) }

func (h syncingHooks) Resumed(p *plan.Resource, rr ResourceReport) {
	h.r.syncJournal()
	h.r.out.Resumed(p, rr)
}

func (h syncingHooks) Warning(err error) {
	h.r.syncJournal()
	h.r.out.Warning(err)
}

// syncJournal makes the journal durable and prints what waited for that;
// a failure stays in the journal (journal.Err) and stops the apply.
func (r *run) syncJournal() {
	if r.j != nil {
		_ = r.j.sync()
	}
}
