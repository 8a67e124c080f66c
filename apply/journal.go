package apply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// The apply journal records, for one plan, what its applies did, so that
// a plan is applied once: an apply of a plan whose journal says it
// finished is refused (*AlreadyAppliedError), and an apply of a plan whose
// earlier apply stopped part-way (interrupted, killed, a failed resource)
// resumes it, never doing again what the journal says was done.
//
// It lives in {StateDir}/journal/sha256-HEX.jsonl, HEX being the plan's
// digest, and is JSON Lines: a header, then one event per line, each
// appended with one write and made durable (fdatasync) before apply goes
// on, so that it survives SIGKILL, and a power loss, between resources:
//
//	{"toque_journal":1,"plan_digest":"sha256:…","host":"web-01","plan_created":"…","created":"…"}
//	{"event":"apply_start","time":"…","pid":4242,"user":"root","plan_file":"/srv/plans/web-01.plan"}
//	{"event":"resource_start","time":"…","index":2,"address":"execute[migrate]","kind":"run"}
//	{"event":"resource_end","time":"…","index":2,"address":"execute[migrate]","kind":"run","outcome":"changed"}
//	{"event":"notified_start","time":"…","index":0,"address":"execute[reload]","kind":"run"}
//	{"event":"notified_end","time":"…","index":0,"address":"execute[reload]","kind":"run","outcome":"changed","notifiers":["file[/etc/app.conf]"]}
//	{"event":"apply_end","time":"…","outcome":"complete","finished":true,"report":"/var/lib/toque/reports/….json"}
//
// index is the position in Plan.Resources (resource_*) or in
// Plan.NotifiedRuns (notified_*). resource_start is written, before the
// resource converges, only for a step of kind run (execute, scripts): a
// step whose effect toque cannot read back. Its end missing means it may
// or may not have run. Every other step is read again at pre-flight, which
// tells.
//
// A finished plan's journal is compacted to its header and its last
// apply_end line. Journals are pruned JournalRetention after their last
// event, and a plan made longer ago than that, with no journal, is
// refused: toque could no longer tell whether it was applied.
//
// Damage: a last line without its newline is what a crash while appending
// leaves; it is ignored (and cut off before the next append) with a
// warning. Anything else that is not this format (another header, another
// plan's digest, a line that is not JSON before the last, an index that
// does not match the plan) is a *JournalError: toque cannot know what was
// done, so it refuses rather than guess.

// JournalFormatVersion is the version of the journal's format. A journal
// of another version is refused.
const JournalFormatVersion = 1

// JournalRetention is how long a journal is kept after its last event, and
// how old a plan may be when its journal is gone.
const JournalRetention = 30 * 24 * time.Hour

// journalDirName is the journal folder inside the state directory.
const journalDirName = "journal"

// journalMaxSize bounds what is read of a journal (a plan of 100,000
// resources writes about 30 MB).
const journalMaxSize = 256 << 20

// Journal outcomes besides the report's: a resource whose run was
// aborted (the second SIGINT cancelled it while it ran).
const journalAborted = "aborted"

// Events of the journal.
const (
	evApplyStart    = "apply_start"
	evApplyEnd      = "apply_end"
	evResourceStart = "resource_start"
	evResourceEnd   = "resource_end"
	evNotifiedStart = "notified_start"
	evNotifiedEnd   = "notified_end"
)

var journalName = regexp.MustCompile(`^sha256-[0-9a-f]{64}\.jsonl$`)

type journalHeader struct {
	Version     *int      `json:"toque_journal"`
	PlanDigest  string    `json:"plan_digest"`
	Host        string    `json:"host"`
	PlanCreated time.Time `json:"plan_created"`
	Created     time.Time `json:"created"`
}

type journalEvent struct {
	Event     string         `json:"event"`
	Time      time.Time      `json:"time"`
	Index     *int           `json:"index,omitempty"`
	Address   string         `json:"address,omitempty"`
	Kind      resources.Kind `json:"kind,omitempty"`
	Outcome   string         `json:"outcome,omitempty"`
	Notifiers []string       `json:"notifiers,omitempty"`
	PID       int            `json:"pid,omitempty"`
	User      string         `json:"user,omitempty"`
	PlanFile  string         `json:"plan_file,omitempty"`
	Finished  bool           `json:"finished,omitempty"`
	Report    string         `json:"report,omitempty"`
}

