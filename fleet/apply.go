package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ApplyHooks is how fleet apply reports progress; command/views
// implements it. Calls may come from several goroutines at once.
type ApplyHooks interface {
	// BatchStarted: batch n (from 1) of total starts with these hosts.
	BatchStarted(n, total int, hosts []string)
	// HostStarted: toque contacts the host.
	HostStarted(alias string, batch int)
	// HostEvent is one event of the host's apply (its apply -json
	// stream), as the host wrote it.
	HostEvent(alias string, ev ApplyEvent)
	// HostDone: the host's outcome.
	HostDone(r HostResult)
	// Stopping: no further host will be started, and why ("failure
	// budget", "interrupted").
	Stopping(why string, failures, budget int)
}

// ApplyEvent is what fleet apply reads of one event of a host's apply
// -json stream (docs/apply-json.md).
type ApplyEvent struct {
	Type      string `json:"type"`
	Address   string `json:"address"`
	Kind      string `json:"kind"`
	Outcome   string `json:"outcome"`
	Error     string `json:"error"`
	ErrorKind string `json:"error_kind"`
	Message   string `json:"message"`
	ExitCode  int    `json:"exit_code"`
	// From summary.
	Changed     int  `json:"changed"`
	Unchanged   int  `json:"unchanged"`
	Failed      int  `json:"failed"`
	Skipped     int  `json:"skipped"`
	NotStarted  int  `json:"not_started"`
	DoneEarlier int  `json:"done_earlier"`
	Resumed     bool `json:"resumed"`
}

// Applier applies a bundle's plans to their hosts, batch by batch.
type Applier struct {
	Inventory *Inventory
	Bundle    *Bundle
	// BundlePath names the bundle in the result.
	BundlePath string
	// Hosts are the aliases to apply, in order; each has an entry in the
	// bundle.
	Hosts   []string
	SSH     *SSH
	Agents  *Agents
	Rollout Rollout
	Hooks   ApplyHooks
	// Stop is closed by the first Ctrl-C: no host is started after it,
	// and the hosts applying are asked to stop after the resource in hand.
	// A cancelled context (the second Ctrl-C) asks them again, which
	// aborts them, and stops waiting.
	Stop   <-chan struct{}
	Logger hclog.Logger
}

// Apply runs the rollout and returns every host's outcome.
func (ap *Applier) Apply(ctx context.Context) *Result {
	r := &Result{Format: ResultFormat, Bundle: ap.BundlePath, BundleDigest: ap.Bundle.Digest, Started: time.Now().UTC()}
	results := make(map[string]HostResult, len(ap.Hosts))
	var work []string
	for _, alias := range ap.Hosts {
		e := ap.Bundle.Host(alias)
		switch e.Status {
		case StatusChanges:
			work = append(work, alias)
		case StatusNoChanges:
			results[alias] = HostResult{Alias: alias, Outcome: NoChanges, PlanDigest: e.PlanDigest}
		default:
			results[alias] = HostResult{Alias: alias, Outcome: NotPlanned, PlanDigest: e.PlanDigest,
				Detail: fmt.Sprintf("fleet plan could not plan it (%s)", e.Failure)}
		}
	}
	for _, alias := range ap.Hosts {
		if res, ok := results[alias]; ok && ap.Hooks != nil {
			ap.Hooks.HostDone(res)
		}
	}

	budget := ap.Rollout.Budget(len(work))
	var failures atomic.Int32
	var mu sync.Mutex
	stopped := ""
	stop := func(why string) {
		mu.Lock()
		defer mu.Unlock()
		if stopped == "" {
			stopped = why
			if ap.Hooks != nil {
				ap.Hooks.Stopping(why, int(failures.Load()), budget)
			}
		}
	}
	halted := func() bool {
		select {
		case <-ap.Stop:
			stop("interrupted")
		case <-ctx.Done():
			stop("interrupted")
		default:
		}
		mu.Lock()
		defer mu.Unlock()
		return stopped != ""
	}
	sizes := ap.Rollout.BatchSizes(len(work))
	parallelism := ap.Rollout.Parallel
	if parallelism < 1 {
		parallelism = DefaultRollout().Parallel
	}
	next := 0
	for bi, size := range sizes {
		batch := work[next : next+size]
		next += size
		if halted() {
			for _, alias := range batch {
				results[alias] = ap.notStarted(alias, stopped)
			}
			continue
		}
		if ap.Hooks != nil {
			ap.Hooks.BatchStarted(bi+1, len(sizes), batch)
		}
		sem := make(chan struct{}, parallelism)
		var wg sync.WaitGroup
		for _, alias := range batch {
			sem <- struct{}{}
			if halted() {
				<-sem
				mu.Lock()
				results[alias] = ap.notStarted(alias, stopped)
				mu.Unlock()
				continue
			}
			wg.Add(1)
			go func(alias string, batch int) {
				defer wg.Done()
				defer func() { <-sem }()
				hr := ap.applyHost(ctx, alias, batch)
				mu.Lock()
				results[alias] = hr
				mu.Unlock()
				if ap.Hooks != nil {
					ap.Hooks.HostDone(hr)
				}
				if hr.Outcome.Failure() {
					if int(failures.Add(1)) > budget {
						stop("failure budget")
					}
				}
			}(alias, bi+1)
		}
		wg.Wait()
	}
	for _, alias := range ap.Hosts {
		r.Hosts = append(r.Hosts, results[alias])
	}
	r.Stopped = stopped
	r.Finished = time.Now().UTC()
	return r
}

