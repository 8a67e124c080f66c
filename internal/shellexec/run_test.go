package shellexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/internal/testutil"
)

func sh(script string) Spec { return Spec{Interpreter: []string{"/bin/sh"}, Script: script} }

func TestArgvWithoutShell(t *testing.T) {
	args := []string{"a b", `c'd`, `"e"`, "$HOME", "*", ""}
	res, err := Run(context.Background(), Spec{Argv: append([]string{"printf", "[%s]"}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	want := `[a b][c'd]["e"][$HOME][*][]`
	if res.Stdout != want || res.ExitCode != 0 || !res.Allowed {
		t.Fatalf("got %+v, want stdout %q", res, want)
	}
}

func TestInterpreters(t *testing.T) {
	bashism := "[[ 1 == 1 ]]"
	cases := []struct {
		name    string
		needs   testenv.Requirement
		spec    Spec
		wantErr bool
		stdout  string
	}{
		{"bash runs bash syntax", testenv.Bash, Spec{Interpreter: []string{"bash"}, Script: bashism}, false, ""},
		{"sh (dash) rejects bash syntax", testenv.DashSh, Spec{Interpreter: []string{"/bin/sh"}, Script: bashism}, true, ""},
		{"flags come before the script", testenv.Bash, Spec{Interpreter: []string{"bash"}, Flags: []string{"-e"}, Script: "false\necho not reached"}, true, ""},
		{"interpreter argv is kept", testenv.Bash, Spec{Interpreter: []string{"bash", "--noprofile"}, Script: "echo $BASH_VERSION | cut -c1"}, false, ""},
		{"multi-line script", "", sh("x=1\nif [ $x = 1 ]; then echo one; fi"), false, "one\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needs != "" {
				testenv.MustHave(t, c.needs)
			}
			res, err := Run(context.Background(), c.spec)
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v (stderr %q)", err, c.wantErr, res.Stderr)
			}
			if err != nil {
				var ee *ExitError
				if !errors.As(err, &ee) || ee.Result != res {
					t.Fatalf("want *ExitError carrying the result, got %T %v", err, err)
				}
			}
			if c.stdout != "" && res.Stdout != c.stdout {
				t.Fatalf("stdout = %q, want %q", res.Stdout, c.stdout)
			}
		})
	}
}

func TestScriptFileRemoved(t *testing.T) {
	res, err := Run(context.Background(), sh(`echo "$0"; ls -l "$0" | cut -c1-10`))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 2 || lines[1] != "-rwx------" {
		t.Fatalf("script path and mode: %q", res.Stdout)
	}
	if _, err := os.Stat(lines[0]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("script %s still there after Run: %v", lines[0], err)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Spec{Argv: []string{"pwd"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(res.Stdout) != dir {
		t.Fatalf("pwd = %q, want %q", res.Stdout, dir)
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), file} {
		t.Run(filepath.Base(bad), func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Argv: []string{"pwd"}, Dir: bad})
			var de *DirError
			if !errors.As(err, &de) || de.Dir != bad || res != nil {
				t.Fatalf("want *DirError and no result, got %v, %v", res, err)
			}
		})
	}
}

