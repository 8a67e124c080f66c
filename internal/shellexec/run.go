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

// run is Run with the test knobs o. Its steps: prepare what the process
// needs (nothing is started when that fails), build the command, open
// its output, start it, wait for it (killing it on timeout or
// cancellation), drain its output, and judge how it ended.
func run(ctx context.Context, s Spec, o options) (*Result, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l, err := prepare(s, o.self)
	if err != nil {
		return nil, err
	}
	if l.script != "" {
		defer os.Remove(l.script)
	}
	cmd, umask, useThread := l.command(s, o)
	out, err := openOutputs(s)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out.outW, out.errW
	if s.Stdin != nil {
		cmd.Stdin = bytes.NewReader(s.Stdin) // else nil: /dev/null
	}
	loggedArgv := any(cmd.Args)
	if s.Sensitive {
		loggedArgv = "(sensitive)"
	}
	if s.Logger != nil {
		s.Logger.Debug("starting process", "argv", loggedArgv, "dir", s.Dir, "user", s.User, "group", s.Group)
	}

	begin := time.Now()
	waitCh := make(chan error, 1)
	err = l.start(cmd, umask, useThread, waitCh)
	out.outW.Close()
	out.errW.Close()
	if err != nil {
		out.outR.Close()
		out.errR.Close()
		return nil, startError(l.what, l.argv[0], s.User, s.Group, l.id, err)
	}
	pgid := cmd.Process.Pid
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go out.stdout.drain(out.outR, outDone)
	go out.stderr.drain(out.errR, errDone)

	waitErr, timedOut, canceled := waitOrKill(ctx, s, pgid, waitCh)
	out.finish(outDone, errDone, pgid, s.Logger, loggedArgv)

	res := out.result(time.Since(begin))
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		exitStatus(res, st)
	} else if waitErr != nil {
		return res, fmt.Errorf("waiting for %s: %w", l.argv[0], waitErr)
	}
	return res, judge(ctx, s, res, l.argv[0], loggedArgv, timedOut, canceled)
}

// launch is what run prepares before it starts a process.
type launch struct {
	id *identity
	// env is the child's whole environment (childEnv).
	env []string
	// what is "command" (Spec.Argv) or "interpreter" (Spec.Interpreter),
	// and argv that argv, for errors.
	what string
	argv []string
	// exe is argv[0] looked up; args the process's arguments: argv, then,
	// for a script, the flags and the script file.
	exe  string
	args []string
	// script is the temporary file holding Spec.Script, "" for none: the
	// caller removes it.
	script string
}

// prepare resolves what s's process needs before anything starts: the
// identity it runs as, its environment, its working directory (which must
// be a directory), the program found in the final PATH and, for a
// script, the temporary file that holds it. Its errors are
// *UserError, *DirError, *NotFoundError or the script's I/O error.
func prepare(s Spec, me self) (*launch, error) {
	id, err := resolveIdentity(s.User, s.Group, me)
	if err != nil {
		return nil, err
	}
	l := &launch{id: id, env: childEnv(s, id), what: "command", argv: s.Argv}
	if err := checkDir(s.Dir); err != nil {
		return nil, err
	}
	if len(s.Interpreter) > 0 {
		l.what, l.argv = "interpreter", s.Interpreter
	}
	exe, err := lookPath(l.argv[0], envPATH(l.env), s.Dir)
	if err != nil {
		nf := &NotFoundError{What: l.what, Name: l.argv[0]}
		if !errors.Is(err, errNotInPATH) {
			nf.Err = err
		}
		return nil, nf
	}
	l.exe = exe
	l.args = append([]string{l.argv[0]}, l.argv[1:]...)
	if len(s.Interpreter) > 0 {
		script, err := writeScript(s.Script, s.ScriptSuffix, id.cred)
		if err != nil {
			return nil, err
		}
		l.script = script
		l.args = append(append(l.args, s.Flags...), script)
	}
	return l, nil
}

// checkDir checks that dir, when set, is an existing directory.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &DirError{Dir: dir, Err: errors.New("does not exist")}
	case err != nil:
		return &DirError{Dir: dir, Err: err}
	case !fi.IsDir():
		return &DirError{Dir: dir, Err: errors.New("is not a directory")}
	}
	return nil
}

// command is the command that runs l as s says, and the umask to give it:
// in its own thread (useThread), or through the /bin/sh wrapper when
// threads cannot have their own umask here (or o forces it).
func (l *launch) command(s Spec, o options) (cmd *exec.Cmd, umask int, useThread bool) {
	cmd = &exec.Cmd{Path: l.exe, Args: l.args, Env: l.env, Dir: s.Dir}
	cmd.SysProcAttr = sysProcAttr(l.id.cred)
	if s.Umask != nil {
		umask = *s.Umask
		if o.forceUmaskWrapper || !umaskThreadUsable() {
			l.wrapUmask(cmd, umask)
		} else {
			useThread = true
		}
	}
	return cmd, umask, useThread
}

