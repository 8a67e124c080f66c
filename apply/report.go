package apply

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/toquehq/toque/resources"
)

// Outcomes of a resource in a Report.
const (
	OutcomeChanged       = "changed"
	OutcomeUnchanged     = "unchanged"
	OutcomeAlreadyDone   = "already done"
	OutcomeFailed        = "failed"
	OutcomeFailedIgnored = "failed (ignored)"
	OutcomeNotStarted    = "not started"
	OutcomeSkipped       = "skipped"
	// OutcomeDoneEarlier: an earlier apply of the same plan, which did not
	// finish, finished this resource or notified run (the journal says
	// so); it was not done again.
	OutcomeDoneEarlier = "done earlier"
)

// SkippedAtApply begins the Reason of a resource that a guard decided at
// apply skipped; the guard's verdict follows it.
const SkippedAtApply = "skipped: decided at apply: "

// Report is what an apply did, written as JSON to
// {StateDir}/reports/{UTC timestamp}.json and {StateDir}/reports/last.json.
type Report struct {
	PlanDigest string    `json:"plan_digest,omitempty"`
	Host       string    `json:"host"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	// Resources has one entry per plan resource, in plan order.
	Resources []ResourceReport `json:"resources"`
	// Notified holds the notified runs of notification targets, in the
	// order they ran, then every run the plan listed that did not happen
	// (outcome "not notified": its notifiers did not change, the reason
	// names them; or "not started"). Each Reason names the notifiers and
	// the timing. A target the plan did not show is never run: such a
	// notification is listed with the outcome "refused: not in the plan".
	Notified []ResourceReport `json:"notified,omitempty"`
	// Changed counts "changed"; Unchanged counts "unchanged" (no-op
	// resources included); AlreadyDone counts "already done"; DoneEarlier
	// counts "done earlier"; Failed counts "failed" and "failed
	// (ignored)"; Skipped counts "skipped"; NotStarted counts "not
	// started".
	Changed     int `json:"changed"`
	Unchanged   int `json:"unchanged"`
	AlreadyDone int `json:"already_done"`
	DoneEarlier int `json:"done_earlier"`
	Failed      int `json:"failed"`
	Skipped     int `json:"skipped"`
	NotStarted  int `json:"not_started"`
	// Interrupted is true when Stop or ctx ended the run before its end.
	Interrupted bool `json:"interrupted"`
	// Resumed is true when this apply resumed an earlier, unfinished apply
	// of the same plan (its journal existed).
	Resumed bool `json:"resumed"`
	// PlanFinished is true when the plan is now finished: every resource and
	// notified run reached its outcome, so the plan will not be applied
	// again.
	PlanFinished bool `json:"plan_finished"`
	// Verified is set when the end-state check ran (the plan carried out,
	// Applier.SkipVerify not set): every resource was read again and
	// compared with the state the plan predicted. NotAsPlanned lists how
	// those that did not end so differ, and DidNotEndAsPlanned counts
	// them (resources, not differences).
	Verified           bool            `json:"verified"`
	DidNotEndAsPlanned int             `json:"did_not_end_as_planned"`
	NotAsPlanned       []EndDifference `json:"not_as_planned,omitempty"`
	// Path is where the report was written ("" when it was not).
	Path string `json:"-"`
}

// ResourceReport is one resource's outcome.
type ResourceReport struct {
	Address string `json:"address"`
	// Kind is the planned kind of step.
	Kind    resources.Kind `json:"kind"`
	Outcome string         `json:"outcome"`
	// Reason is the plan's reason, or why the outcome differs from it.
	Reason string `json:"reason,omitempty"`
	// DiffersFromPlan describes how the live state differed from the plan's
	// reading right before the resource converged (a change made earlier in
	// this run), "" when it did not.
	DiffersFromPlan string `json:"differs_from_plan,omitempty"`
	Error           string `json:"error,omitempty"`
	DurationMS      int64  `json:"duration_ms"`
	// KnownAtApply names the properties whose values, known only at
	// apply, were evaluated right before the resource converged (sorted);
	// DecidedAtApply words the verdicts of the guards decided at apply
	// ("only_if `test -f x` passed").
	KnownAtApply   []string `json:"known_at_apply,omitempty"`
	DecidedAtApply []string `json:"decided_at_apply,omitempty"`
	// Actions, for a resource of several actions, are each action's
	// outcome, in order; the fields above sum them up.
	Actions []ActionReport `json:"actions,omitempty"`
}

// ActionReport is one action's outcome, for a resource of several.
type ActionReport struct {
	Action          string         `json:"action"`
	Kind            resources.Kind `json:"kind"`
	Outcome         string         `json:"outcome"`
	Reason          string         `json:"reason,omitempty"`
	DiffersFromPlan string         `json:"differs_from_plan,omitempty"`
	Error           string         `json:"error,omitempty"`
	DurationMS      int64          `json:"duration_ms"`
}

// tally recomputes the counts from the resource outcomes and those of the
// notified runs that happened (a resource whose own action is nothing is
// then counted by its notified runs, not as unchanged).
func (r *Report) tally() {
	r.Changed, r.Unchanged, r.AlreadyDone, r.DoneEarlier, r.Failed, r.Skipped, r.NotStarted = 0, 0, 0, 0, 0, 0, 0
	ran := map[string]bool{}
	list := make([]ResourceReport, 0, len(r.Resources)+len(r.Notified))
	for _, rr := range r.Notified {
		if rr.Outcome != OutcomeNotNotified && rr.Outcome != OutcomeRefused && rr.Outcome != OutcomeNotStarted {
			ran[rr.Address] = true
			list = append(list, rr)
		}
	}
	for _, rr := range r.Resources {
		if rr.Kind == resources.NoOp && ran[rr.Address] {
			continue
		}
		list = append(list, rr)
	}
	for _, rr := range list {
		switch rr.Outcome {
		case OutcomeChanged:
			r.Changed++
		case OutcomeUnchanged:
			r.Unchanged++
		case OutcomeAlreadyDone:
			r.AlreadyDone++
		case OutcomeDoneEarlier:
			r.DoneEarlier++
		case OutcomeFailed, OutcomeFailedIgnored:
			r.Failed++
		case OutcomeSkipped:
			r.Skipped++
		case OutcomeNotStarted:
			r.NotStarted++
		}
	}
}

// reportsDirName is the reports folder's name inside the state directory.
const reportsDirName = "reports"

// ReportsDir is the reports folder inside the state directory.
func ReportsDir(stateDir string) string { return filepath.Join(stateDir, reportsDirName) }

// write stores the report in the state directory's reports folder as
// {UTC timestamp}.json and last.json, both 0600, each written atomically
// through the trusted directory.
func (r *Report) write(state *StateDir) error {
	dir, err := state.Subdir(reportsDirName)
	if err != nil {
		return fmt.Errorf("write apply report: %w", err)
	}
	defer dir.Close()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write apply report: %w", err)
	}
	b = append(b, '\n')
	base := r.Started.UTC().Format("20060102T150405.000Z")
	name := base + ".json"
	for i := 1; dir.Exists(name); i++ {
		name = fmt.Sprintf("%s-%d.json", base, i)
	}
	if err := dir.WriteFileAtomic(name, b); err != nil {
		return fmt.Errorf("write apply report: %w", err)
	}
	if err := dir.WriteFileAtomic("last.json", b); err != nil {
		return fmt.Errorf("write apply report: %w", err)
	}
	r.Path = dir.Join(name)
	return nil
}