func TestEnvAndPath(t *testing.T) {
	bin := t.TempDir()
	tool := filepath.Join(bin, "toque-test-tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho tool:$FOO:$KEEP:$OVER\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := Spec{
		Argv:    []string{"toque-test-tool"},
		BaseEnv: []string{"KEEP=base", "OVER=base", "PATH=/usr/bin:/bin"},
		Env:     map[string]string{"FOO": "set", "OVER": "env"},
		Path:    []string{bin},
	}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "tool:set:base:env\n" {
		t.Fatalf("stdout = %q", res.Stdout)
	}

	spec = Spec{Argv: []string{"sh", "-c", `echo "$PATH"`}, Path: []string{bin, "/opt/x"}, Env: map[string]string{"PATH": "/usr/bin:/bin"}}
	res, err = Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := bin + ":/opt/x:/usr/bin:/bin\n"; res.Stdout != want {
		t.Fatalf("PATH = %q, want %q", res.Stdout, want)
	}

	// Without Path the tool is not found: lookup uses the final PATH only.
	_, err = Run(context.Background(), Spec{Argv: []string{"toque-test-tool"}, BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.What != "command" {
		t.Fatalf("want *NotFoundError for command, got %v", err)
	}

	// toque's own environment is the default base.
	t.Setenv("SHELLEXEC_TEST_INHERITED", "inherited")
	res, err = Run(context.Background(), sh(`echo "$SHELLEXEC_TEST_INHERITED"`))
	if err != nil || res.Stdout != "inherited\n" {
		t.Fatalf("inherited env: %v %+v", err, res)
	}
}

func TestReturns(t *testing.T) {
	cases := []struct {
		code    int
		returns []int
		allowed bool
	}{
		{0, nil, true},
		{3, []int{0, 3}, true},
		{0, []int{0, 3}, true},
		{1, []int{0, 3}, false},
		{1, nil, false},
		{0, []int{1}, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("exit %d returns %v", c.code, c.returns), func(t *testing.T) {
			s := sh(fmt.Sprintf("echo out; echo err >&2; exit %d", c.code))
			s.Returns = c.returns
			res, err := Run(context.Background(), s)
			if res == nil || res.ExitCode != c.code || res.Allowed != c.allowed {
				t.Fatalf("result %+v, err %v", res, err)
			}
			if res.Stdout != "out\n" || res.Stderr != "err\n" {
				t.Fatalf("output %q %q", res.Stdout, res.Stderr)
			}
			var ee *ExitError
			if c.allowed != (err == nil) || (err != nil && (!errors.As(err, &ee) || ee.Result != res)) {
				t.Fatalf("err = %T %v", err, err)
			}
		})
	}
}

func TestNotFoundIsNotExit127(t *testing.T) {
	res, err := Run(context.Background(), sh("toque-no-such-command-xyz"))
	var ee *ExitError
	var nf *NotFoundError
	if !errors.As(err, &ee) || errors.As(err, &nf) || res.ExitCode != 127 {
		t.Fatalf("command missing inside a script: want *ExitError 127, got %T %v (%+v)", err, err, res)
	}

	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badShebang := filepath.Join(dir, "badshebang")
	if err := os.WriteFile(badShebang, []byte("#!/toque/no/such/interp\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		spec Spec
		what string
	}{
		{"interpreter not in PATH", Spec{Interpreter: []string{"toque-csh-missing"}, Script: "true"}, "interpreter"},
		{"interpreter absolute", Spec{Interpreter: []string{"/toque/no/csh"}, Script: "true"}, "interpreter"},
		{"command not in PATH", Spec{Argv: []string{"toque-missing-cmd"}}, "command"},
		{"command not executable", Spec{Argv: []string{noexec}}, "command"},
		{"command is a directory", Spec{Argv: []string{dir}}, "command"},
		{"relative to dir", Spec{Argv: []string{"./nothing"}, Dir: dir}, "command"},
		{"missing #! interpreter", Spec{Argv: []string{badShebang}}, "command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Run(context.Background(), c.spec)
			var nf *NotFoundError
			if !errors.As(err, &nf) || nf.What != c.what || res != nil {
				t.Fatalf("want *NotFoundError(%s) and no result, got %T %v", c.what, err, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("message not one line: %q", err)
			}
		})
	}
}

func TestRelativeCommandInDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Spec{Argv: []string{"./run.sh"}, Dir: dir})
	if err != nil || res.Stdout != "ran\n" {
		t.Fatalf("%v %+v", err, res)
	}
}

func TestStdinClosed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := Run(ctx, Spec{Argv: []string{"cat"}})
	if err != nil || res.Stdout != "" {
		t.Fatalf("cat should see EOF at once: %v %+v", err, res)
	}
}