func (ap *Applier) notStarted(alias, why string) HostResult {
	detail := "the rollout stopped before this host: its failure budget was spent"
	if why == "interrupted" {
		detail = "interrupted before this host was started"
	}
	hr := HostResult{Alias: alias, Outcome: NotStarted, Detail: detail, PlanDigest: ap.Bundle.Host(alias).PlanDigest}
	if ap.Hooks != nil {
		ap.Hooks.HostDone(hr)
	}
	return hr
}

// applyHost applies one host's plan.
func (ap *Applier) applyHost(ctx context.Context, alias string, batch int) HostResult {
	e := ap.Bundle.Host(alias)
	h := ap.Inventory.Host(alias)
	hr := HostResult{Alias: alias, Batch: batch, PlanDigest: e.PlanDigest, Started: time.Now().UTC()}
	if ap.Hooks != nil {
		ap.Hooks.HostStarted(alias, batch)
	}
	done := func(o Outcome, detail string) HostResult {
		hr.Outcome, hr.Detail, hr.Ended = o, detail, time.Now().UTC()
		return hr
	}
	failed := func(err error) HostResult {
		var ce *ConnectError
		var he *HostError
		var le *LostError
		switch {
		case errors.As(err, &ce):
			return done(Unreachable, fmt.Sprintf("%s: %s; nothing was changed", ce.Class, ce.Detail))
		case errors.As(err, &le):
			return done(Unreachable, "the connection was lost before the apply started; nothing was changed: "+le.Detail)
		case errors.As(err, &he) && he.Class == ClassIdentity:
			return done(Refused, he.Detail)
		case errors.As(err, &he):
			return done(Failed, he.Detail+"; nothing was changed")
		case errors.Is(err, context.Canceled):
			return done(NotStarted, "aborted before the apply started; nothing was changed")
		}
		return done(Failed, err.Error())
	}
	s, err := open(ctx, ap.SSH, h, ap.Agents)
	if err != nil {
		return failed(err)
	}
	defer func() { s.conn.Close() }()
	if s.conn.HostKey != e.HostKey {
		return failed(&HostError{Alias: alias, Class: ClassIdentity, Detail: fmt.Sprintf(
			"%s answers with host key %s, but its plan was made on a host whose key was %s: this is not the host the plan is for (or its key changed since), so nothing was sent. Plan it again", alias, s.conn.HostKey, e.HostKey)})
	}
	d, _, _, err := s.detect(ctx, "", "", "", nil, 64<<10)
	if err != nil {
		return failed(err)
	}
	if d.MachineID != e.MachineID || d.Hostname != e.Hostname {
		return failed(&HostError{Alias: alias, Class: ClassIdentity, Detail: fmt.Sprintf(
			"%s is now host %q with machine id %q, but its plan was made on %q with machine id %q: a plan is applied only on the host it was made on, so nothing was sent", alias, d.Hostname, d.MachineID, e.Hostname, e.MachineID)})
	}
	a, err := s.ensureAgent(ctx, d)
	if err != nil {
		return failed(err)
	}
	return ap.run(ctx, s, e, a, hr, done)
}