// pastStep is what the journal says of one resource or notified run: its
// last start and end.
type pastStep struct {
	started time.Time
	// ended is set when the last start (if any) has its end; outcome and
	// at are the end's.
	ended   bool
	outcome string
	at      time.Time
	// covered are, for a notified run, the notifiers of its runs that
	// reached a final outcome.
	covered []string
}

// final reports whether the step reached an outcome that is not done
// again: changed, unchanged, already done, skipped, or failed with
// ignore_failure. A failed step is retried by the next apply of the plan
// when its pre-flight still matches.
func (s *pastStep) final() bool {
	if s == nil || !s.ended {
		return false
	}
	switch s.outcome {
	case OutcomeChanged, OutcomeUnchanged, OutcomeAlreadyDone, OutcomeSkipped, OutcomeFailedIgnored:
		return true
	}
	return false
}

// inDoubt reports whether the step was started and may or may not have
// done its work: its end was never written, or it was aborted while it
// ran.
func (s *pastStep) inDoubt() bool {
	if s == nil || s.started.IsZero() {
		return false
	}
	return !s.ended || s.outcome == journalAborted
}

// stepRef names a resource (notified false) or notified run by index.
type stepRef struct {
	notified bool
	index    int
}

// past is what earlier applies of the plan recorded.
type past struct {
	// exists is set when the journal holds a header.
	exists bool
	// applies counts apply_start events.
	applies  int
	finished bool
	// finishedAt and report are those of the apply that finished.
	finishedAt time.Time
	report     string
	resources  map[int]*pastStep
	notified   map[int]*pastStep
	// changed lists the steps that changed, in the order they did: their
	// notifications may not all have run.
	changed []stepRef
}

// journal is a plan's open journal.
type journal struct {
	dir    *StateDir
	name   string
	f      *os.File
	digest string
	p      *plan.Plan
	now    func() time.Time
	past   past
	// planFile is the plan file applied, recorded on apply_start.
	planFile string
	// size is the length of the journal's good part; damaged is the
	// number of bytes after it (an unfinished last line) to cut off.
	size    int64
	damaged int64
	// err is the first failure to write; once set, nothing more is
	// appended and the apply stops.
	err error
	// unsynced is set while a line written is not yet known durable;
	// waiting is what runs once it is (afterSync).
	unsynced bool
	waiting  []func()
}

// JournalError is a journal toque cannot read or write. An apply that
// cannot read its plan's journal changes nothing; one that cannot write it
// stops before the next resource.
type JournalError struct {
	Path string
	Err  error
}

func (e *JournalError) Error() string {
	return fmt.Sprintf("apply journal %s: %v", e.Path, e.Err)
}

func (e *JournalError) Unwrap() error { return e.Err }

// JournalDamage is the warning for an unfinished last line of a journal
// (an apply killed while appending, or a crash): it is ignored.
type JournalDamage struct {
	Path string
	// Offset is where the unfinished line starts; Bytes its length.
	Offset, Bytes int64
}

func (e *JournalDamage) Error() string {
	return fmt.Sprintf("ignored an unfinished last line of the apply journal %s (%d bytes at offset %d): an earlier apply was killed, or the host crashed, while writing it", e.Path, e.Bytes, e.Offset)
}

// AlreadyAppliedError refuses a plan whose journal says an apply of it
// finished. Nothing was changed. Exit code 6.
type AlreadyAppliedError struct {
	PlanDigest string
	// At is when the apply that finished it ended; Report is its report
	// ("" when unknown); Journal is the journal's path.
	At      time.Time
	Report  string
	Journal string
}

func (e *AlreadyAppliedError) Error() string {
	s := fmt.Sprintf("the plan %s was already applied at %s", e.PlanDigest, e.At.UTC().Format(time.RFC3339))
	if e.Report != "" {
		s += " (report " + e.Report + ")"
	}
	return s + "; a saved plan is applied once, so nothing was done: run toque plan again"
}

// PlanTooOldError refuses a plan made longer ago than JournalRetention
// that has no journal: toque no longer keeps the record that would say
// whether it was applied. Nothing was changed.
type PlanTooOldError struct {
	Created   time.Time
	Retention time.Duration
}

func (e *PlanTooOldError) Error() string {
	return fmt.Sprintf("the plan was made at %s, more than %d days ago: toque keeps the record of applied plans that long, so it cannot tell whether this one was applied; run toque plan again",
		e.Created.UTC().Format(time.RFC3339), int(e.Retention/(24*time.Hour)))
}