// Spec.Stdin reaches the process, and stays out of the debug log.
func TestStdinGiven(t *testing.T) {
	var log bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Trace})
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "read x; echo got ${#x}"}, Stdin: []byte("s3cret-hash\n"), Logger: logger})
	if err != nil || res.Stdout != "got 11\n" {
		t.Fatalf("%v %+v", err, res)
	}
	if strings.Contains(log.String(), "s3cret") {
		t.Errorf("the log shows the standard input:\n%s", log.String())
	}
}

func TestKilledBySignal(t *testing.T) {
	res, err := Run(context.Background(), sh("kill -9 $$"))
	var ee *ExitError
	if !errors.As(err, &ee) || res.ExitCode != -1 || res.Signal != "SIGKILL" || res.Allowed {
		t.Fatalf("got %T %v, %+v", err, err, res)
	}
}

// umaskOfFile runs a script that creates a file and returns its permissions.
func umaskOfFile(t *testing.T, mask int, o options) os.FileMode {
	t.Helper()
	f := filepath.Join(t.TempDir(), "f")
	s := Spec{Argv: []string{"touch", f}, Umask: &mask}
	if _, err := run(context.Background(), s, o); err != nil {
		t.Error(err)
		return 0
	}
	fi, err := os.Stat(f)
	if err != nil {
		t.Error(err)
		return 0
	}
	return fi.Mode().Perm()
}

// ownUmask reads toque's umask as its goroutines see it, by creating files
// from several goroutines (so likely on several threads).
func ownUmask(t *testing.T) os.FileMode {
	t.Helper()
	dir := t.TempDir()
	var wg sync.WaitGroup
	perms := make([]os.FileMode, 8)
	for i := range perms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := filepath.Join(dir, strconv.Itoa(i))
			if err := os.WriteFile(f, nil, 0o777); err != nil {
				t.Error(err)
				return
			}
			fi, err := os.Stat(f)
			if err != nil {
				t.Error(err)
				return
			}
			perms[i] = fi.Mode().Perm()
		}()
	}
	wg.Wait()
	for _, p := range perms[1:] {
		if p != perms[0] {
			t.Fatalf("goroutines see different umasks: %v", perms)
		}
	}
	return 0o777 &^ perms[0]
}

func TestUmask(t *testing.T) {
	before := ownUmask(t)
	for _, mode := range []struct {
		name string
		o    options
	}{
		{"own thread", options{self: currentSelf()}},
		{"sh wrapper", options{self: currentSelf(), forceUmaskWrapper: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			for _, c := range []struct {
				mask int
				perm os.FileMode
			}{{0o027, 0o640}, {0, 0o666}, {0o077, 0o600}, {0o022, 0o644}} {
				if got := umaskOfFile(t, c.mask, mode.o); got != c.perm {
					t.Errorf("umask %04o: file mode %04o, want %04o", c.mask, got, c.perm)
				}
			}
		})
		t.Run(mode.name+" parallel", func(t *testing.T) {
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mask, perm := 0o077, os.FileMode(0o600)
					if i%2 == 1 {
						mask, perm = 0o002, 0o664
					}
					if got := umaskOfFile(t, mask, mode.o); got != perm {
						t.Errorf("run %d umask %04o: file mode %04o, want %04o", i, mask, got, perm)
					}
				}()
			}
			wg.Wait()
		})
	}
	if after := ownUmask(t); after != before {
		t.Fatalf("toque's own umask changed from %04o to %04o", before, after)
	}
}

