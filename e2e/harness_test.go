package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/toquehq/toque/command"
	"github.com/toquehq/toque/internal/testenv"
)

// toqueBin is the binary built once for every end-to-end test, or the
// one TOQUE_TEST_BINARY names (make test-nonroot builds it beforehand: the
// user it runs the tests as cannot use the caller's Go caches).
var toqueBin string

// repoRoot is the repository's directory (the tests run in e2e/).
var repoRoot string

// TestMain builds the binary, then runs the tests. When the test binary is
// started under the name toque — as the scripts' `exec toque` does
// (testscript puts a copy of it first in their PATH) — it is toque
// instead (toqueMain).
func TestMain(m *testing.M) {
	testscript.Main(suite{m}, map[string]func(){"toque": toqueMain})
}

// tripwire is where the process's environment points toque's state and
// host-wide lock: below /dev/null, where nothing can be made.
const tripwire = "/dev/null/the-e2e-harness-sets-TOQUE_STATE_DIR-and-TOQUE_HOST_LOCK"

// suite is the test binary's own run: build, test, clean up.
type suite struct{ m *testing.M }

func (s suite) Run() int {
	abs, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = abs
	dir, err := os.MkdirTemp("", "toque-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The harness gives every toque a test starts a state directory and
	// host-wide lock of its own (env.defaults, setupScript): never the
	// machine's /var/lib/toque and /run/toque, nor one another's. A toque
	// started with the process's environment instead would fail at once:
	// these name directories that cannot exist.
	os.Setenv("TOQUE_STATE_DIR", tripwire)
	os.Setenv("TOQUE_HOST_LOCK", tripwire+"/apply.lock")
	if bin := os.Getenv("TOQUE_TEST_BINARY"); bin != "" {
		if !filepath.IsAbs(bin) {
			fmt.Fprintf(os.Stderr, "TOQUE_TEST_BINARY=%s: want an absolute path\n", bin)
			return 1
		}
		toqueBin = bin
	} else {
		toqueBin = filepath.Join(dir, "toque")
		cmd := exec.Command("go", "build", "-o", toqueBin, repoRoot)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building toque:", err)
			return 1
		}
	}
	return s.m.Run()
}

// toqueMain is toque as the scripts run it: command.Run, as main calls it,
// on the process's own arguments, streams and environment (the script's),
// with its output scrubbed (scrubber) and its exit status written where
// the status command reads it. Signals are the built binary's to test:
// this has none of main's handling.
func toqueMain() {
	s := newScrubber(os.Getenv)
	stdout, stderr := s.writer(os.Stdout), s.writer(os.Stderr)
	code := command.Run(context.Background(), make(chan struct{}), os.Args[1:], command.Streams{
		Stdin: os.Stdin, Stdout: stdout, Stderr: stderr,
	})
	stdout.Close()
	stderr.Close()
	if f := os.Getenv(statusEnv); f != "" {
		if err := os.WriteFile(f, []byte(strconv.Itoa(code)+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "toque (test binary):", err)
			os.Exit(125)
		}
	}
	os.Exit(code)
}

// env is one end-to-end scenario: a recipe dir, a scratch root the recipes
// write under, and a state dir.
type env struct {
	t        *testing.T
	dir      string // recipes
	root     string // where the recipes' resources live
	state    string
	hostLock string // the host-wide apply lock, this test's own
}

