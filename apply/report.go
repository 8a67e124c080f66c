package apply

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
)

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
	// resources included); AlreadyDone counts "already done"; Failed counts
	// "failed" and "failed (ignored)"; Skipped counts "skipped";
	// NotStarted counts "not started".
	Changed     int `json:"changed"`
	Unchanged   int `json:"unchanged"`
	AlreadyDone int `json:"already_done"`
	Failed      int `json:"failed"`
	Skipped     int `json:"skipped"`
	NotStarted  int `json:"not_started"`
	// Interrupted is true when Stop or ctx ended the run before its end.
	Interrupted bool `json:"interrupted"`
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
}

// tally recomputes the counts from the resource outcomes and those of the
// notified runs that happened (a resource whose own action is nothing is
// then counted by its notified runs, not as unchanged).
func (r *Report) tally() {
	r.Changed, r.Unchanged, r.AlreadyDone, r.Failed, r.Skipped, r.NotStarted = 0, 0, 0, 0, 0, 0
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
		case OutcomeFailed, OutcomeFailedIgnored:
			r.Failed++
		case OutcomeSkipped:
			r.Skipped++
		case OutcomeNotStarted:
			r.NotStarted++
		}
	}
}

// ReportsDir is the reports folder inside the state directory.
func ReportsDir(stateDir string) string { return filepath.Join(stateDir, "reports") }

// write stores the report as {UTC timestamp}.json and last.json, both 0600,
// each written atomically.
func (r *Report) write(stateDir string) error {
	dir := ReportsDir(stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write apply report: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write apply report: %w", err)
	}
	b = append(b, '\n')
	base := r.Started.UTC().Format("20060102T150405.000Z")
	name := base + ".json"
	for i := 1; ; i++ {
		if _, err := os.Lstat(filepath.Join(dir, name)); errors.Is(err, os.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s-%d.json", base, i)
	}
	path := filepath.Join(dir, name)
	if err := writeFileAtomic(path, b); err != nil {
		return fmt.Errorf("write apply report: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, "last.json"), b); err != nil {
		return fmt.Errorf("write apply report: %w", err)
	}
	r.Path = path
	return nil
}

// writeFileAtomic writes b to path through a temp file in the same folder,
// fsynced, then renamed over path.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return nil
}
