package resources

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Later holds work that resource types leave for later within one apply,
// to be done once however many resources ask for it. After unit files
// change, systemd must read them again (daemon-reload) before a unit is
// started; one reload after a batch of unit files is enough, and cheaper
// than one per file. A type's Converge defers such a Job (Env.Later);
// apply runs the pending jobs right before it reads and converges a
// resource that a job does not batch with (Before), and at the end of the
// apply (Flush), whatever failed in between.
//
// Later is safe for concurrent use. A nil *Later runs a job as soon as it
// is deferred: a type can always call Env.Later.Defer, with or without an
// apply around it.
type Later struct {
	mu      sync.Mutex
	pending []Job
}

// NewLater returns a Later with nothing pending.
func NewLater() *Later { return &Later{} }

// Job is work deferred with Later.
type Job struct {
	// Key identifies the work: deferring a key that is pending already
	// adds nothing ("systemd daemon-reload").
	Key string
	// What words the work for logs and errors ("systemctl daemon-reload").
	What string
	// BatchesWith reports whether the job may wait until after r (about
	// to be read and converged, with r.Action the action) has converged:
	// a job that follows unit file changes batches with the next
	// systemd_unit that writes one. nil batches with nothing: the job runs
	// before the next resource.
	BatchesWith func(r *Resource) bool
	// Run does the work.
	Run func(ctx context.Context) error
}

// Defer adds j unless a job of its key is pending. On a nil Later it runs
// j at once and returns its error.
func (l *Later) Defer(ctx context.Context, j Job) error {
	if l == nil {
		return runJob(ctx, j)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.pending {
		if p.Key == j.Key {
			return nil
		}
	}
	l.pending = append(l.pending, j)
	return nil
}

// Before runs, in the order they were deferred, the pending jobs that do
// not batch with r, and forgets them whether they succeed or not. The
// error names each job that failed.
func (l *Later) Before(ctx context.Context, r *Resource) error {
	return l.Run(ctx, func(j Job) bool { return j.BatchesWith == nil || r == nil || !j.BatchesWith(r) })
}

// Flush runs every pending job, as Before does.
func (l *Later) Flush(ctx context.Context) error {
	return l.Run(ctx, func(Job) bool { return true })
}

// Pending lists the keys of the pending jobs, in the order deferred.
func (l *Later) Pending() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.pending))
	for i, j := range l.pending {
		out[i] = j.Key
	}
	return out
}

func (l *Later) Run(ctx context.Context, due func(Job) bool) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	var now, keep []Job
	for _, j := range l.pending {
		if due(j) {
			now = append(now, j)
		} else {
			keep = append(keep, j)
		}
	}
	l.pending = keep
	l.mu.Unlock()
	var errs []error
	for _, j := range now {
		if err := runJob(ctx, j); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runJob runs j, naming it in its error.
func runJob(ctx context.Context, j Job) error {
	if j.Run == nil {
		return nil
	}
	if err := j.Run(ctx); err != nil {
		what := j.What
		if what == "" {
			what = j.Key
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
