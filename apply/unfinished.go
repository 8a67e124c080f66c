package apply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/internal/trust"
)

// An apply that stops part-way (a failed resource or notified run, an
// interruption, a kill) leaves its plan unfinished; applying the same plan
// again resumes it. A new plan does not show what it left undone when
// what would trigger it has not changed since: a notifier already in its
// planned state notifies nothing, so a reload that failed is not planned
// again, and the host runs the old configuration. Unfinished reads the
// journals so that plan can say so.

// UnfinishedApply is an apply of a plan that stopped before the plan
// finished, after which no apply of any plan finished.
type UnfinishedApply struct {
	PlanDigest string
	// PlanFile is the plan file that apply applied ("" when it applied a
	// plan it made itself, or its journal predates the record).
	PlanFile    string
	PlanCreated time.Time
	// Stopped is the time of the apply's last record; Outcome how it
	// ended: "failed", "interrupted", or "stopped" when it recorded no end
	// (killed, the host went down, or it is still running).
	Stopped time.Time
	Outcome string
	// Report is the path of its report ("" when it wrote none).
	Report string
	// NotDone is what it left undone: from its report, the resources and
	// notified runs that failed or did not start; without one, from the
	// journal, the steps that failed or whose end is missing.
	NotDone []UnfinishedStep
	// Journal is the journal's path.
	Journal string
}

// UnfinishedStep is a resource or notified run an unfinished apply did not
// do.
type UnfinishedStep struct {
	Address  string
	Notified bool
	// Outcome is "failed", "not started" or "started" (its end missing:
	// it may or may not have run).
	Outcome string
	// Reason is the error, or the reason it did not run.
	Reason string
}

// Unfinished lists, oldest first, the unfinished applies the state
// directory stateDir records of plans made for host ("" for any host)
// that no finished apply came after. It only reads: a missing state
// directory or journal folder holds none, and nothing is created. A state
// directory toque would refuse to trust is an *UntrustedError, journals
// it cannot read are skipped.
func Unfinished(stateDir, host string) ([]UnfinishedApply, error) {
	state, err := openStateDirIfExists(stateDir)
	if err != nil || state == nil {
		return nil, err
	}
	defer state.Close()
	dir, err := state.existingSubdir(journalDirName)
	if err != nil || dir == nil {
		return nil, err
	}
	defer dir.Close()
	entries, err := dir.entries()
	if err != nil {
		return nil, err
	}
	var out []UnfinishedApply
	var lastFinished time.Time
	for _, e := range entries {
		if !e.regular || !journalName.MatchString(e.name) {
			continue
		}
		jr, err := readJournalFile(dir, e.name)
		if err != nil || (host != "" && jr.host != host) {
			continue
		}
		if jr.finished {
			if jr.last.After(lastFinished) {
				lastFinished = jr.last
			}
			continue
		}
		if jr.applies == 0 {
			continue // a header only: no apply started
		}
		out = append(out, jr.unfinished(state, dir.Join(e.name)))
	}
	kept := out[:0]
	for _, u := range out {
		if u.Stopped.After(lastFinished) {
			kept = append(kept, u)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Stopped.Before(kept[j].Stopped) })
	return kept, nil
}

// journalRecord is what Unfinished reads of one journal, without its plan.
type journalRecord struct {
	digest, host string
	planCreated  time.Time
	applies      int
	planFile     string
	finished     bool
	// ended is set when the last apply recorded its end (outcome,
	// report).
	ended           bool
	outcome, report string
	last            time.Time
	steps           map[stepRef]*recordedStep
	order           []stepRef
}

type recordedStep struct {
	address          string
	started, endSeen bool
	outcome          string
}

// readJournalFile reads the journal name of dir without its plan: lines
// that are not whole or not this format are skipped (apply, which knows
// the plan, is the one that refuses a damaged journal).
func readJournalFile(dir *StateDir, name string) (*journalRecord, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, journalMaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > journalMaxSize {
		return nil, errors.New("too large")
	}
	lines := bytes.Split(data[:bytes.LastIndexByte(data, '\n')+1], []byte("\n"))
	if len(lines) < 2 {
		return nil, errors.New("no header")
	}
	var h journalHeader
	if err := json.Unmarshal(lines[0], &h); err != nil || h.Version == nil || *h.Version != JournalFormatVersion {
		return nil, errors.New("not a journal of this format")
	}
	jr := &journalRecord{digest: h.PlanDigest, host: h.Host, planCreated: h.PlanCreated, last: h.Created, steps: map[stepRef]*recordedStep{}}
	for _, line := range lines[1 : len(lines)-1] {
		var ev journalEvent
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if ev.Time.After(jr.last) {
			jr.last = ev.Time
		}
		jr.record(ev)
	}
	return jr, nil
}