// run ships the plan and runs the host's toque apply on it, following its
// events, forwarding Ctrl-C.
func (ap *Applier) run(ctx context.Context, s *session, e *HostEntry, a *Agent, hr HostResult, done func(Outcome, string) HostResult) HostResult {
	alias := e.Alias
	ev := &eventReader{alias: alias, hooks: ap.Hooks}
	// The apply is not bound to ctx: the second Ctrl-C asks the host to
	// abort (it ends within seconds), then stops waiting for it.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	finished := make(chan struct{})
	go func() {
		select {
		case <-ap.Stop:
		case <-ctx.Done():
		case <-finished:
			return
		}
		ap.interrupt(ctx, s, ev, e)
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		ap.interrupt(context.WithoutCancel(ctx), s, ev, e) // the second stop: abort
		select {
		case <-time.After(5 * time.Second):
			cancelRun()
		case <-finished:
		}
	}()
	ex, err := s.conn.Run(runCtx, become(s.h, applyScript(a.Digest, e.PlanSHA256, e.PlanDigest, s.h)), ap.Bundle.Plans[alias], ev)
	close(finished)
	ev.flush()
	if ev.summary != nil {
		hr.Resources = map[string]int{"changed": ev.summary.Changed, "unchanged": ev.summary.Unchanged, "failed": ev.summary.Failed,
			"skipped": ev.summary.Skipped, "not_started": ev.summary.NotStarted, "done_earlier": ev.summary.DoneEarlier}
	}
	var le *LostError
	switch {
	case errors.As(err, &le) || (err != nil && runCtx.Err() != nil && ev.pid > 0):
		why := "the connection was lost"
		if le != nil {
			why += ": " + le.Detail
		} else {
			why = "aborted by a second Ctrl-C"
		}
		return done(Unknown, why+"; the apply may have finished or not: applying the bundle to this host again asks its journal")
	case err != nil:
		return done(Failed, err.Error())
	}
	if ev.pid == 0 {
		// The script failed before the apply started.
		if why, ok := sudoTrouble(ex.Stderr); ok {
			return done(Failed, why+"; nothing was changed")
		}
		return done(Failed, "could not start the apply: "+remoteError(ev.raw.Bytes(), ex.Stderr)+"; nothing was changed")
	}
	msg := ""
	if ev.failure != nil {
		msg = firstLines(ev.failure.Message, 1)
	}
	switch ex.ExitCode {
	case 0:
		if ev.summary != nil && ev.summary.Resumed {
			return done(Applied, "resumed an earlier, unfinished apply of its plan")
		}
		return done(Applied, "")
	case 3:
		return done(Stale, msg)
	case 4:
		return done(Failed, "another apply holds the host's lock: "+msg)
	case 5:
		return done(Interrupted, "stopped after the resource in hand; apply the bundle again to resume")
	case 6:
		return done(AlreadyApplied, "its journal says an apply of this plan finished already")
	}
	if ev.failure != nil {
		switch ev.failure.ErrorKind {
		case "plan_refused", "digest_mismatch":
			return done(Refused, msg)
		}
		return done(Failed, msg)
	}
	return done(Failed, fmt.Sprintf("toque apply exited %d: %s", ex.ExitCode, remoteError(nil, ex.Stderr)))
}

// interrupt sends the host's apply a SIGINT, over a new session of the
// same master.
func (ap *Applier) interrupt(ctx context.Context, s *session, ev *eventReader, e *HostEntry) {
	pid := ev.PID()
	if pid == 0 {
		return
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, _, err := runScript(tctx, s.conn, become(s.h, interruptScript(pid, e.PlanSHA256)), nil, 4096); err != nil && ap.Logger != nil {
		ap.Logger.Warn("cannot interrupt the apply", "host", e.Alias, "error", err)
	}
}

// eventReader reads the apply script's output: its pid line, then the
// apply's JSON events, one per line.
type eventReader struct {
	alias string
	hooks ApplyHooks

	mu      sync.Mutex
	buf     []byte
	raw     bytes.Buffer // what came before the pid line (errors)
	pid     int
	summary *ApplyEvent
	failure *ApplyEvent
}

func (r *eventReader) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid
}

func (r *eventReader) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			if len(r.buf) > 16<<20 {
				return 0, io.ErrShortBuffer
			}
			return len(p), nil
		}
		r.line(r.buf[:i])
		r.buf = r.buf[i+1:]
	}
}

func (r *eventReader) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) > 0 {
		r.line(r.buf)
		r.buf = nil
	}
}

func (r *eventReader) line(l []byte) {
	if r.pid == 0 {
		if s, ok := strings.CutPrefix(string(l), "toque-apply-pid "); ok {
			r.pid, _ = strconv.Atoi(strings.TrimSpace(s))
			return
		}
		if r.raw.Len() < 64<<10 {
			r.raw.Write(l)
			r.raw.WriteByte('\n')
		}
		return
	}
	var ev ApplyEvent
	if json.Unmarshal(l, &ev) != nil || ev.Type == "" {
		return
	}
	switch ev.Type {
	case "summary":
		e := ev
		r.summary = &e
	case "error":
		e := ev
		r.failure = &e
	}
	if r.hooks != nil {
		r.hooks.HostEvent(r.alias, ev)
	}
}
