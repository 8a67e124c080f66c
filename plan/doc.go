// Package plan is the Plan model, the planner that produces it (evaluate,
// load, diff), the plan file (write, read, verify) and its renderings (text,
// JSON).
//
// It is not the applier: nothing here changes the host, and plan never
// imports apply or command.
package plan
