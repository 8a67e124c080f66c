// Package config loads recipes: it parses HCL (native and JSON syntax),
// compiles attribute blocks into merged node attributes with provenance,
// collects resource blocks unevaluated, and decodes a resource's body against
// its type's schema when the planner asks (Evaluate).
//
// It is not the planner: it never reads the host beyond the recipe files and
// never changes it.
package config
