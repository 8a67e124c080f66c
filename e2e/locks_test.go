package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// heldEnv marks the test binary that TestE2EHostLockHeldByARealApply runs
// in a mount namespace of its own.
const heldEnv = "TOQUE_E2E_REAL_HOST_LOCK_HELD"

// heldSuite is what runs while a real apply holds the host-wide lock:
// every script, and a Go test for each other way the harness starts
// toque — in-process with injected settings, in-process with a lookup of
// its own, the binary through runCmd and through binCmd (signalled,
// killed), the binary in an unshare'd namespace, remote_file's download
// cache.
const heldSuite = `^(TestScripts|TestE2EInProcessWorkingDirectory|TestE2EHostLockExcludesApplyWithAnotherStateDir|` +
	`TestE2EFirstInterruptIsAcknowledgedAtOnce|TestE2EKilledApplyResumesWithoutRerunningExecutes|` +
	`TestE2EPackageInstallThenNoChanges|TestE2ERemoteFile)$`

// TestE2EHostLockHeldByARealApply proves that the tests pass while a real
// toque apply holds the machine's host-wide lock — that no test's apply
// waits for, or takes, the lock a real toque on the machine takes.
//
// Taking the machine's own /run/toque/apply.lock would make a real toque
// on the machine fail, so the test makes one of its own at the same path:
// it runs the test binary again in a mount namespace of its own, where
// /run/toque is an empty tmpfs. There, a real toque apply (the built
// binary, as root, with no TOQUE_HOST_LOCK: toque's default) takes
// /run/toque/apply.lock and keeps it. A second real apply with no
// TOQUE_HOST_LOCK is refused (exit 4, naming the first): the lock is held
// where a test that fell back on toque's default would take it. Then the
// tests of heldSuite run, in that namespace, from an environment without
// TOQUE_STATE_DIR or TOQUE_HOST_LOCK (as `make test` has them): they pass
// only if every toque they start is given its own lock by the harness —
// one that used toque's default would fail with exit 4.
//
// What the namespace cannot see — a toque started with the process's
// environment instead of the harness's — TestMain's tripwire catches in
// every run, root or not: it points TOQUE_STATE_DIR and TOQUE_HOST_LOCK
// where nothing can be made.
func TestE2EHostLockHeldByARealApply(t *testing.T) {
	if os.Getenv(heldEnv) != "" {
		holdTheHostLockAndRunTheSuite(t)
		return
	}
	t.Parallel()
	testenv.MustHave(t, testenv.Root)
	cmd := exec.Command(os.Args[0], "-test.run=^TestE2EHostLockHeldByARealApply$", "-test.count=1", "-test.v")
	cmd.Env = append(withoutToqueSettings(os.Environ()), heldEnv+"=1", "TOQUE_TEST_BINARY="+toqueBin)
	// A mount namespace of its own, its mounts private (Go makes / rprivate
	// in it): nothing mounted there is seen here.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a mount namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestE2EHostLockHeldByARealApply") {
		t.Fatalf("the test did not run in the mount namespace:\n%s", out)
	}
	t.Logf("in a mount namespace of its own:\n%s", lastLines(string(out), 3))
}

// holdTheHostLockAndRunTheSuite is the test in its mount namespace.
func holdTheHostLockAndRunTheSuite(t *testing.T) {
	const lock = "/run/toque/apply.lock" // toque's default for root (command.hostLock)
	if err := mountTmpfsOnRunToque(); err != nil {
		t.Fatal(err)
	}

	// A real apply takes the lock, and keeps it until hold is removed.
	holder := newEnv(t)
	holder.write("hold", "", 0o644)
	holder.recipe("hold.hcl", `
execute "hold" {
  command = "touch ROOT/holding; while [ -e ROOT/hold ]; do sleep 0.05; done"
}
`)
	holder.must(0, "plan", "-out=plan.out")
	apply := exec.Command(toqueBin, "-chdir="+holder.dir, "apply", "plan.out")
	apply.Env = append(withoutToqueSettings(os.Environ()), "TOQUE_STATE_DIR="+holder.state, "NO_COLOR=1")
	var applyOut lockedBuffer
	apply.Stdout, apply.Stderr = &applyOut, &applyOut
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			os.Remove(filepath.Join(holder.root, "hold"))
			if err := apply.Wait(); err != nil {
				t.Errorf("the holding apply: %v\n%s", err, applyOut.String())
			}
		}
	}
	defer release()
	waitFor(t, 30*time.Second, "the real apply to hold the lock", func() bool {
		_, err := os.Stat(filepath.Join(holder.root, "holding"))
		return err == nil
	})

	// Proof that it holds the default lock: another real apply without
	// TOQUE_HOST_LOCK is refused, naming it.
	other := newEnv(t)
	other.recipe("a.hcl", `file "ROOT/a" { content = "a\n" }`)
	other.must(0, "plan", "-out=plan.out")
	cmd := exec.Command(toqueBin, "-chdir="+other.dir, "apply", "plan.out")
	cmd.Env = append(withoutToqueSettings(os.Environ()), "TOQUE_STATE_DIR="+other.state, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(string(out), lock) ||
		!strings.Contains(string(out), fmt.Sprintf("pid %d", apply.Process.Pid)) {
		t.Fatalf("an apply with toque's default lock was not refused by the holder (pid %d): %v\n%s", apply.Process.Pid, err, out)
	}

	// The suite, from an environment without toque's settings.
	suite := exec.Command(os.Args[0], "-test.run="+heldSuite, "-test.count=1", "-test.v")
	suite.Env = append(withoutToqueSettings(os.Environ()), "TOQUE_TEST_BINARY="+toqueBin)
	out, err = suite.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests failed while a real apply held %s: %v\n%s", lock, err, out)
	}
	passed := regexp.MustCompile(`(?m)^\s*--- PASS: (\S+)`).FindAllStringSubmatch(string(out), -1)
	var scripts, tests int
	for _, m := range passed {
		if strings.HasPrefix(m[1], "TestScripts/") {
			scripts++
		} else if !strings.Contains(m[1], "/") {
			tests++
		}
	}
	if scripts < 50 {
		t.Fatalf("the suite ran %d scripts: too few to prove anything\n%s", scripts, out)
	}
	t.Logf("while a real apply (pid %d) held %s, %d scripts and %d tests passed", apply.Process.Pid, lock, scripts, tests)

	release()
	if _, err := os.Stat(filepath.Join(holder.root, "holding")); err != nil {
		t.Errorf("the holding apply did not run: %v", err)
	}
}

// mountTmpfsOnRunToque puts an empty tmpfs on /run/toque, or on /run when
// the machine has no /run/toque (to make none on the machine): in the
// test's own mount namespace only.
func mountTmpfsOnRunToque() error {
	target := "/run/toque"
	if _, err := os.Stat(target); errors.Is(err, fs.ErrNotExist) {
		target = "/run"
	}
	if err := syscall.Mount("tmpfs", target, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("mount a tmpfs on %s: %w", target, err)
	}
	return os.MkdirAll("/run/toque", 0o755)
}

// withoutToqueSettings is env without the settings the harness gives each
// toque (and the tripwire TestMain sets in their place).
func withoutToqueSettings(env []string) []string {
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != "TOQUE_STATE_DIR" && k != "TOQUE_HOST_LOCK" && k != heldEnv {
			out = append(out, kv)
		}
	}
	return out
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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