func TestUmaskWithUser(t *testing.T) {
	testenv.MustHave(t, testenv.Root)
	// t.TempDir's parent is 0700: the user could not enter it.
	dir, err := os.MkdirTemp("", "shellexec-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	mask := 0o027
	res, err := Run(context.Background(), Spec{Interpreter: []string{"/bin/sh"}, Script: "umask; id -un", User: "nobody", Umask: &mask, Dir: dir})
	if err != nil || res.Stdout != "0027\nnobody\n" {
		t.Fatalf("%v %+v", err, res)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	cases := []struct {
		name   string
		script string
	}{
		{"grandchild in background", "sleep 100 & echo $! > " + pidfile + "; echo started; sleep 100"},
		{"ignores SIGTERM", "trap '' TERM; sleep 100 & echo $! > " + pidfile + "; echo started; while :; do sleep 1; done"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sh(c.script)
			s.Timeout = 300 * time.Millisecond
			s.KillGrace = 300 * time.Millisecond
			start := time.Now()
			res, err := Run(context.Background(), s)
			elapsed := time.Since(start)
			var te *TimeoutError
			if !errors.As(err, &te) || te.Result != res || res == nil {
				t.Fatalf("want *TimeoutError with result, got %T %v", err, err)
			}
			if elapsed > 2*time.Second {
				t.Fatalf("Run took %s after a 300ms timeout", elapsed)
			}
			if res.Stdout != "started\n" || res.Signal == "" || res.ExitCode != -1 {
				t.Fatalf("result %+v", res)
			}
			testutil.WaitGone(t, testutil.ReadPid(t, pidfile))
		})
	}
}

func TestGrandchildHoldingOutputIsKilled(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	res, err := Run(context.Background(), sh("sleep 100 & echo $! > "+pidfile+"; echo done"))
	if err != nil || res.Stdout != "done\n" {
		t.Fatalf("%v %+v", err, res)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Run hung for %s on a background process holding stdout", d)
	}
	testutil.WaitGone(t, testutil.ReadPid(t, pidfile))
}

func TestDetachedBackgroundSurvives(t *testing.T) {
	// A process that let go of toque's output (a daemon) is left alone:
	// after Run returned — any kill of Run's is sent by then — it still
	// answers when asked.
	dir := t.TempDir()
	gate, alive := filepath.Join(dir, "gate"), filepath.Join(dir, "alive")
	res, err := Run(context.Background(), sh(fmt.Sprintf(
		`(while [ ! -e '%s' ]; do sleep 0.01; done; echo > '%s') >/dev/null 2>&1 & echo $!`, gate, alive)))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if pid <= 0 {
		t.Fatalf("stdout %q", res.Stdout)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !testutil.Await(10*time.Second, testutil.Exists(alive)) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("detached background process was killed")
	}
	testutil.WaitGone(t, pid)
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := filepath.Join(t.TempDir(), "started")
	go func() {
		// Cancelled once the command runs, so that it is killed.
		testutil.Await(10*time.Second, func() bool { return testutil.Exists(started)() || ctx.Err() != nil })
		cancel()
	}()
	start := time.Now()
	res, err := Run(ctx, sh("touch '"+started+"'; sleep 100"))
	if !errors.Is(err, context.Canceled) || res == nil || res.Signal != "SIGTERM" {
		t.Fatalf("got %v %+v", err, res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %s", d)
	}
	if _, err := Run(ctx, sh("true")); !errors.Is(err, context.Canceled) {
		t.Fatalf("already-cancelled context: %v", err)
	}
}

func TestUser(t *testing.T) {
	testenv.MustHave(t, testenv.Root)
	cases := []struct {
		name   string
		spec   Spec
		stdout string
	}{
		{"by name", Spec{Argv: []string{"id", "-u"}, User: "nobody"}, "65534\n"},
		{"primary group", Spec{Argv: []string{"id", "-g"}, User: "nobody"}, "65534\n"},
		{"by id", Spec{Argv: []string{"id", "-un"}, User: "65534"}, "nobody\n"},
		{"user env", Spec{Argv: []string{"sh", "-c", `echo "$HOME $USER $LOGNAME"`}, User: "nobody"}, "/nonexistent nobody nobody\n"},
		{"env overrides user env", Spec{Argv: []string{"sh", "-c", `echo "$HOME"`}, User: "nobody", Env: map[string]string{"HOME": "/tmp"}}, "/tmp\n"},
		{"bare uid with group", Spec{Argv: []string{"sh", "-c", "id -u; id -g"}, User: "12345", Group: "12346"}, "12345\n12346\n"},
		{"script readable by the user", Spec{Interpreter: []string{"/bin/sh"}, Script: "id -un", User: "nobody"}, "nobody\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Run(context.Background(), c.spec)
			if err != nil {
				t.Fatalf("%v (%+v)", err, res)
			}
			if c.stdout != "" && res.Stdout != c.stdout {
				t.Fatalf("stdout %q, want %q", res.Stdout, c.stdout)
			}
		})
	}
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "id -u; id -g"}, Group: "nogroup"})
	if err != nil || res.Stdout != "0\n65534\n" {
		t.Fatalf("group only: %v %+v", err, res)
	}
}

