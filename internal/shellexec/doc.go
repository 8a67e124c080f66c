// Package shellexec is the one place toque starts processes. Resources
// (execute, the script types), guards and anything else that runs a program
// describe it as a Spec and call Run; nothing else in toque uses os/exec to
// run host commands.
//
// A Spec is either an argv run without a shell, or an interpreter plus script
// text (written to a 0700 temporary file passed as the last argument, as
// Chef's script resource does). Run applies the working directory, the
// environment (merged over toque's own, with Path directories put in front of
// PATH), the user and group (set in the child with setuid/setgid), the umask
// (child only), a timeout, and the allowed exit codes. Standard input is
// /dev/null; standard output and error are captured up to a size cap (the
// tail is kept) and streamed line by line to the logger at debug level.
//
// Failures have distinct types so callers can tell "could not run" from
// "ran and said no": *NotFoundError (interpreter or command missing),
// *DirError (working directory missing), *UserError (unknown user or group,
// or not permitted to switch), *TimeoutError, and *ExitError (the process ran
// and its exit code is not allowed). An exit code of 127 from a script is an
// ordinary exit, never a NotFoundError. Whenever the process ran, Run returns
// its *Result, with or without an error.
//
// Process lifetime: each child leads its own process group and gets SIGKILL
// if toque dies (Linux parent-death signal). On timeout or context
// cancellation the whole group gets SIGTERM, then SIGKILL after a grace
// period. When the child exits but something it started still holds
// toque's output pipes (for example `sleep 100 &` in a script), the group is
// killed after a short drain delay instead of hanging the run; background
// processes that redirected their output (daemons) are left alone.
//
// Umask: the umask is process-wide, so Run never changes toque's own. On
// Linux the child is forked from a dedicated OS thread that has unshared its
// filesystem attributes (unshare(CLONE_FS)) and set the umask there; the
// thread exits with the child. Where that is not possible (other systems, or
// a seccomp policy that forbids unshare) the command is wrapped as
// `/bin/sh -c 'umask 0022 && exec "$0" "$@"' command args…`. Either way
// parallel runs with different umasks cannot interfere.
//
// User switching: when User is set, the child also gets HOME, USER and
// LOGNAME of that user (Spec.Env still wins), so that programs do not write
// into root's home. Supplementary groups are the user's groups.
//
// It is not a resource or a guard: it knows nothing of properties, guard
// inheritance, plans or diagnostics. Callers turn its errors into
// diagnostics and decide what an exit code means.
package shellexec
