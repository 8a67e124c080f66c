// Package config loads recipes: it parses HCL (native and JSON syntax),
// compiles attribute blocks into merged node attributes with provenance,
// collects resource blocks unevaluated, and decodes a resource's body against
// its type's schema when the planner asks (Evaluate).
//
// The phases, in order:
//
//	cfg, diags := config.LoadDir(dir, reg)      // parse, collect, write attributes (host unknown)
//	scope, diags := cfg.Scope(facts.Value())    // write attributes again with the host's facts
//	insts, diags := cfg.Evaluate(reg, scope)    // decode every resource against its schema
//
// Validate skips the host: it evaluates with
// &Scope{Node: cfg.Attributes.Node(), Host: host.Unknown()}, so values that
// depend on the host stay unknown while types and names are still checked.
//
// It is not the planner: it never reads the host beyond the recipe files and
// the files recipes name (file, templatefile, a template's source), and
// never changes it. Evaluate also renders templates (types implementing
// resources.Templated) into their content, decodes guards (package guard),
// and resolves and checks notification edges (Instance.Notifies; see
// Notifications).
package config
