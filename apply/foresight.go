package apply

import (
	"context"

	"github.com/toquehq/toque/guard"
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
	reads := resources.NewReads()
	defer reads.Close()
	r.preloadForeseen(resources.WithReads(ctx, reads), fs, second)
	wave(second, func(e *entry) preflightResult {
		view := fs.Before(e.idx)
		if t, ok := r.reg.Lookup(e.pr.Type); ok && fs != nil {
			d := e.desired
			if d == nil {
				_, d, _ = plan.DesiredResource(r.reg, e.pr)
			}
			if d != nil {
				if n, _ := resources.ForeseenBy(view, t.(resources.Foreseer).Foresees(d)); n != nil && !e.foreseenBatch {
					e.preloaded = nil // read without it: read again, through the prediction
				}
			}
		}
		return r.preflightOne(resources.WithForesight(ctx, view), e)
	})
}

// preloadForeseen reads again, together and through the view of the
// first of them, the entries of idx whose type reads in batches shared
// with others (the file editors) and whose thing an earlier step
// predicts, one batch per thing, as the planner did (planner's
// preloadForeseen): the editors of a file a package ships are compared
// with readings composed as the plan's were.
func (r *run) preloadForeseen(ctx context.Context, fs *resources.Foresight, idx []int) {
	if fs == nil {
		return
	}
	groups := map[string][]*plan.Subject{}
	first := map[string]int{}
	var keys []string
	of := map[*plan.Subject]*entry{}
	for _, i := range idx {
		e := r.entries[i]
		pr := e.pr
		if e.earlier != nil || e.alreadyDone || (pr.Action == "nothing" && pr.Kind == resources.NoOp) || pr.Kind == resources.Skip {
			continue
		}
		t, d, err := plan.DesiredResource(r.reg, pr)
		if err != nil {
			continue // preflightOne reports it
		}
		f, ok := t.(resources.Foreseer)
		if _, shares := t.(resources.BatchSharer); !ok || !shares || !guard.PassAtPlan(pr.GuardSpecs) {
			continue
		}
		n, _ := resources.ForeseenBy(fs.Before(e.idx), f.Foresees(d))
		if n == nil {
			continue
		}
		k := n.Namespace + "\x00" + n.Value
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
			first[k] = e.idx
		}
		s := &plan.Subject{Address: pr.Address, Type: t, Desired: d}
		groups[k] = append(groups[k], s)
		of[s] = e
	}
	for _, k := range keys {
		for s, st := range r.lc.Preload(resources.WithForesight(ctx, fs.Before(first[k])), groups[k]) {
			of[s].preloaded, of[s].foreseenBatch = st, true
		}
	}
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