// wrapUmask makes cmd run l through /bin/sh, which sets umask first.
func (l *launch) wrapUmask(cmd *exec.Cmd, umask int) {
	cmd.Path = wrapperShell
	cmd.Args = append([]string{wrapperShell, "-c", fmt.Sprintf(`umask %04o && exec "$0" "$@"`, umask), l.exe}, l.args[1:]...)
}

// start starts cmd, in a thread of its own with umask when useThread (or
// wrapped, should that thread fail to get its own umask), and has waitCh
// receive the result of its Wait.
func (l *launch) start(cmd *exec.Cmd, umask int, useThread bool, waitCh chan error) error {
	if !useThread {
		return startPlain(cmd, waitCh)
	}
	err := startInThread(cmd, umask, waitCh)
	if errors.Is(err, errThreadUnusable) {
		// The thread could not get its own umask: wrap instead.
		l.wrapUmask(cmd, umask)
		err = startPlain(cmd, waitCh)
	}
	return err
}

// outputs are a process's two output pipes and what captures each.
type outputs struct {
	stdout, stderr         *capture
	outR, outW, errR, errW *os.File
}

// openOutputs makes the pipes the process writes its output to, and the
// captures that keep its tail and pass its lines on (to the logger, to
// Spec.Output; neither for a sensitive process).
func openOutputs(s Spec) (*outputs, error) {
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
	o := &outputs{stdout: newCapture("stdout", limit, outLog, lines), stderr: newCapture("stderr", limit, outLog, lines)}
	o.stdout.sink = s.Stdout
	var err error
	o.outR, o.outW, err = os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating output pipe: %w", err)
	}
	o.errR, o.errW, err = os.Pipe()
	if err != nil {
		o.outR.Close()
		o.outW.Close()
		return nil, fmt.Errorf("creating output pipe: %w", err)
	}
	return o, nil
}

// waitOrKill waits for the process group pgid's leader (waitCh) until it
// exits, s.Timeout passes (timedOut) or ctx ends (canceled). In the last
// two cases the group gets SIGTERM, then SIGKILL after s.KillGrace, and
// whatever in it survived SIGTERM is killed once the leader exited. It
// returns once the leader has exited, with the error of its Wait.
func waitOrKill(ctx context.Context, s Spec, pgid int, waitCh <-chan error) (waitErr error, timedOut, canceled bool) {
	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
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
	return waitErr, timedOut, canceled
}

// finish waits, once the child has exited, for its output to be complete
// (outDone and errDone closed by the captures' drain), which it is once
// every holder of the pipes has exited too. A background process that
// kept them would block us forever, so the group pgid is killed after
// drainDelay, and reading stops after 100 ms more (a holder outside the
// group). It closes the read ends.
func (o *outputs) finish(outDone, errDone <-chan struct{}, pgid int, logger hclog.Logger, loggedArgv any) {
	if !awaitBoth(outDone, errDone, drainDelay) {
		if logger != nil {
			logger.Warn("killing processes left holding the output after the command exited", "argv", loggedArgv)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if !awaitBoth(outDone, errDone, 100*time.Millisecond) {
			o.outR.Close() // a holder outside the group: stop reading
			o.errR.Close()
			<-outDone
			<-errDone
		}
	}
	o.outR.Close()
	o.errR.Close()
}

// result is the Result of a process that ran for d, with the output
// captured; its exit code is -1 until exitStatus says otherwise.
func (o *outputs) result(d time.Duration) *Result {
	res := &Result{Duration: d, ExitCode: -1}
	res.Stdout, res.Truncated = o.stdout.result()
	var errTrunc bool
	res.Stderr, errTrunc = o.stderr.result()
	res.Truncated = res.Truncated || errTrunc
	return res
}

// exitStatus records in res how the process ended: its exit code, or the
// signal that killed it.
func exitStatus(res *Result, st syscall.WaitStatus) {
	switch {
	case st.Exited():
		res.ExitCode = st.ExitStatus()
	case st.Signaled():
		res.Signal = unix.SignalName(st.Signal())
		if res.Signal == "" {
			res.Signal = fmt.Sprintf("signal %d", int(st.Signal()))
		}
	}
}

// judge sets res.Allowed (the exit code is in s.Returns, [0] when empty)
// and returns run's error for how the process named name ended: a
// *TimeoutError, ctx's error when it was canceled, an *ExitError for a
// code not allowed, nil otherwise.
func judge(ctx context.Context, s Spec, res *Result, name string, loggedArgv any, timedOut, canceled bool) error {
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
		return &TimeoutError{Timeout: s.Timeout, Result: res}
	case canceled:
		return fmt.Errorf("%s interrupted: %w", name, ctx.Err())
	case !res.Allowed:
		return &ExitError{Result: res, Returns: returns}
	}
	return nil
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
