// Package commands holds the built-in types that run a process: execute
// and the script family (script, bash, sh, csh, python, perl,
// powershell_script). Each is a resources.Runner: guards and the scripts
// of types written in HCL run through the same code, so a command runs the
// same way whatever asked for it (environment, user, umask, timeout, exit
// codes, live output).
package commands
