package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// The host-wide lock held by a real apply while the tests run.
//
// What must hold: no test takes, or waits for, the host-wide lock a real
// toque on the machine takes — so that the tests pass while one runs,
// and never make it fail. What proves it best is to run the tests while a
// real apply holds that lock, every time they run as root, rather than a
// test that samples a few of them.
//
// Holding the machine's own /run/toque/apply.lock would make a real toque
// on the machine fail, so the suite makes its own at that path: TestMain
// runs the test binary again in a mount namespace of its own, where
// /run/toque is an empty tmpfs (runWhileTheHostLockIsHeld). There a real
// toque apply — the built binary, as root, with no TOQUE_HOST_LOCK:
// toque's default — takes /run/toque/apply.lock and keeps it until the
// tests have ended (holdTheHostLock); TestE2EHostLockIsHeldByARealApply
// checks that it does. A test whose toque fell back on the default lock
// would fail with "Another toque apply holds the host-wide lock" (exit 4);
// and nothing a test does reaches the machine's /run/toque.
//
// What the namespace cannot show — a toque started with the process's
// environment instead of the harness's — the tripwire shows in every run,
// root or not (TestMain). Not as root (make test-nonroot), a user's
// default lock is under their runtime directory, never the machine's.

// heldEnv marks the test binary run in the namespace; holderEnv holds
// the process id of the apply that holds the lock there.
const (
	heldEnv   = "TOQUE_E2E_HOST_LOCK_HELD"
	holderEnv = "TOQUE_E2E_HOST_LOCK_HOLDER"
)

// defaultHostLock is toque's host-wide lock for root when TOQUE_HOST_LOCK
// is not set (command.hostLock).
const defaultHostLock = "/run/toque/apply.lock"

// runWhileTheHostLockIsHeld runs the test binary again, with the same
// arguments, in a mount namespace of its own, and returns its exit
// status. ok is false when no namespace could be made: the tests then run
// here, without the held lock, unless CI's strict tier promises one.
func runWhileTheHostLockIsHeld() (code int, ok bool) {
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), heldEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Go makes the new namespace's mounts private: nothing mounted there
	// is seen here.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if v := os.Getenv(testenv.StrictEnv); v != "" && v != "0" {
			fmt.Fprintf(os.Stderr, "e2e: cannot make a mount namespace to hold the host-wide lock in (%v); %s=%s promises one as root\n", err, testenv.StrictEnv, v)
			return 1, true
		}
		fmt.Fprintf(os.Stderr, "e2e: the tests run without a real apply holding the host-wide lock: cannot make a mount namespace (%v)\n", err)
		return 0, false
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT)
	go func() {
		for sig := range sigs { // go test's timeout sends SIGQUIT for a stack dump
			cmd.Process.Signal(sig)
		}
	}()
	err := cmd.Wait()
	signal.Stop(sigs)
	if ee, isExit := err.(*exec.ExitError); isExit {
		if ws, _ := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
			return 128 + int(ws.Signal()), true
		}
		return ee.ExitCode(), true
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1, true
	}
	return 0, true
}

// holdTheHostLock, in the namespace, gives /run/toque a tmpfs of its own
// and starts a real apply that takes its lock and keeps it until release.
func holdTheHostLock() (release func() error, err error) {
	if err := mountRunToque(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toque-e2e-holder-")
	if err != nil {
		return nil, err
	}
	hold, holding := filepath.Join(dir, "hold"), filepath.Join(dir, "holding")
	recipe := fmt.Sprintf("execute \"hold\" {\n  command = \"touch %s; while [ -e %s ]; do sleep 0.2; done\"\n}\n", holding, hold)
	for name, content := range map[string]string{"hold": "", "hold.hcl": recipe} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	// The process's environment holds the tripwire: the holder gets
	// toque's default lock, and a state directory of its own.
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "TOQUE_HOST_LOCK" && k != "TOQUE_STATE_DIR" {
			env = append(env, kv)
		}
	}
	env = append(env, "TOQUE_STATE_DIR="+filepath.Join(dir, "state"), "NO_COLOR=1")
	plan := exec.Command(toqueBin, "-chdir="+dir, "plan", "-out=plan.out")
	plan.Env = env
	if out, err := plan.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("toque plan: %v\n%s", err, out)
	}
	apply := exec.Command(toqueBin, "-chdir="+dir, "apply", "plan.out")
	apply.Env = env
	var out lockedBuffer
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- apply.Wait() }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(holding); err == nil {
			break
		}
		select {
		case err := <-exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("toque apply ended before it held the lock: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			apply.Process.Kill()
			return nil, fmt.Errorf("toque apply did not reach its command in 60 s\n%s", out.String())
		}
	}
	os.Setenv(holderEnv, strconv.Itoa(apply.Process.Pid))
	return func() error {
		defer os.RemoveAll(dir)
		os.Remove(hold)
		if err := <-exited; err != nil {
			return fmt.Errorf("%v\n%s", err, out.String())
		}
		return nil
	}, nil
}