func TestUserErrors(t *testing.T) {
	cases := []struct {
		name        string
		user, group string
		me          self
	}{
		{"unknown user", "toque-no-such-user", "", currentSelf()},
		{"unknown group", "", "toque-no-such-group", currentSelf()},
		{"bare uid without group", "54321", "", currentSelf()},
		{"non-root to another user", "nobody", "", self{euid: 1000, egid: 1000}},
		{"non-root to another group", "", "nogroup", self{euid: 1000, egid: 1000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := run(context.Background(), Spec{Argv: []string{"true"}, User: c.user, Group: c.group}, options{self: c.me})
			var ue *UserError
			if !errors.As(err, &ue) || res != nil {
				t.Fatalf("want *UserError and no result, got %T %v", err, err)
			}
		})
	}

	// Non-root asking for itself needs no switch.
	id, err := resolveIdentity("65534", "65534", self{euid: 65534, egid: 65534})
	if err != nil || id.cred != nil {
		t.Fatalf("same user: %v %+v", err, id)
	}
}

func TestOutputLimit(t *testing.T) {
	s := sh(`i=0; while [ $i -lt 100 ]; do printf '%05d\n' $i; i=$((i+1)); done; echo short >&2`)
	s.OutputLimit = 12
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "00098\n00099\n" || !res.Truncated || res.Stderr != "short\n" {
		t.Fatalf("%+v", res)
	}

	s.OutputLimit = 0
	res, err = Run(context.Background(), s)
	if err != nil || res.Truncated || len(res.Stdout) != 600 {
		t.Fatalf("default limit: %v truncated=%v len=%d", err, res.Truncated, len(res.Stdout))
	}

	big := sh(`head -c 300000 /dev/zero | tr '\0' x`)
	res, err = Run(context.Background(), big)
	if err != nil || !res.Truncated || len(res.Stdout) != DefaultOutputLimit {
		t.Fatalf("big: %v truncated=%v len=%d", err, res.Truncated, len(res.Stdout))
	}
}