// journalFile is the journal's file name for digest "sha256:HEX".
func journalFile(digest string) (string, error) {
	hexPart, ok := strings.CutPrefix(digest, "sha256:")
	name := "sha256-" + hexPart + ".jsonl"
	if !ok || !journalName.MatchString(name) {
		return "", fmt.Errorf("the plan digest %q is not sha256:HEX", digest)
	}
	return name, nil
}

// openJournal opens (creating it when missing) and reads the journal of
// the plan with digest in state, and checks it: a finished plan gives an
// *AlreadyAppliedError, an old plan with no journal a *PlanTooOldError.
// The caller closes it.
func openJournal(state *StateDir, p *plan.Plan, digest string, now func() time.Time) (*journal, error) {
	name, err := journalFile(digest)
	if err != nil {
		return nil, err
	}
	dir, err := state.Subdir(journalDirName)
	if err != nil {
		return nil, err
	}
	path := dir.Join(name)
	j := &journal{dir: dir, name: name, digest: digest, p: p, now: now}
	j.past = past{resources: map[int]*pastStep{}, notified: map[int]*pastStep{}}
	// A journal is made by begin, once pre-flight passed: a plan refused
	// as stale leaves none.
	f, err := dir.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	} else if err == nil {
		j.f = f
		err = j.read()
	}
	if err != nil {
		j.close()
		return nil, &JournalError{Path: path, Err: err}
	}
	switch {
	case j.past.finished:
		j.close()
		return nil, &AlreadyAppliedError{PlanDigest: digest, At: j.past.finishedAt, Report: j.past.report, Journal: path}
	case !j.past.exists && !p.CreatedAt.IsZero() && now().Sub(p.CreatedAt) > JournalRetention:
		j.close()
		return nil, &PlanTooOldError{Created: p.CreatedAt, Retention: JournalRetention}
	}
	return j, nil
}

// path is the journal's path.
func (j *journal) path() string { return j.dir.Join(j.name) }

// damage is the warning for an ignored unfinished last line, nil when
// there is none.
func (j *journal) damage() *JournalDamage {
	if j.damaged == 0 {
		return nil
	}
	return &JournalDamage{Path: j.path(), Offset: j.size, Bytes: j.damaged}
}