// mountRunToque mounts an empty tmpfs on /run/toque; where the machine has
// no /run/toque, it first puts an overlay on /run, so that making the
// mount point changes nothing of the machine's /run.
func mountRunToque() error {
	if _, err := os.Stat("/run/toque"); errors.Is(err, fs.ErrNotExist) {
		layers, err := os.MkdirTemp("", "toque-e2e-run-")
		if err != nil {
			return err
		}
		upper, work := filepath.Join(layers, "upper"), filepath.Join(layers, "work")
		for _, d := range []string{upper, work} {
			if err := os.Mkdir(d, 0o755); err != nil {
				return err
			}
		}
		if err := syscall.Mount("overlay", "/run", "overlay", 0, "lowerdir=/run,upperdir="+upper+",workdir="+work); err != nil {
			return fmt.Errorf("mount an overlay on /run: %w", err)
		}
		if err := os.Mkdir("/run/toque", 0o755); err != nil {
			return err
		}
	}
	if err := syscall.Mount("tmpfs", "/run/toque", "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("mount a tmpfs on /run/toque: %w", err)
	}
	return nil
}

// TestE2EHostLockIsHeldByARealApply: as root, every test runs while a real
// toque apply holds toque's default host-wide lock (see above): another
// real apply with the default lock is refused, naming it.
func TestE2EHostLockIsHeldByARealApply(t *testing.T) {
	t.Parallel()
	testenv.MustHave(t, testenv.Root, testenv.Unshare)
	holder := os.Getenv(holderEnv)
	if holder == "" {
		t.Fatal("no real apply holds the host-wide lock: TestMain could not make a mount namespace here, which root with unshare can (its log says why)")
	}
	e := newEnv(t)
	e.recipe("a.hcl", `file "ROOT/a" { content = "a\n" }`)
	e.must(0, "plan", "-out=plan.out")
	cmd := exec.Command(toqueBin, "-chdir="+e.dir, "apply", "plan.out")
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "TOQUE_HOST_LOCK" && k != "TOQUE_STATE_DIR" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TOQUE_STATE_DIR="+e.state, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(string(out), defaultHostLock) || !strings.Contains(string(out), "pid "+holder) {
		t.Fatalf("an apply with toque's default lock was not refused by the apply that holds it (pid %s): %v\n%s", holder, err, out)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a")); err == nil {
		t.Error("the refused apply changed the host")
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

func TestE2EHostLockExcludesApplyWithAnotherStateDir(t *testing.T) {
	t.Parallel()
	first := newEnv(t)
	cmd, out, firstErr := first.startLongApply()

	second := newEnv(t)
	second.hostLock = first.hostLock // one host
	second.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	second.must(0, "plan", "-out=plan.out")
	r := second.run("apply", "plan.out")
	j := second.run("apply", "-json", "plan.out")
	go io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("first apply: %v\n%s", err, firstErr)
	}

	if r.code != 4 {
		t.Fatalf("an apply with another state directory ran beside the first: want exit 4, got %s", r)
	}
	for _, want := range []string{"host-wide lock", fmt.Sprintf("pid %d", cmd.Process.Pid), first.state, first.hostLock} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(second.root, "a.conf")); !os.IsNotExist(err) {
		t.Error("the second apply changed the host")
	}
	ev := lastEvent(t, j.stdout)
	holder, _ := ev["lock_holder"].(map[string]any)
	if j.code != 4 || ev["error_kind"] != "lock_held" || holder["host_wide"] != true || holder["pid"] != float64(cmd.Process.Pid) || holder["state_dir"] != first.state {
		t.Errorf("JSON: exit %d, error event %v", j.code, ev)
	}

	// Once the first is done, the second runs.
	second.must(0, "apply", "plan.out")
}
