package resources

import "context"

// BatchLoader is an optional capability of a Type whose live state is
// cheaper to read for many resources at once than one at a time: the
// package type asks dpkg about every package of a plan with one
// dpkg-query, where Load would start a process per package.
//
// The planner, and apply's pre-flight, call LoadAll once per type with
// every resource of that type they are about to evaluate (each already
// reduced to its LoadView, as Load receives it), before evaluating any
// of them; plan.Lifecycle then uses each reading instead of calling Load.
// Everything else is unchanged: guards still decide first (a skipped
// resource's reading is simply not used), Plan still decides from the
// State, and the reading right before a resource converges is still one
// Load.
//
// Contract:
//   - LoadAll obeys Load's rules (reads only, may run in parallel with
//     other reads, honours ctx) and returns, for each resource, what Load
//     would return for it alone: apply compares a batch reading taken at
//     pre-flight with the plan's, and the per-resource reading taken
//     before converging with both.
//   - The slice it returns is aligned with rs. A nil entry means "not read
//     in the batch": the lifecycle calls Load for that resource.
//   - An error means the batch could not be read at all; every resource of
//     the batch fails to load with it (wrap it to say what failed).
type BatchLoader interface {
	Type
	LoadAll(ctx context.Context, rs []*Resource) ([]*State, error)
}
