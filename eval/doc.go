// Package eval evaluates a loaded configuration (package config) at plan
// time: it writes the attribute blocks into node attributes (Attributes,
// NewScope), holds the scope and function library expressions see,
// renders templates, expands blocks with for_each or count into their
// instances (expand.go) and dynamic blocks (dynamic.go), decodes every
// resource body against its type's schema (Resources, Block), decodes
// guards (package guard's decoder, with the evaluated parent resource;
// a resource_group's once, group.go), and resolves and checks
// notification edges, instance addresses included (Notifications).
//
// Validate evaluates without the host: NewScope(cfg, host.Unknown()) leaves
// values that depend on the host unknown while types and names are still
// checked.
//
// It reads only the recipe files and the files recipes name (file,
// templatefile, a template's source); it never changes the host and never
// runs a process. It is not the planner (plan/planner) and not the parser
// (config).
package eval
