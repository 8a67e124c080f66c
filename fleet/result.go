package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Outcome is what fleet apply did on one host.
type Outcome string

// The outcomes of a host in fleet apply, as the result file, -json and
// -limit @FILE:OUTCOME name them.
const (
	// Applied: the host applied its plan.
	Applied Outcome = "applied"
	// NoChanges: the host's plan had nothing to do; it was not contacted.
	NoChanges Outcome = "no-changes"
	// AlreadyApplied: the host's journal says an apply of this plan
	// finished already (an earlier run, or one whose connection was lost).
	AlreadyApplied Outcome = "already-applied"
	// Stale: the host no longer matches its plan; nothing was changed.
	Stale Outcome = "stale"
	// Failed: a resource failed, or the host's toque stopped with an error.
	Failed Outcome = "failed"
	// Unreachable: toque could not connect, or could not get the agent
	// there; nothing was changed.
	Unreachable Outcome = "unreachable"
	// Refused: the plan is not this host's (another host key, machine id
	// or host name), or the host refused it (signature, format); nothing
	// was changed.
	Refused Outcome = "refused"
	// Unknown: the connection was lost while the host applied: the apply
	// may have finished or not. Its journal says, at the next contact.
	Unknown Outcome = "unknown"
	// Interrupted: Ctrl-C stopped the host's apply after the resource in
	// hand; applying the bundle again resumes it.
	Interrupted Outcome = "interrupted"
	// NotStarted: the rollout stopped (failure budget, Ctrl-C) before it
	// reached the host.
	NotStarted Outcome = "not-started"
	// NotPlanned: the bundle holds no plan for the host (it was
	// unreachable or its plan failed); nothing was done.
	NotPlanned Outcome = "not-planned"
)

// Outcomes lists every outcome, in the order summaries give them.
var Outcomes = []Outcome{Applied, AlreadyApplied, NoChanges, Stale, Failed, Unreachable, Refused, Unknown, Interrupted, NotStarted, NotPlanned}

// Succeeded reports whether the host is where its plan takes it.
func (o Outcome) Succeeded() bool {
	return o == Applied || o == NoChanges || o == AlreadyApplied
}

// Failure reports whether the outcome counts against the rollout's
// failure budget: a host that failed, could not be reached, refused its
// plan, no longer matched it, or whose outcome is unknown.
func (o Outcome) Failure() bool {
	switch o {
	case Failed, Unreachable, Refused, Unknown, Stale:
		return true
	}
	return false
}

func validOutcome(s string) bool {
	for _, o := range Outcomes {
		if string(o) == s {
			return true
		}
	}
	return false
}

// ResultFormat is the version of the result file.
const ResultFormat = 1

// Result is what fleet apply writes at its end (fleet.result): every
// host's outcome, so that -limit @fleet.result:failed takes up where it
// stopped.
type Result struct {
	Format int `json:"toque_fleet_result"`
	// Bundle is the bundle applied, as named on the command line;
	// BundleDigest is its manifest's digest.
	Bundle       string    `json:"bundle"`
	BundleDigest string    `json:"bundle_digest"`
	Started      time.Time `json:"started"`
	Finished     time.Time `json:"finished"`
	// Stopped says why the rollout stopped before its end: "" when it did
	// not, "failure budget" or "interrupted".
	Stopped string       `json:"stopped"`
	Hosts   []HostResult `json:"hosts"`
}

// HostResult is one host's line of the result.
type HostResult struct {
	Alias   string  `json:"alias"`
	Outcome Outcome `json:"outcome"`
	// Batch is the batch the host was in (from 1); 0 for a host no batch
	// reached.
	Batch int `json:"batch"`
	// Detail says why, for anything but a plain success (the error, the
	// stale resources…), as one line, unescaped.
	Detail string `json:"detail"`
	// PlanDigest is the digest of the host's plan.
	PlanDigest string `json:"plan_digest"`
	// Resources counts the host's resources by outcome, from its apply's
	// summary (changed, failed…); nil when it did not get that far.
	Resources map[string]int `json:"resources,omitempty"`
	Started   time.Time      `json:"started"`
	Ended     time.Time      `json:"ended"`
}

// Merge carries into r the outcomes an earlier result of the same bundle
// (prev) holds for hosts r does not have, so that one result file keeps
// every host's last outcome across runs with -limit. order is the
// bundle's hosts, in order.
func (r *Result) Merge(prev *Result, order []string) {
	if prev == nil || prev.BundleDigest != r.BundleDigest {
		return
	}
	now := map[string]HostResult{}
	for _, h := range r.Hosts {
		now[h.Alias] = h
	}
	before := map[string]HostResult{}
	for _, h := range prev.Hosts {
		before[h.Alias] = h
	}
	var out []HostResult
	for _, a := range order {
		if h, ok := now[a]; ok {
			out = append(out, h)
		} else if h, ok := before[a]; ok {
			out = append(out, h)
		}
	}
	r.Hosts = out
}

// maxResultFile bounds what ReadResult reads.
const maxResultFile = 256 << 20

// WriteResult writes r to path atomically (mode 0644: it names hosts and
// outcomes, nothing secret).
func WriteResult(path string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'), 0o644)
}

// ReadResult reads a result file.
func ReadResult(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxResultFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxResultFile {
		return nil, fmt.Errorf("%s is larger than a result file can be", path)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s is not a toque fleet result file: %v", path, err)
	}
	if r.Format != ResultFormat {
		return nil, fmt.Errorf("%s is not a toque fleet result file of format %d (it says %d)", path, ResultFormat, r.Format)
	}
	return &r, nil
}

// writeAtomic writes data to path through a temporary file in its
// directory, synced and renamed.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	ok = true
	return nil
}

// Counts is the number of hosts per outcome.
func (r *Result) Counts() map[Outcome]int {
	m := map[Outcome]int{}
	for _, h := range r.Hosts {
		m[h.Outcome]++
	}
	return m
}

// ErrNoMatch is in the chain of a -limit that selects no host.
var ErrNoMatch = errors.New("matches no host")

// sortOutcomes orders outcomes as Outcomes does.
func sortOutcomes(os []Outcome) {
	rank := map[Outcome]int{}
	for i, o := range Outcomes {
		rank[o] = i
	}
	sort.Slice(os, func(i, j int) bool { return rank[os[i]] < rank[os[j]] })
}

// outcomeList words outcomes for errors: "failed, unreachable".
func outcomeList(os []Outcome) string {
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}
