// Package plan is the Plan model, the plan file (write, read, verify), and
// the resource lifecycle both planning and applying evaluate resources with.
//
// The lifecycle (Lifecycle.Evaluate) is the one place where toque asks a
// resource type what an action would do: guards first, then Load, then
// Plan, panic-protected, with one error type (LifecycleError). The planner
// (package plan/planner) calls it for every resource and notified run;
// apply calls it at pre-flight, right before converging, and before firing
// notifications, so apply re-plans exactly as plan did.
//
// It is not the planner (plan/planner), not the applier (apply) and not a
// renderer (command/views): nothing here changes the host or prints, and
// plan imports neither apply, nor command, nor config.
package plan
