// Package config loads recipes and stores them, evaluating nothing: it
// parses HCL (native and JSON syntax), collects resource blocks with their
// bodies and meta-arguments unevaluated (in declaration order; for_each,
// count and dynamic blocks too, which eval expands), resource_group blocks
// and the resources they hold, collects attribute blocks unevaluated, and
// holds the attribute tree (levels,
// merge, provenance) they are written into. In policy mode it loads the
// cookbooks a lock names (LoadPolicy). It knows resource type names only,
// to report an unknown type at load.
//
// The phases, in order:
//
//	cfg, diags := config.LoadDir(dir, reg)               // parse and collect
//	scope, attrs, diags := eval.NewScope(cfg, facts)     // write attributes with the host's facts
//	insts, diags := eval.Resources(cfg, reg, scope)      // decode every resource against its schema
//
// It is not the evaluator (package eval: scope, functions, templates,
// property, guard and notification decoding), and it never reads the host
// beyond the recipe files.
package config
