// Package command is toque's command-line interface: one file per command,
// each parsing its flags into a typed args struct, calling the core packages
// (config, plan, apply) and rendering what users read. It is the only package
// that renders diagnostics and the only one that knows about terminals and
// exit codes. Nothing imports it but main.
package command
