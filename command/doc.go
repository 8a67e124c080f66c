// Package command is toque's command-line interface: one file per command,
// each parsing its flags into a typed args struct, calling the core packages
// (config, plan, apply) and rendering what users read. It is the only package
// that renders diagnostics and the only one that knows about terminals and
// exit codes. Nothing imports it but main (and main's end-to-end tests).
//
// Run takes toque's settings (TOQUE_*, NO_COLOR, TERM…) and working
// directory from Streams.Env, the process's own unless set, so that the
// end-to-end tests can run it in-process, side by side. Signals belong to
// main: Run only sees the stop channel and the context.
package command
