package apply

import (
	"context"

	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// preflightAll checks every entry against the plan (preflightOne), in two
// waves, as the planner read them: first every resource whose type does
// not read the plan's predicted host, then, with what the steps with work
// of the first wave provide with a prediction (resources.Foresight: a
// package's files and units), those that do (resources.Foreseer), each
// through the view of the steps before it. A reading the planner took
// from a prediction (a template over a package's configuration file) is
// so taken again, and compared like any other. The Foresight is kept for
// the notified runs' pre-flight (r.foresight).
func (r *run) preflightAll(ctx context.Context, results []preflightResult) {
	foreseer := make([]bool, len(r.entries))
	var first, second []int
	for i, e := range r.entries {
		if t, ok := r.reg.Lookup(e.pr.Type); ok {
			_, foreseer[i] = t.(resources.Foreseer)
		}
		if foreseer[i] {
			second = append(second, i)
		} else {
			first = append(first, i)
		}
	}
	wave := func(idx []int, check func(e *entry) preflightResult) {
		parallel.For(len(idx), PreflightParallelism, func(k int) {
			if ctx.Err() == nil {
				results[idx[k]] = check(r.entries[idx[k]])
			}
		})
	}
	wave(first, func(e *entry) preflightResult { return r.preflightOne(ctx, e) })
	fs := resources.NewForesight()
	for i, e := range r.entries {
		if !foreseer[i] && !e.alreadyDone {
			for _, n := range results[i].provides {
				fs.Add(e.idx, n)
			}
		}
	}
	if fs.Empty() {
		fs = nil
	}
	r.foresight = fs
	wave(second, func(e *entry) preflightResult {
		view := fs.Before(e.idx)
		if t, ok := r.reg.Lookup(e.pr.Type); ok && fs != nil {
			d := e.desired
			if d == nil {
				_, d, _ = plan.DesiredResource(r.reg, e.pr)
			}
			if d != nil {
				if n, _ := resources.ForeseenBy(view, t.(resources.Foreseer).Foresees(d)); n != nil {
					e.preloaded = nil // read without it: read again, through the prediction
				}
			}
		}
		return r.preflightOne(resources.WithForesight(ctx, view), e)
	})
}

// withForesight is ctx carrying the run's Foresight, for the readings
// pre-flight takes of notified runs (which see every step's prediction,
// as the planner's did).
func (r *run) withForesight(ctx context.Context) context.Context {
	if r.foresight == nil {
		return ctx
	}
	return resources.WithForesight(ctx, r.foresight)
}
