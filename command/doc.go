// Package command is toque's command-line interface: one file per command,
// each parsing its flags into a typed args struct, calling the core packages
// (config, plan, apply) and rendering what users read through its views
// (command/views), and returning the exit status: views.ExitStatus derives a
// failed command's from its diagnostics, through the one table of typed
// errors that also gives their JSON kind and wording. Nothing imports it
// but main (and main's end-to-end tests).
//
// Run takes toque's settings (TOQUE_*, NO_COLOR, TERM…) and working
// directory from Streams.Env, the process's own unless set, so that the
// end-to-end tests can run it in-process, side by side. Signals belong to
// main: Run only sees the stop channel and the context.
package command