// record takes in one event.
func (jr *journalRecord) record(ev journalEvent) {
	switch ev.Event {
	case evApplyStart:
		jr.applies++
		jr.ended = false
		if ev.PlanFile != "" {
			jr.planFile = ev.PlanFile
		}
		return
	case evApplyEnd:
		jr.ended, jr.outcome, jr.report = true, ev.Outcome, ev.Report
		jr.finished = jr.finished || ev.Finished
		return
	case evResourceStart, evResourceEnd, evNotifiedStart, evNotifiedEnd:
	default:
		return
	}
	if ev.Index == nil {
		return
	}
	ref := stepRef{notified: ev.Event == evNotifiedStart || ev.Event == evNotifiedEnd, index: *ev.Index}
	s := jr.steps[ref]
	if s == nil {
		s = &recordedStep{}
		jr.steps[ref] = s
		jr.order = append(jr.order, ref)
	}
	s.address = ev.Address
	if ev.Event == evResourceStart || ev.Event == evNotifiedStart {
		s.started, s.endSeen, s.outcome = true, false, ""
		return
	}
	s.endSeen, s.outcome = true, ev.Outcome
}

// unfinished words jr as an UnfinishedApply; what it left undone comes
// from its report in state when it has one.
func (jr *journalRecord) unfinished(state *StateDir, path string) UnfinishedApply {
	u := UnfinishedApply{PlanDigest: jr.digest, PlanFile: jr.planFile, PlanCreated: jr.planCreated, Stopped: jr.last, Outcome: "stopped", Journal: path}
	if jr.ended {
		u.Outcome, u.Report = jr.outcome, jr.report
	}
	if rep := readOwnReport(state, u.Report); rep != nil {
		add := func(rrs []ResourceReport, notified bool) {
			for _, rr := range rrs {
				if rr.Outcome == OutcomeFailed || rr.Outcome == OutcomeNotStarted {
					why := rr.Error
					if why == "" {
						why = rr.Reason
					}
					u.NotDone = append(u.NotDone, UnfinishedStep{Address: rr.Address, Notified: notified, Outcome: rr.Outcome, Reason: why})
				}
			}
		}
		add(rep.Resources, false)
		add(rep.Notified, true)
		return u
	}
	sort.SliceStable(jr.order, func(i, j int) bool { return !jr.order[i].notified && jr.order[j].notified })
	for _, ref := range jr.order {
		s := jr.steps[ref]
		switch {
		case s.started && !s.endSeen, s.outcome == journalAborted:
			u.NotDone = append(u.NotDone, UnfinishedStep{Address: s.address, Notified: ref.notified, Outcome: "started", Reason: "its end was not recorded: it may or may not have run"})
		case s.outcome == OutcomeFailed:
			u.NotDone = append(u.NotDone, UnfinishedStep{Address: s.address, Notified: ref.notified, Outcome: OutcomeFailed})
		}
	}
	return u
}

// readOwnReport reads the report at path when it is one of state's
// reports, nil otherwise.
func readOwnReport(state *StateDir, path string) *Report {
	if path == "" || filepath.Dir(path) != ReportsDir(state.Path()) {
		return nil
	}
	dir, err := state.existingSubdir(reportsDirName)
	if err != nil || dir == nil {
		return nil
	}
	defer dir.Close()
	f, err := dir.OpenFile(filepath.Base(path), os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	var rep Report
	if json.NewDecoder(io.LimitReader(f, journalMaxSize)).Decode(&rep) != nil {
		return nil
	}
	return &rep
}

// openStateDirIfExists opens the state directory path for reading, with
// the checks OpenStateDir makes, but creates nothing: nil when it does not
// exist.
func openStateDirIfExists(path string) (*StateDir, error) {
	if path == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", path, err)
	}
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := trust.Ancestors(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openDirError(abs, err, func(st *unix.Stat_t) error { return unix.Lstat(abs, st) })
	}
	return newStateDir(abs, fd, false)
}

// existingSubdir opens the directory name inside d with d's checks, nil
// when it does not exist; it creates nothing.
func (d *StateDir) existingSubdir(name string) (*StateDir, error) {
	if err := plainName(name); err != nil {
		return nil, err
	}
	path := d.Join(name)
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, openDirError(path, err, func(st *unix.Stat_t) error { return unix.Fstatat(d.fd(), name, st, unix.AT_SYMLINK_NOFOLLOW) })
	}
	return newStateDir(path, fd, false)
}
