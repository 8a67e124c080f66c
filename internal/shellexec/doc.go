// Package shellexec is the one place toque starts processes. Resources
// (execute, the script types), guards and anything else that runs a program
// describe it as a Spec and call Run; nothing else in toque uses os/exec to
// run host commands.
//
// A Spec is either an argv run without a shell, or an interpreter plus script
// text (written to a 0700 temporary file passed as the last argument, as
// Chef's script resource does). Run applies the working directory, the
// environment (see below; Path directories go in front of PATH), the user
// and group (set in the child with setuid/setgid), the umask
// (child only), a timeout, and the allowed exit codes. Standard input is
// /dev/null, or the bytes Spec.Stdin holds (never logged); standard output and error are captured up to a size cap (the
// tail is kept; standard output goes instead to Spec.Stdout when set, a
// writer that caps it, such as LimitedBuffer) and passed on line by line, as they come, to the logger at
// debug level and to Spec.Output (live_stream), except for a sensitive Spec.
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
// Environment: a child never inherits toque's own variables, TOQUE_*
// (TOQUE_POLICY_TOKEN is a credential; the others configure toque, not the
// child); Spec.Env may still set such a name on purpose. Otherwise:
//
//   - A child run as toque's own user (User empty or naming toque's uid)
//     inherits the rest of toque's environment, as Chef's children do.
//   - A child run as another user starts clean, as after a login: HOME,
//     USER, LOGNAME and SHELL of that user (from the user database; SHELL
//     from /etc/passwd, /bin/sh when it is not listed there), PATH
//     /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin (Chef's
//     default paths; the same for every user), and from toque's
//     environment only the locale (LANG, LANGUAGE, LC_*) and TZ. Nothing
//     else of toque's passes: not its tokens, proxies, SSH agent or
//     SUDO_* variables. A bare uid with no passwd entry gets HOME=/ and
//     SHELL=/bin/sh.
//
// In both cases Spec.Env (what the recipe sets) wins over the rest, and
// Spec.Path goes in front of the final PATH. Naming toque's own user still
// sets HOME, USER, LOGNAME and SHELL, so that programs do not write into
// another home. Environ returns the environment a Spec would get.
//
// User switching: supplementary groups are the user's groups. Group alone
// keeps toque's user, its supplementary groups and its environment.
//
// It is not a resource or a guard: it knows nothing of properties, guard
// inheritance, plans or diagnostics. Callers turn its errors into
// diagnostics and decide what an exit code means.
package shellexec