func newEnv(t *testing.T) *env {
	t.Helper()
	base := t.TempDir()
	// Reachable by every user, as /etc is (t.TempDir makes 0700 dirs): a
	// plan shows current content only of files every user may read.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, dir: filepath.Join(base, "recipes"), root: filepath.Join(base, "root"), state: filepath.Join(base, "state"),
		hostLock: filepath.Join(base, "run", "apply.lock")}
	for _, d := range []string{e.dir, e.root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// recipe writes a recipe file; ROOT in src is replaced with e.root.
func (e *env) recipe(name, src string) {
	e.t.Helper()
	src = strings.ReplaceAll(src, "ROOT", e.root)
	if err := os.WriteFile(filepath.Join(e.dir, name), []byte(src), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// Most tests run toque in-process: command.Run, as main calls it, with the
// test's own streams and toque's settings (TOQUE_STATE_DIR, NO_COLOR…)
// injected, so such tests can run side by side. What only a process can
// show — signals, a closed stdout, exit statuses, TOQUE_LOG on the real
// stderr, a terminal, the README's commands — runs the built binary (bin,
// runCmd).

// run runs toque in-process with -chdir set to the recipe dir.
func (e *env) run(args ...string) result {
	e.t.Helper()
	return e.inProcess(nil, nil, append([]string{"-chdir=" + e.dir}, args...)...)
}

// toque runs toque in-process with args as given (no -chdir) and extra
// environment variables (NAME=VALUE), which win over the harness's
// defaults. Recipes' env() and the commands toque starts read the
// process's environment, so the variables toque itself does not read
// (anything but TOQUE_* and NO_COLOR) are set with t.Setenv: a test that
// passes them cannot be parallel.
func (e *env) toque(extra []string, args ...string) result {
	e.t.Helper()
	return e.inProcess(nil, extra, args...)
}

// inProcess is command.Run with stdin (empty when nil), extra variables as
// for toque, and buffers for stdout and stderr.
func (e *env) inProcess(stdin io.Reader, extra []string, args ...string) (r result) {
	e.t.Helper()
	vars := map[string]string{"TOQUE_STATE_DIR": e.state, "TOQUE_HOST_LOCK": e.hostLock, "NO_COLOR": "1"}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
		if !strings.HasPrefix(k, "TOQUE_") && k != "NO_COLOR" {
			e.t.Setenv(k, v)
		}
	}
	lookup := func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errb bytes.Buffer
	defer func() {
		if p := recover(); p != nil {
			e.t.Fatalf("toque %s panicked: %v\n%s", strings.Join(args, " "), p, debug.Stack())
		}
	}()
	code := command.Run(e.t.Context(), make(chan struct{}), args, command.Streams{
		Stdin: stdin, Stdout: &out, Stderr: &errb,
		Env: command.Env{LookupEnv: lookup},
	})
	return result{code, out.String(), errb.String()}
}

// bin runs the built binary with -chdir set to the recipe dir.
func (e *env) bin(args ...string) result {
	e.t.Helper()
	return e.runCmd(exec.Command(toqueBin, append([]string{"-chdir=" + e.dir}, args...)...))
}

// mustBin is bin, failing the test unless the exit status is want.
func (e *env) mustBin(want int, args ...string) result {
	e.t.Helper()
	r := e.bin(args...)
	if r.code != want {
		e.t.Fatalf("toque (binary) %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

// defaults are the harness's settings for toque, as NAME=VALUE: the
// test's own state directory and host-wide lock (isolation), no colour.
func (e *env) defaults() []string {
	return append(e.isolation(), "NO_COLOR=1")
}

// isolation points toque's state directory and host-wide lock at the
// test's own scratch directory.
func (e *env) isolation() []string {
	return []string{"TOQUE_STATE_DIR=" + e.state, "TOQUE_HOST_LOCK=" + e.hostLock}
}

// binCmd is the built binary with args, its environment the process's
// with the harness's defaults winning: a test that starts toque itself
// (to signal it, read its pipe…) makes the command here.
func (e *env) binCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(toqueBin, args...)
	cmd.Env = append(os.Environ(), e.defaults()...)
	return cmd
}

// runCmd runs cmd (the binary, or a command that runs it) with the
// harness's defaults in its environment.
func (e *env) runCmd(cmd *exec.Cmd) result {
	e.t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// Precedence (exec keeps the last of duplicate keys): the environment,
	// then the harness's defaults, then what the test itself put in cmd.Env.
	inherited := map[string]bool{}
	env := os.Environ()
	for _, kv := range env {
		inherited[kv] = true
	}
	env = append(env, e.defaults()...)
	for _, kv := range cmd.Env {
		if !inherited[kv] {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			e.t.Fatalf("running %v: %v", cmd.Args, err)
		}
		code = ee.ExitCode()
	}
	return result{code, out.String(), errb.String()}
}

// mustToque is toque, failing the test unless the exit status is want.
func (e *env) mustToque(want int, extra []string, args ...string) result {
	e.t.Helper()
	r := e.toque(extra, args...)
	if r.code != want {
		e.t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

func (e *env) must(want int, args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != want {
		e.t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) write(rel, content string, mode os.FileMode) {
	e.t.Helper()
	p := filepath.Join(e.root, rel)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) mode(rel string) os.FileMode {
	e.t.Helper()
	st, err := os.Lstat(filepath.Join(e.root, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return st.Mode().Perm()
}

// snapshot records every file under root (path → mode and content) so a
// test can prove the host was left exactly as it was.
func (e *env) snapshot() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	filepath.Walk(e.root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			v += " -> " + l
		}
		out[p] = v
		return nil
	})
	return out
}

func sameSnapshot(t *testing.T, a, b map[string]string) {
	t.Helper()
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	if !bytes.Equal(ab, bb) {
		t.Fatalf("the host changed:\nbefore %s\nafter  %s", ab, bb)
	}
}

func TestE2EEditedPlanIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	e.must(0, "plan", "-out=plan.out")
	p := filepath.Join(e.dir, "plan.out")
	b, _ := os.ReadFile(p)
	edited := bytes.Replace(b, []byte(`a\\n`), []byte(`b\\n`), 1)
	if bytes.Equal(edited, b) {
		edited = bytes.Replace(b, []byte("a.conf"), []byte("b.conf"), 1)
	}
	if err := os.WriteFile(p, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.must(1, "apply", "plan.out")
	if !strings.Contains(strings.ToLower(r.stderr), "checksum") {
		t.Errorf("want a checksum error:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.conf")); !os.IsNotExist(err) {
		t.Error("an edited plan changed the host")
	}

	// Truncated, and not a plan at all.
	os.WriteFile(p, b[:len(b)/2], 0o600)
	e.must(1, "apply", "plan.out")
	e.must(1, "show", "plan.out")
	os.WriteFile(p, []byte("hello"), 0o600)
	e.must(1, "apply", "plan.out")
}

func TestE2EPlanFromAnotherHostIsRefused(t *testing.T) {
	t.Parallel()
	// Another hostname is a UTS namespace away: root makes one, anyone
	// else in a user namespace of their own.
	unshare := []string{"unshare", "--uts"}
	if ok, _ := testenv.Has(testenv.Root); ok {
		testenv.MustHave(t, testenv.Unshare)
	} else {
		testenv.MustHave(t, testenv.UserNS)
		unshare = append(unshare, "--user", "--map-root-user")
	}
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	e.must(0, "plan", "-out=plan.out")
	cmd := exec.Command(unshare[0], append(unshare[1:], "sh", "-c", `hostname toque-elsewhere && exec "$@"`, "sh",
		toqueBin, "-chdir="+e.dir, "apply", "plan.out")...)
	r := e.runCmd(cmd)
	if r.code != 1 || !strings.Contains(r.stderr, "toque-elsewhere") {
		t.Fatalf("want the other host refused by name, got %s", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.conf")); !os.IsNotExist(err) {
		t.Error("a plan from another host changed this one")
	}
}

// badInput is a recipe that plan and validate must both refuse, exit 1,
// with a diagnostic at want (FILE:LINE) and no panic.
type badInput struct {
	name, src, want string
}

func testBadInput(t *testing.T, cases []badInput) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.recipe("bad.hcl", c.src)
			for _, cmd := range [][]string{{"plan"}, {"validate"}} {
				r := e.must(1, cmd...)
				if !strings.Contains(r.stderr, c.want) {
					t.Errorf("%s: stderr lacks %q:\n%s", cmd[0], c.want, r)
				}
				if strings.Contains(r.stderr, "panic") {
					t.Errorf("%s panicked:\n%s", cmd[0], r)
				}
			}
		})
	}
}

func TestE2ESecondConcurrentApplyFailsNamingTheHolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first, out, firstErr := e.startLongApply()
	second := e.run("apply", "plan.out")
	go io.Copy(io.Discard, out)
	if err := first.Wait(); err != nil {
		t.Fatalf("first apply: %v\n%s", err, firstErr.String())
	}
	if second.code != 4 {
		t.Fatalf("second apply: want exit 4 (lock held), got %s", second)
	}
	if !strings.Contains(second.stderr, fmt.Sprintf("pid %d", first.Process.Pid)) {
		t.Errorf("second apply does not name the holder's pid %d:\n%s", first.Process.Pid, second.stderr)
	}
}

// startLongApply plans 1,000 files and starts applying them (each write is
// fsynced, so this takes a while), returning once the apply is converging.
func (e *env) startLongApply() (*exec.Cmd, io.Reader, *bytes.Buffer) {
	e.t.Helper()
	var src strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&src, "file \"ROOT/f%04d\" {\n  content = \"%d\\n\"\n}\n", i, i)
	}
	e.recipe("many.hcl", src.String())
	e.must(0, "plan", "-out=plan.out")

	cmd := e.binCmd("-chdir="+e.dir, "apply", "plan.out")
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var seen bytes.Buffer
	for !bytes.Contains(seen.Bytes(), []byte("Creating")) {
		n, err := out.Read(buf)
		if err != nil {
			e.t.Fatalf("apply ended before converging: %v\n%s%s", err, seen.String(), stderr.String())
		}
		seen.Write(buf[:n])
	}
	return cmd, out, &stderr
}

