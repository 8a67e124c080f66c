package shellexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// Spec describes one process to run. Exactly one of Argv and Interpreter is
// set.
type Spec struct {
	// Argv is run without a shell. Argv[0] is looked up in the final PATH
	// (Path directories first) unless it contains a slash; a relative
	// Argv[0] with a slash is relative to Dir.
	Argv []string

	// Interpreter is the interpreter's argv (e.g. ["/bin/bash"],
	// ["python3"]), looked up like Argv[0]. Flags follow it, then the path
	// of a temporary file holding Script: interpreter… flags… scriptfile.
	Interpreter []string
	Flags       []string
	Script      string
	// ScriptSuffix is the temporary file's extension, for interpreters
	// that care (".ps1" for pwsh).
	ScriptSuffix string

	// Dir is the working directory; empty means toque's own.
	Dir string

	// Env is what the recipe sets. It is merged over what the child
	// inherits from BaseEnv (nil: toque's environment): all of it but
	// TOQUE_* when the child runs as toque's own user; only the locale and
	// TZ when it runs as another user. When User is set, HOME, USER,
	// LOGNAME and SHELL of that user (and, for another user, a standard
	// PATH) sit between the two. See "Environment" in the package doc.
	Env     map[string]string
	BaseEnv []string
	// Path directories are put in front of PATH.
	Path []string

	// User and Group are names or numeric ids. Only root may switch.
	User, Group string

	// Umask, when set, is applied to the child only (0 to 0777).
	Umask *int

	// Timeout of 0 means none. On expiry the process group gets SIGTERM,
	// then SIGKILL after KillGrace (default 2 s).
	Timeout   time.Duration
	KillGrace time.Duration

	// Returns lists the allowed exit codes; empty means [0].
	Returns []int

	// Stdin, when not nil, is what the process reads on its standard
	// input; nil means /dev/null. It is never logged: it is the way to
	// give a process a secret (a password hash for chpasswd) without
	// putting it on a command line, which every user of the host may read
	// in /proc.
	Stdin []byte

	// OutputLimit is how many bytes of each stream are kept (the tail);
	// 0 means DefaultOutputLimit.
	OutputLimit int

	// Stdout, when set, gets standard output as the process prints it,
	// and Run keeps none of it (Result.Stdout stays empty; OutputLimit
	// applies to standard error alone): for output a caller needs whole
	// and caps itself (LimitedBuffer). A Write that fails ends the
	// reading: Run closes the pipe, so the process gets EPIPE (SIGPIPE)
	// at its next write. Lines still reach Logger and Output.
	Stdout io.Writer

	// Logger receives each output line at debug level; nil for none.
	// Sensitive keeps the command line and its output out of the log (the
	// resource is sensitive): the log says "(sensitive)" instead, and
	// Output is never called.
	Sensitive bool
	Logger    hclog.Logger

	// Output, when set, receives each line of output as the process prints
	// it, while Run still captures the output for Result: stream is
	// "stdout" or "stderr", line is the raw text without its line ending
	// (a line longer than 4 KiB comes in pieces; a last line without a
	// newline comes when the process ends). Calls never overlap and come
	// in order within each stream. The text is the process's, unescaped:
	// escape it before it reaches a terminal. Output should return
	// quickly: while it runs, the process's writes to that stream wait.
	Output func(stream, line string)
}

// Result is what a process did. Run returns it whenever the process started.
type Result struct {
	ExitCode int    // -1 when killed by a signal
	Signal   string // the signal that ended it ("SIGTERM"), or ""
	Stdout   string // the last OutputLimit bytes
	Stderr   string
	// Truncated is set when either stream was longer than OutputLimit.
	Truncated bool
	Duration  time.Duration
	// Allowed is set when the process exited with a code in Returns.
	Allowed bool
}

const (
	defaultKillGrace = 2 * time.Second
	// drainDelay is how long Run waits, after the child exits, for its
	// output pipes to close before killing what still holds them.
	drainDelay = 500 * time.Millisecond
	// defaultPATH is used when the environment has no PATH at all.
	defaultPATH  = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	wrapperShell = "/bin/sh"
)