func TestOutputStreamedToLogger(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &lockedWriter{w: &buf, mu: &mu}})
	s := sh("echo first; echo oops >&2; printf 'no newline'")
	s.Logger = log
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{"stream=stdout line=first", "stream=stderr line=oops", `stream=stdout line="no newline"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}

	// Not at debug level: nothing is logged per line.
	buf.Reset()
	s.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &lockedWriter{w: &buf, mu: &mu}})
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("info logger got %q", buf.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestInvalidSpec(t *testing.T) {
	neg := -1
	cases := []struct {
		name string
		spec Spec
	}{
		{"nothing to run", Spec{}},
		{"both argv and interpreter", Spec{Argv: []string{"true"}, Interpreter: []string{"sh"}}},
		{"script without interpreter", Spec{Argv: []string{"true"}, Script: "x"}},
		{"empty name", Spec{Argv: []string{""}}},
		{"NUL in argument", Spec{Argv: []string{"echo", "a\x00b"}}},
		{"bad umask", Spec{Argv: []string{"true"}, Umask: &neg}},
		{"bad returns", Spec{Argv: []string{"true"}, Returns: []int{256}}},
		{"bad env name", Spec{Argv: []string{"true"}, Env: map[string]string{"A=B": "c"}}},
		{"bad path entry", Spec{Argv: []string{"true"}, Path: []string{"/a:/b"}}},
		{"negative timeout", Spec{Argv: []string{"true"}, Timeout: -time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Run(context.Background(), c.spec)
			if err == nil || res != nil {
				t.Fatalf("want an error, got %v %+v", err, res)
			}
		})
	}
}

func TestBuildEnv(t *testing.T) {
	got := buildEnv([]string{"B=1", "A=2", "B=3", "junk"}, map[string]string{"HOME": "/h"}, map[string]string{"Z": "z", "A": "a"}, []string{"/p"})
	want := []string{"B=3", "A=a", "HOME=/h", "Z=z", "PATH=/p:" + defaultPATH}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func BenchmarkRunTrue(b *testing.B) {
	mask := 0o022
	for _, c := range []struct {
		name string
		spec Spec
		o    options
	}{
		{"script-sh", Spec{Interpreter: []string{"/bin/sh"}, Script: "true"}, options{}},
		{"argv-true", Spec{Argv: []string{"/bin/true"}}, options{}},
		{"argv-true-umask-thread", Spec{Argv: []string{"/bin/true"}, Umask: &mask}, options{}},
		{"argv-true-umask-wrapper", Spec{Argv: []string{"/bin/true"}, Umask: &mask}, options{forceUmaskWrapper: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := c.o
			o.self = currentSelf()
			for b.Loop() {
				if _, err := run(context.Background(), c.spec, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkExecFloor(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHelperProcess is not a test: TestNothingOutlivesToque runs the test
// binary as a stand-in for toque that starts a child and then gets killed.
func TestHelperProcess(t *testing.T) {
	pidfile := os.Getenv("SHELLEXEC_HELPER_PIDFILE")
	if pidfile == "" {
		t.Skip("helper process only")
	}
	// The child writes its pid, then answers once (PIDFILE.alive) when the
	// test asks (PIDFILE.gate), and sleeps.
	s := Spec{Argv: []string{"sh", "-c", `echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && while [ ! -e "$0.gate" ]; do sleep 0.01; done && echo > "$0.alive" && exec sleep 100`, pidfile}}
	if os.Getenv("SHELLEXEC_HELPER_UMASK") != "" {
		mask := 0o022
		s.Umask = &mask
	}
	Run(context.Background(), s)
	os.Exit(0)
}

func TestNothingOutlivesToque(t *testing.T) {
	for _, umask := range []string{"", "1"} {
		t.Run("umask="+umask, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			helper := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
			helper.Env = append(os.Environ(), "SHELLEXEC_HELPER_PIDFILE="+pidfile, "SHELLEXEC_HELPER_UMASK="+umask)
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			if !testutil.Await(10*time.Second, testutil.Exists(pidfile)) {
				helper.Process.Kill()
				t.Fatal("helper never started its child")
			}
			child := testutil.ReadPid(t, pidfile)
			if err := os.WriteFile(pidfile+".gate", nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if !testutil.Await(10*time.Second, testutil.Exists(pidfile+".alive")) {
				helper.Process.Kill()
				t.Fatal("child died while toque was alive")
			}
			helper.Process.Kill()
			helper.Wait()
			testutil.WaitGone(t, child)
		})
	}
}

func TestRunStdin(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("0123456789abcdef", 1<<14) // 256 KiB: more than a pipe holds
	for _, tc := range []struct {
		name, script, in, want string
	}{
		{"read", "cat", `{"path":"/x"}`, `{"path":"/x"}`},
		{"large", "wc -c", big, fmt.Sprint(len(big))},
		{"ignored", "echo done", big, "done"},
		{"empty", "wc -c", "", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(ctx, Spec{Argv: []string{"/bin/sh", "-c", tc.script}, Stdin: []byte(tc.in), OutputLimit: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(res.Stdout); got != tc.want {
				t.Fatalf("stdout %q, want %q", truncateForTest(got), truncateForTest(tc.want))
			}
		})
	}
	// Without Stdin the process reads /dev/null.
	res, err := Run(ctx, Spec{Argv: []string{"/bin/sh", "-c", "wc -c"}})
	if err != nil || strings.TrimSpace(res.Stdout) != "0" {
		t.Fatalf("no stdin: %v %q", err, res.Stdout)
	}
}

func truncateForTest(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