// read parses the journal into j.past.
func (j *journal) read() error {
	data, err := io.ReadAll(io.LimitReader(io.NewSectionReader(j.f, 0, journalMaxSize+1), journalMaxSize+1))
	if err != nil {
		return err
	}
	if len(data) > journalMaxSize {
		return fmt.Errorf("larger than %d MiB: not a journal toque wrote", journalMaxSize>>20)
	}
	complete := bytes.LastIndexByte(data, '\n') + 1
	j.size, j.damaged = int64(complete), int64(len(data)-complete)
	lines := bytes.Split(data[:complete], []byte("\n"))
	lines = lines[:len(lines)-1] // after the last newline
	for i, line := range lines {
		var err error
		if i == 0 {
			err = j.readHeader(line)
		} else {
			err = j.readEvent(line)
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	return nil
}

func (j *journal) readHeader(line []byte) error {
	var h journalHeader
	if err := json.Unmarshal(line, &h); err != nil || h.Version == nil {
		return fmt.Errorf("not a toque apply journal (its first line is not a journal header)")
	}
	if *h.Version != JournalFormatVersion {
		return fmt.Errorf("journal format %d, but this build of toque reads format %d", *h.Version, JournalFormatVersion)
	}
	if h.PlanDigest != j.digest {
		return fmt.Errorf("the journal of plan %q, not of this plan (%s)", h.PlanDigest, j.digest)
	}
	j.past.exists = true
	return nil
}

func (j *journal) readEvent(line []byte) error {
	var ev journalEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return fmt.Errorf("not a journal event: %v", err)
	}
	pa := &j.past
	switch ev.Event {
	case evApplyStart:
		pa.applies++
		return nil
	case evApplyEnd:
		if ev.Finished {
			pa.finished, pa.finishedAt, pa.report = true, ev.Time, ev.Report
		}
		return nil
	case evResourceStart, evResourceEnd, evNotifiedStart, evNotifiedEnd:
	default:
		return nil // a later minor version's event: nothing this build needs
	}
	if ev.Index == nil {
		return fmt.Errorf("%s without an index", ev.Event)
	}
	i := *ev.Index
	notified := ev.Event == evNotifiedStart || ev.Event == evNotifiedEnd
	steps, what, n := pa.resources, "resource", len(j.p.Resources)
	if notified {
		steps, what, n = pa.notified, "notified run", len(j.p.NotifiedRuns)
	}
	if i < 0 || i >= n {
		return fmt.Errorf("%s of %s %d, but the plan has %d", ev.Event, what, i, n)
	}
	var addr string
	if notified {
		addr = j.p.NotifiedRuns[i].Address
	} else {
		addr = j.p.Resources[i].Address
	}
	if ev.Address != addr {
		return fmt.Errorf("%s of %q at index %d, where the plan has %q", ev.Event, ev.Address, i, addr)
	}
	s := steps[i]
	if s == nil {
		s = &pastStep{}
		steps[i] = s
	}
	switch ev.Event {
	case evResourceStart, evNotifiedStart:
		s.started, s.ended = ev.Time, false
	default:
		s.ended, s.outcome, s.at = true, ev.Outcome, ev.Time
		if s.final() {
			for _, n := range ev.Notifiers {
				if !contains(s.covered, n) {
					s.covered = append(s.covered, n)
				}
			}
		}
		if ev.Outcome == OutcomeChanged {
			pa.changed = append(pa.changed, stepRef{notified: notified, index: i})
		}
	}
	return nil
}

// begin makes the journal ready for this apply: cuts off a damaged last
// line, writes the header of a new journal, and records apply_start.
func (j *journal) begin() error {
	if j.f == nil {
		f, err := j.dir.OpenFile(j.name, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return j.fail(err)
		}
		j.f = f
	}
	if j.damaged > 0 {
		if err := j.f.Truncate(j.size); err != nil {
			return j.fail(err)
		}
		j.damaged = 0
	}
	if !j.past.exists {
		v := JournalFormatVersion
		h := journalHeader{Version: &v, PlanDigest: j.digest, Host: j.p.Host.Hostname, PlanCreated: j.p.CreatedAt, Created: j.now().UTC()}
		if err := j.appendLine(h); err != nil {
			return err
		}
		j.past.exists = true
	}
	ev := journalEvent{Event: evApplyStart, PID: os.Getpid(), PlanFile: j.planFile}
	if u, err := user.Current(); err == nil {
		ev.User = u.Username
	} else {
		ev.User = strconv.Itoa(os.Getuid())
	}
	return j.append(ev)
}

// append writes one event, stamped now, and makes it durable.
func (j *journal) append(ev journalEvent) error {
	ev.Time = j.now().UTC()
	return j.appendLine(ev)
}

func (j *journal) appendLine(v any) error {
	err := j.writeLine(v)
	if serr := j.sync(); err == nil {
		err = serr
	}
	return err
}

// record writes one event, stamped now, with one write(2), and leaves it
// to a later sync to make it durable: apply's group commit records the
// outcomes of a group of resources and syncs once (commit.go). A line
// written survives the process being killed; sync is for power loss.
func (j *journal) record(ev journalEvent) error {
	ev.Time = j.now().UTC()
	return j.writeLine(ev)
}

func (j *journal) writeLine(v any) error {
	if j.err != nil {
		return j.err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return j.fail(err)
	}
	b = append(b, '\n')
	if _, err := j.f.Write(b); err != nil {
		return j.fail(err)
	}
	j.size += int64(len(b))
	j.unsynced = true
	return nil
}

// sync makes every line written so far durable (fdatasync), when one is
// not yet, then runs what afterSync queued (even when the sync failed:
// the progress of what happened is shown, and the failure reported).
func (j *journal) sync() error {
	if j == nil {
		return nil
	}
	err := j.err
	if err == nil && j.unsynced {
		if e := unix.Fdatasync(int(j.f.Fd())); e != nil {
			err = j.fail(e)
		} else {
			j.unsynced = false
		}
	}
	for len(j.waiting) > 0 {
		f := j.waiting[0]
		j.waiting = j.waiting[1:]
		f()
	}
	return err
}

// afterSync runs f once every line written so far is durable: the next
// sync (at once on a nil journal). Apply queues there the progress that
// reports an outcome it recorded without syncing, so that what is printed
// as done is on disk as done.
func (j *journal) afterSync(f func()) {
	if j == nil {
		f()
		return
	}
	j.waiting = append(j.waiting, f)
}

func (j *journal) fail(err error) error {
	if j.err == nil {
		j.err = &JournalError{Path: j.path(), Err: fmt.Errorf("cannot record this apply's progress: %w; stopping, so that a later apply of this plan cannot repeat work it was not told about", err)}
	}
	return j.err
}

// Err is the first failure to write, nil when none.
func (j *journal) Err() error {
	if j == nil {
		return nil
	}
	return j.err
}

// started records that resource i (or notified run i) is about to
// converge; only a step of kind run is recorded (see the format).
func (j *journal) started(ref stepRef, addr string, kind resources.Kind) error {
	if j == nil || kind != resources.Run {
		return j.Err()
	}
	ev := journalEvent{Event: evResourceStart, Index: &ref.index, Address: addr, Kind: kind}
	if ref.notified {
		ev.Event = evNotifiedStart
	}
	return j.append(ev)
}

// ended records a resource's (or notified run's) outcome, durably;
// notifiers are those a notified run ran for.
func (j *journal) ended(ref stepRef, addr string, kind resources.Kind, outcome string, notifiers []string) error {
	if j == nil {
		return nil
	}
	return j.append(endEvent(ref, addr, kind, outcome, notifiers))
}

// endedUnsynced is ended without the sync: the group commit's.
func (j *journal) endedUnsynced(ref stepRef, addr string, kind resources.Kind, outcome string) error {
	if j == nil {
		return nil
	}
	return j.record(endEvent(ref, addr, kind, outcome, nil))
}

func endEvent(ref stepRef, addr string, kind resources.Kind, outcome string, notifiers []string) journalEvent {
	ev := journalEvent{Event: evResourceEnd, Index: &ref.index, Address: addr, Kind: kind, Outcome: outcome, Notifiers: notifiers}
	if ref.notified {
		ev.Event = evNotifiedEnd
	}
	return ev
}

// finish records the end of this apply. A finished plan's journal is
// compacted to its header and that line; then journals older than
// JournalRetention are pruned. Compacting and pruning failures are
// returned for the log: the record that matters was written.
func (j *journal) finish(outcome string, finished bool, report string) (err, cleanup error) {
	if j == nil {
		return nil, nil
	}
	ev := journalEvent{Event: evApplyEnd, Outcome: outcome, Finished: finished, Report: report}
	ev.Time = j.now().UTC()
	if err := j.appendLine(ev); err != nil {
		return err, nil
	}
	if finished {
		cleanup = j.compact(ev)
	}
	return nil, errors.Join(cleanup, j.prune())
}

// compact rewrites a finished journal as its header and last line.
func (j *journal) compact(end journalEvent) error {
	head, err := io.ReadAll(io.NewSectionReader(j.f, 0, 64<<10))
	if err != nil {
		return err
	}
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	} else {
		return errors.New("compact: the journal lost its header")
	}
	last, err := json.Marshal(end)
	if err != nil {
		return err
	}
	return j.dir.WriteFileAtomic(j.name, append(append(head, last...), '\n'))
}