// options are internal knobs for tests.
type options struct {
	forceUmaskWrapper bool
	self              self
}

// Run starts the process s describes, waits for it and reports what it did.
//
// The error is nil when the process exited with an allowed code. Otherwise it
// is one of *NotFoundError, *DirError, *UserError (nothing was started),
// *TimeoutError, *ExitError (the result is returned too), an error wrapping
// ctx.Err() when ctx ended first (the process group was killed), or a plain
// error for an invalid Spec or an I/O failure.
//
// Run is safe for concurrent use. Do not call it from a goroutine that has
// locked its OS thread and may exit while the child runs: Linux sends the
// parent-death signal when the thread that forked the child ends.
func Run(ctx context.Context, s Spec) (*Result, error) {
	return run(ctx, s, options{self: currentSelf()})
}

func run(ctx context.Context, s Spec, o options) (*Result, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	id, err := resolveIdentity(s.User, s.Group, o.self)
	if err != nil {
		return nil, err
	}
	env := childEnv(s, id)

	if s.Dir != "" {
		fi, err := os.Stat(s.Dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, &DirError{Dir: s.Dir, Err: errors.New("does not exist")}
		case err != nil:
			return nil, &DirError{Dir: s.Dir, Err: err}
		case !fi.IsDir():
			return nil, &DirError{Dir: s.Dir, Err: errors.New("is not a directory")}
		}
	}

	what, argv := "command", s.Argv
	if len(s.Interpreter) > 0 {
		what, argv = "interpreter", s.Interpreter
	}
	exe, err := lookPath(argv[0], envPATH(env), s.Dir)
	if err != nil {
		nf := &NotFoundError{What: what, Name: argv[0]}
		if !errors.Is(err, errNotInPATH) {
			nf.Err = err
		}
		return nil, nf
	}
	args := append([]string{argv[0]}, argv[1:]...)

	if len(s.Interpreter) > 0 {
		script, err := writeScript(s.Script, s.ScriptSuffix, id.cred)
		if err != nil {
			return nil, err
		}
		defer os.Remove(script)
		args = append(append(args, s.Flags...), script)
	}

	cmd := &exec.Cmd{Path: exe, Args: args, Env: env, Dir: s.Dir}
	cmd.SysProcAttr = sysProcAttr(id.cred)

	var umask int
	useThread := false
	if s.Umask != nil {
		umask = *s.Umask
		if o.forceUmaskWrapper || !umaskThreadUsable() {
			cmd.Path = wrapperShell
			cmd.Args = append([]string{wrapperShell, "-c", fmt.Sprintf(`umask %04o && exec "$0" "$@"`, umask), exe}, args[1:]...)
		} else {
			useThread = true
		}
	}

	limit := s.OutputLimit
	if limit == 0 {
		limit = DefaultOutputLimit
	}
	outLog := s.Logger
	if s.Sensitive {
		outLog = nil
	}
	var lines *lineOutput
	if s.Output != nil && !s.Sensitive {
		lines = &lineOutput{fn: s.Output}
	}
	stdout := newCapture("stdout", limit, outLog, lines)
	stdout.sink = s.Stdout
	stderr := newCapture("stderr", limit, outLog, lines)
	loggedArgv := any(cmd.Args)
	if s.Sensitive {
		loggedArgv = "(sensitive)"
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating output pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("creating output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if s.Stdin != nil {
		cmd.Stdin = bytes.NewReader(s.Stdin) // else nil: /dev/null
	}

	if s.Logger != nil {
		s.Logger.Debug("starting process", "argv", loggedArgv, "dir", s.Dir, "user", s.User, "group", s.Group)
	}

	begin := time.Now()
	waitCh := make(chan error, 1)
	if useThread {
		err = startInThread(cmd, umask, waitCh)
		if errors.Is(err, errThreadUnusable) {
			// The thread could not get its own umask: wrap instead.
			cmd.Path = wrapperShell
			cmd.Args = append([]string{wrapperShell, "-c", fmt.Sprintf(`umask %04o && exec "$0" "$@"`, umask), exe}, args[1:]...)
			err = startPlain(cmd, waitCh)
		}
	} else {
		err = startPlain(cmd, waitCh)
	}
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, startError(what, argv[0], s.User, s.Group, id, err)
	}
	pgid := cmd.Process.Pid

	outDone, errDone := make(chan struct{}), make(chan struct{})
	go stdout.drain(outR, outDone)
	go stderr.drain(errR, errDone)

	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var waitErr error
	timedOut, canceled := false, false
	select {
	case waitErr = <-waitCh:
	case <-timeout:
		timedOut = true
	case <-ctx.Done():
		canceled = true
	}
	if timedOut || canceled {
		grace := s.KillGrace
		if grace <= 0 {
			grace = defaultKillGrace
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		g := time.NewTimer(grace)
		select {
		case waitErr = <-waitCh:
		case <-g.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			waitErr = <-waitCh
		}
		g.Stop()
		// Whatever in the group survived SIGTERM goes now.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}

	// The child has exited. Its output is complete once every holder of the
	// pipes has exited too; a background process that kept them would
	// block us forever, so it is killed after drainDelay.
	if !awaitBoth(outDone, errDone, drainDelay) {
		if s.Logger != nil {
			s.Logger.Warn("killing processes left holding the output after the command exited", "argv", loggedArgv)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if !awaitBoth(outDone, errDone, 100*time.Millisecond) {
			outR.Close() // a holder outside the group: stop reading
			errR.Close()
			<-outDone
			<-errDone
		}
	}
	outR.Close()
	errR.Close()

	res := &Result{Duration: time.Since(begin), ExitCode: -1}
	res.Stdout, res.Truncated = stdout.result()
	var errTrunc bool
	res.Stderr, errTrunc = stderr.result()
	res.Truncated = res.Truncated || errTrunc

	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case st.Exited():
			res.ExitCode = st.ExitStatus()
		case st.Signaled():
			res.Signal = unix.SignalName(st.Signal())
			if res.Signal == "" {
				res.Signal = fmt.Sprintf("signal %d", int(st.Signal()))
			}
		}
	} else if waitErr != nil {
		return res, fmt.Errorf("waiting for %s: %w", argv[0], waitErr)
	}

	returns := s.Returns
	if len(returns) == 0 {
		returns = []int{0}
	}
	res.Allowed = res.ExitCode >= 0 && slices.Contains(returns, res.ExitCode)

	if s.Logger != nil {
		s.Logger.Debug("process ended", "argv", loggedArgv, "exit_code", res.ExitCode, "signal", res.Signal, "duration", res.Duration)
	}
	switch {
	case timedOut:
		return res, &TimeoutError{Timeout: s.Timeout, Result: res}
	case canceled:
		return res, fmt.Errorf("%s interrupted: %w", argv[0], ctx.Err())
	case !res.Allowed:
		return res, &ExitError{Result: res, Returns: returns}
	}
	return res, nil
}

// startPlain starts cmd on the calling goroutine and waits for it in another.
func startPlain(cmd *exec.Cmd, waitCh chan<- error) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { waitCh <- cmd.Wait() }()
	return nil
}

