// Package resources is toque's resource framework and its built-in types.
//
// A resource type is Go code implementing the small Type interface: a Schema
// (typed properties and actions), Load (Chef's load_current_value), Plan (what
// the requested action would change, computed with Diff — Chef's
// converge_if_changed) and Converge (carry out one Step). The framework does
// the rest: decoding and validating recipe values against the schema (package
// config), normalising values before comparison, and keeping the
// "only set properties are converged" rule.
//
// This package is not the planner or the applier: it never reads plan files,
// never renders output and never imports plan, apply or command. See
// docs/resource-authors.md for each method's contract.
package resources