// prune removes journals (and leftover temporary files) whose last change
// is older than JournalRetention. It never removes this plan's.
func (j *journal) prune() error {
	entries, err := j.dir.entries()
	if err != nil {
		return err
	}
	cutoff := j.now().Add(-JournalRetention)
	var errs []error
	for _, e := range entries {
		ours := journalName.MatchString(e.name) || (strings.HasPrefix(e.name, ".sha256-") && strings.Contains(e.name, ".tmp-"))
		if !ours || !e.regular || e.name == j.name || !e.mtime.Before(cutoff) {
			continue
		}
		if err := j.dir.remove(e.name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (j *journal) close() {
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
	j.dir.Close()
}

// readJournal opens the plan's journal (r.j), which says whether the plan
// was applied already (refused: *AlreadyAppliedError) or which of it an
// unfinished apply did (not done again). A damaged last line is ignored
// with a warning. The caller closes r.j when it returns nil.
func (r *run) readJournal() error {
	j, err := openJournal(r.state, r.p, r.digest, r.now)
	if err != nil {
		return err
	}
	r.j = j
	r.j.planFile = r.a.PlanFile
	if d := r.j.damage(); d != nil {
		r.logger.Warn("ignoring an unfinished last line of the apply journal", "path", d.Path, "bytes", d.Bytes)
		r.hooks.Warning(d)
	}
	return nil
}