// awaitBoth reports whether a and b are closed within d.
func awaitBoth(a, b <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		case <-t.C:
			return false
		}
	}
	return true
}

// startError classifies a failure of exec itself.
func startError(what, name, userSpec, groupSpec string, id *identity, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch {
		case errno == syscall.ENOENT:
			// The file vanished, or its #! interpreter does not exist.
			return &NotFoundError{What: what, Name: name, Err: fmt.Errorf("cannot execute: %w", err)}
		case errno == syscall.EPERM && id.cred != nil:
			return &UserError{User: userSpec, Group: groupSpec, Err: fmt.Errorf("not permitted to switch: %w", err)}
		case errno == syscall.EACCES && id.cred != nil:
			return fmt.Errorf("starting %s %q as uid %d: %w (can that user enter the working directory and every directory above it, and execute the program?)", what, name, id.uid, err)
		}
	}
	return fmt.Errorf("starting %s %q: %w", what, name, err)
}

func (s *Spec) validate() error {
	switch {
	case len(s.Argv) > 0 && len(s.Interpreter) > 0:
		return errors.New("invalid process spec: both argv and interpreter are set")
	case len(s.Argv) == 0 && len(s.Interpreter) == 0:
		return errors.New("invalid process spec: neither argv nor interpreter is set")
	case len(s.Argv) > 0 && (s.Script != "" || len(s.Flags) > 0):
		return errors.New("invalid process spec: script and flags need an interpreter")
	}
	name := s.Argv
	if len(s.Interpreter) > 0 {
		name = s.Interpreter
	}
	if name[0] == "" {
		return errors.New("invalid process spec: empty program name")
	}
	for _, a := range slices.Concat(s.Argv, s.Interpreter, s.Flags) {
		if strings.IndexByte(a, 0) >= 0 {
			return errors.New("invalid process spec: an argument contains a NUL byte")
		}
	}
	if s.Umask != nil && (*s.Umask < 0 || *s.Umask > 0o777) {
		return fmt.Errorf("invalid umask %#o: must be between 0 and 0777", *s.Umask)
	}
	if err := ValidReturns(s.Returns); err != nil {
		return err
	}
	if s.OutputLimit < 0 {
		return fmt.Errorf("invalid output limit %d: must not be negative", s.OutputLimit)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("invalid timeout %s: must not be negative", s.Timeout)
	}
	for k, v := range s.Env {
		if err := validEnv(k, v); err != nil {
			return err
		}
	}
	for _, d := range s.Path {
		if d == "" || strings.ContainsAny(d, ":\x00") {
			return fmt.Errorf("invalid path entry %q: must be non-empty and contain no ':'", d)
		}
	}
	return nil
}