func TestE2EFirstInterruptFinishesTheResourceThenStops(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd, out, stderr := e.startLongApply()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 5 {
		t.Fatalf("want exit 5 (interrupted), got %v\n%s%s", err, rest, stderr.String())
	}
	if !strings.Contains(string(rest), "Apply interrupted!") {
		t.Errorf("no interrupted summary:\n%s", rest)
	}
	// Every file is either absent or whole: the resource in hand finished.
	written := 0
	for i := 0; i < 1000; i++ {
		b, err := os.ReadFile(filepath.Join(e.root, fmt.Sprintf("f%04d", i)))
		if err == nil {
			written++
			if string(b) != fmt.Sprintf("%d\n", i) {
				t.Fatalf("f%04d is partial: %q", i, b)
			}
		}
	}
	if written == 0 || written == 1000 {
		t.Errorf("%d of 1000 files written; the stop should land mid-run", written)
	}
	var rep struct {
		Interrupted bool `json:"interrupted"`
	}
	b, err := os.ReadFile(filepath.Join(e.state, "reports", "last.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil || !rep.Interrupted {
		t.Errorf("report does not say interrupted (%v): %s", err, b[:min(len(b), 300)])
	}
}

func TestE2ELogging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	cmd := exec.Command(toqueBin, "-chdir="+e.dir, "plan")
	cmd.Env = append(os.Environ(), "TOQUE_LOG=debug")
	r := e.runCmd(cmd)
	if r.code != 0 || !strings.Contains(r.stderr, "[DEBUG]") {
		t.Errorf("TOQUE_LOG=debug wrote no debug log to stderr: %s", r)
	}
	logPath := filepath.Join(t.TempDir(), "toque.log")
	cmd = exec.Command(toqueBin, "-chdir="+e.dir, "plan")
	cmd.Env = append(os.Environ(), "TOQUE_LOG=trace", "TOQUE_LOG_PATH="+logPath)
	r = e.runCmd(cmd)
	b, _ := os.ReadFile(logPath)
	if r.code != 0 || strings.Contains(r.stderr, "[DEBUG]") || !strings.Contains(string(b), "[DEBUG]") {
		t.Errorf("TOQUE_LOG_PATH: stderr %q, log file %d bytes", r.stderr, len(b))
	}
	cmd = exec.Command(toqueBin, "-chdir="+e.dir, "plan")
	cmd.Env = append(os.Environ(), "TOQUE_LOG=loud")
	if r := e.runCmd(cmd); r.code != 1 || !strings.Contains(r.stderr, "TOQUE_LOG=loud") {
		t.Errorf("a bad TOQUE_LOG: %s", r)
	}
}

