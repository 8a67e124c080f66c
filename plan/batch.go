package plan

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/resources"
)

// ReadBatches reads, ahead of Evaluate, the live state of every subject
// whose type is a resources.BatchLoader: one LoadAll call per type, with
// the subjects of that type in the order given, and sets each subject's
// Read. Subjects of other types, and those LoadAll leaves nil, are left
// for Evaluate to Load one by one. A LoadAll that fails or panics fails
// the Read of every subject of its batch, with a *LifecycleError of the
// load phase (Evaluate reports it as it would a failed Load).
//
// The planner calls it once before planning, and apply once before its
// pre-flight: a plan of 200 packages then starts one dpkg-query, not 200.
func ReadBatches(ctx context.Context, logger hclog.Logger, subjects []*Subject) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	type batch struct {
		loader resources.BatchLoader
		subs   []*Subject
	}
	var order []string
	batches := map[string]*batch{}
	for _, s := range subjects {
		if s == nil || s.Desired == nil {
			continue
		}
		bl, ok := s.Type.(resources.BatchLoader)
		if !ok {
			continue
		}
		name := s.Desired.Type
		b := batches[name]
		if b == nil {
			b = &batch{loader: bl}
			batches[name] = b
			order = append(order, name)
		}
		b.subs = append(b.subs, s)
	}
	for _, name := range order {
		b := batches[name]
		views := make([]*resources.Resource, len(b.subs))
		for i, s := range b.subs {
			views[i] = s.Desired.LoadView()
		}
		log := logger.With("type", name, "count", len(views))
		t0 := time.Now()
		states, err := protect(log, func() ([]*resources.State, error) { return b.loader.LoadAll(ctx, views) })
		if err == nil && len(states) != len(views) {
			err = fmt.Errorf("the resource type read %d states for %d resources (a bug in the resource type)", len(states), len(views))
		}
		log.Debug("read in one batch", "duration", time.Since(t0), "error", err)
		for i, s := range b.subs {
			if err != nil {
				s.Read = &Preread{Err: err}
				continue
			}
			if states[i] != nil {
				s.Read = &Preread{State: states[i]}
			}
		}
	}
}