func validEnv(k, v string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("invalid environment variable name %q", k)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("invalid value for environment variable %s: contains a NUL byte", k)
	}
	return nil
}

// buildEnv merges the layers in order (later wins), keeping the base order
// and appending new names sorted, then puts path in front of PATH.
func buildEnv(base []string, logon, env map[string]string, path []string) []string {
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		set(k, v)
	}
	for _, layer := range []map[string]string{logon, env} {
		keys := make([]string, 0, len(layer))
		for k := range layer {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(k, layer[k])
		}
	}
	p, ok := vals["PATH"]
	if !ok {
		p = defaultPATH
	}
	if len(path) > 0 {
		if p == "" {
			p = strings.Join(path, ":")
		} else {
			p = strings.Join(path, ":") + ":" + p
		}
	}
	set("PATH", p)
	out := make([]string, len(order))
	for i, k := range order {
		out[i] = k + "=" + vals[k]
	}
	return out
}

func envPATH(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return v
		}
	}
	return ""
}

// lookPath finds name like a shell would with the given PATH, except that
// relative PATH entries are skipped. A name with a slash is taken as is
// (relative to dir when relative).
func lookPath(name, path, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", err
		}
		if !filepath.IsAbs(p) {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", errNotInPATH
}

// errNotInPATH marks a name no PATH entry holds; NotFoundError words it.
var errNotInPATH = errors.New("not found in PATH")

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not executable")
	}
	return nil
}

// writeScript writes text to a new 0700 temporary file, owned by the target
// user when switching, and returns its path.
func writeScript(text, suffix string, cred *syscall.Credential) (string, error) {
	f, err := os.CreateTemp("", "toque-script-*"+suffix)
	if err != nil {
		return "", fmt.Errorf("writing script: %w", err)
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", fmt.Errorf("writing script: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o700); err != nil {
		return fail(err)
	}
	if cred != nil {
		if err := f.Chown(int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("writing script: %w", err)
	}
	return name, nil
}