// Colour is used only on a terminal, and never with -no-color or NO_COLOR.
func TestE2EColourOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	testenv.MustHave(t, testenv.Script)
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	const esc = "\x1b["
	onTTY := func(extraEnv []string, args ...string) string {
		t.Helper()
		line := shellQuoteAll(append([]string{toqueBin, "-chdir=" + e.dir}, args...))
		cmd := exec.Command("script", "-qec", line, "/dev/null")
		cmd.Env = append(append(append(os.Environ(), e.isolation()...), "TERM=xterm"), extraEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	if out := onTTY(nil, "plan"); !strings.Contains(out, esc) {
		t.Errorf("no colour on a terminal:\n%q", out)
	}
	if out := onTTY(nil, "plan", "-no-color"); strings.Contains(out, esc) {
		t.Errorf("colour despite -no-color:\n%q", out)
	}
	if out := onTTY([]string{"NO_COLOR=1"}, "plan"); strings.Contains(out, esc) {
		t.Errorf("colour despite NO_COLOR:\n%q", out)
	}
	if r := e.must(0, "plan"); strings.Contains(r.stdout, esc) {
		t.Errorf("colour on a pipe:\n%q", r.stdout)
	}
}

func shellQuoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// Planning only reads, so the first interrupt stops it at once — here in
// the middle of a guard that would take a minute — and no plan is saved.
func TestE2EInterruptStopsAPlanAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("slow.hcl", `
file "ROOT/a.conf" {
  content = "a\n"
  only_if = "touch ROOT/guard.started && sleep 60"
}
`)
	cmd := e.binCmd("-chdir="+e.dir, "plan", "-out=plan.out")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(e.root, "guard.started")); err == nil {
			break
		}
		if i > 500 {
			cmd.Process.Kill()
			t.Fatal("the guard never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 5 {
		t.Fatalf("want exit 5 (interrupted), got %v\n%s", err, stderr.String())
	}
	if waited := time.Since(start); waited > 20*time.Second {
		t.Errorf("plan took %s to stop after the interrupt", waited)
	}
	if !strings.Contains(stderr.String(), "interrupted") || strings.Count(stderr.String(), "Error:") != 1 {
		t.Errorf("want one interrupted message:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(e.dir, "plan.out")); !os.IsNotExist(err) {
		t.Error("an interrupted plan saved a plan file")
	}
}

// command.Run resolves what it is given — no -chdir, relative paths,
// relative settings — against Streams.Env.Dir, not the process's working
// directory: the in-process tests depend on it.
func TestE2EInProcessWorkingDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	vars := map[string]string{"TOQUE_STATE_DIR": "state", "TOQUE_HOST_LOCK": "run/apply.lock", "TOQUE_LOG": "debug", "TOQUE_LOG_PATH": "toque.log"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for _, args := range [][]string{{"plan", "-out=plan.out"}, {"apply", "plan.out"}} {
		var out, errb bytes.Buffer
		code := command.Run(t.Context(), make(chan struct{}), args, command.Streams{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Env: command.Env{LookupEnv: lookup, Dir: e.dir},
		})
		if code != 0 {
			t.Fatalf("toque %v: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
	}
	if e.read("a.conf") != "a\n" {
		t.Error("a.conf not written")
	}
	for _, p := range []string{"plan.out", "toque.log", "state/reports/last.json", "run/apply.lock"} {
		if _, err := os.Stat(filepath.Join(e.dir, p)); err != nil {
			t.Errorf("%s is not under Env.Dir: %v", p, err)
		}
	}
}
