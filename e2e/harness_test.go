package e2e

// The harness of the end-to-end tests, and what every test file uses.
//
// The scenarios — plan, apply, plan again, and what toque prints on the
// way — are scripts: testdata/scripts/*.txtar, run by TestScripts
// (scripts_test.go), their output scrubbed (scrub_test.go) and compared
// with golden files; hostns_test.go makes the host namespaces scripts and
// Go tests change accounts in. The Go tests are what only Go can express,
// by concern: a real process (signals, terminals, closed pipes,
// completion: process_test.go), locks held by another process
// (locks_test.go), killing apply (crash_test.go, journal_test.go), plan
// files edited or signed (trust_test.go), files raced and read
// (files_test.go), timeouts (timeouts_test.go), machine output that holds
// the digest (output_test.go), other users (privilege_test.go,
// statedir_test.go), policies from servers and links (policy_test.go),
// packages, services, cron and the CI example in their namespaces and
// containers, and the hardening example on a fresh Debian 12 booted in a
// container (hardening_test.go).
//
// Every toque a test starts gets the test's own state directory and
// host-wide lock; TestMain makes anything else fail (tripwire), and as
// root runs every test while a real apply holds toque's default lock, in
// a mount namespace of their own (locks_test.go).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
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
	if os.Geteuid() == 0 && os.Getenv(heldEnv) == "" {
		// As root, the tests run while a real apply holds toque's default
		// host-wide lock (locks_test.go), in a mount namespace of their own.
		if code, ok := runWhileTheHostLockIsHeld(); ok {
			return code
		}
	}
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
	// Under -race, a program waits a second as it exits, for races still
	// to be reported; each `exec toque` of a script is this test binary.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=10")
	}
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
	if os.Getenv(heldEnv) != "" {
		release, err := holdTheHostLock()
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: holding the host-wide lock:", err)
			return 1
		}
		code := s.m.Run()
		if err := release(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: the apply that held the host-wide lock:", err)
			return 1
		}
		return code
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

// Most Go tests run toque in-process: command.Run, as main calls it, with
// the test's own streams and toque's settings (TOQUE_STATE_DIR, NO_COLOR…)
// injected, so such tests can run side by side. What only a process can
// show — signals, a closed stdout, a terminal, a child's environment —
// runs the built binary (bin, binCmd, runCmd). The scripts run toque as a
// process of its own, the test binary (toqueMain).

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

// lockedBuffer is a bytes.Buffer safe to read while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// flat is s with every run of white space made one space: diagnostics are
// wrapped.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// contains fails the test for each of wants that s (what) lacks.
func contains(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// lastEvent decodes the last line of an apply -json stream.
func lastEvent(t *testing.T, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var ev map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil {
		t.Fatalf("last event: %v\n%s", err, stdout)
	}
	return ev
}

// nobodyIDs is the uid and gid of nobody; the test is skipped unless it
// runs as root, as only root can give a directory to another user.
func nobodyIDs(t *testing.T) (int, int) {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Nobody)
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

// mkdir makes dir and its parents, then gives dir mode.
func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

// readEvents parses apply -json's stdout, failing on a line that is not a
// JSON object.
func readEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("stdout line is not a JSON object: %q (%v)\n%s", sc.Text(), err, out)
		}
		evs = append(evs, ev)
	}
	return evs
}

// eventTypes is the events' types, in order, separated by spaces.
func eventTypes(evs []map[string]any) string {
	var s []string
	for _, ev := range evs {
		s = append(s, ev["type"].(string))
	}
	return strings.Join(s, " ")
}

// writableByAll makes a directory any user can write, outside the test's
// private temporary directory (which other users cannot enter).
func writableByAll(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "toque-e2e-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
