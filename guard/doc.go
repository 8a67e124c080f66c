// Package guard is only_if / not_if: it decodes a resource's guards into
// Specs that can be stored in a plan file and run again without HCL, and it
// evaluates them.
//
// A guard is a script guard (a command string, optionally with guard
// parameters), an argv guard ({ command = [PROGRAM, ARG…] }: run without a
// shell, as an execute resource with that command, inheriting as the
// resource's guard interpreter would) or an expression guard (a bool
// expression, the HCL form of a Chef block guard). Decode resolves a script guard down to what runs: the
// guard interpreter ("default" is `/bin/sh -c` with only the guard's own
// parameters; any other is a resources.Runner type, such as bash, built with
// the guard string as its code and the parent resource's cwd, environment,
// group, path, user and umask inherited, guard parameters overriding them).
// Expression guards are evaluated once, at decode time, against the final
// node attributes and host facts, so their value is a constant of the plan.
//
// Run evaluates one Spec; EvaluateAll evaluates a resource's guards in
// Chef's order (every only_if, then every not_if) and stops at the first
// that decides to skip. A guard that cannot run (interpreter, working
// directory or user missing, timeout) is an error, never a silent verdict;
// a script guard exiting 127 (a command not found), or exiting 2 from a
// shell or test (a syntax error, a bad expression), is false, with a
// warning that quotes the first line of its standard error, escaped.
//
// Guards must be side-effect free: toque runs them at plan time, again at
// apply's pre-flight, and again right before the resource converges.
//
// It is not the planner or the applier (it never imports plan, apply,
// config or command), and it starts processes only through
// internal/shellexec.
package guard
