// Package planner turns a loaded configuration into a plan.Plan: it
// evaluates the node attributes and resources against the host's facts
// (package eval), evaluates each resource through plan.Lifecycle (in
// parallel, keeping the collection's order), records what a reviewer reads
// (changes with diffs, guard results, context, notified runs) and what
// apply replays (desired values, guard specs, fingerprints).
//
// It only reads the host. It is not the plan model or file (package plan),
// and it never renders: command/views does.
package planner
