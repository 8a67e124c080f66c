package apply

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testutil"
)

// lockHolderEnv makes the test binary act as another toque apply holding the
// lock in the state directory the variable names.
const lockHolderEnv = "TOQUE_APPLY_TEST_HOLD_LOCK"

// hostLockHolderEnv makes the test binary act as another toque apply, with
// state directory holderStateDir, holding the host-wide lock file the
// variable names.
const hostLockHolderEnv = "TOQUE_APPLY_TEST_HOLD_HOST_LOCK"

const holderStateDir = "/holder/state"

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHolderEnv); dir != "" {
		os.Exit(holdLock(func() (*applyLock, error) { return lockIn(dir, "sha256:holder", time.Now) }))
	}
	if path := os.Getenv(hostLockHolderEnv); path != "" {
		os.Exit(holdLock(func() (*applyLock, error) {
			sd, err := OpenStateDir(filepath.Dir(path))
			if err != nil {
				return nil, err
			}
			defer sd.Close()
			return acquireLock(context.Background(), sd, filepath.Base(path), lockRequest{now: time.Now, stateDir: holderStateDir, hostWide: true})
		}))
	}
	// The tests give every Applier a state directory and host-wide lock of
	// their own; the variables cover what reads them from the environment
	// (remote_file's download cache), so nothing reaches the machine's.
	os.Exit(testutil.IsolateToqueState(m))
}

// holdLock takes a lock with take, says "locked" on stdout, and holds the
// lock until stdin is closed.
func holdLock(take func() (*applyLock, error)) int {
	l, err := take()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	l.release()
	return 0
}

// lockIn takes the apply lock of the state directory dir at once.
func lockIn(dir, digest string, now func() time.Time) (*applyLock, error) {
	sd, err := OpenStateDir(dir)
	if err != nil {
		return nil, err
	}
	defer sd.Close()
	return acquireLock(context.Background(), sd, LockFileName, lockRequest{now: now, digest: digest, stateDir: sd.Path()})
}

// startHolder runs another process holding the lock in stateDir; closing the
// returned writer releases it.
func startHolder(t *testing.T, stateDir string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	return startLockHolder(t, lockHolderEnv+"="+stateDir)
}

// startHostHolder runs another process holding the host-wide lock file
// path.
func startHostHolder(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd, _ := startLockHolder(t, hostLockHolderEnv+"="+path)
	return cmd
}

func startLockHolder(t *testing.T, env string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("lock holder said %q, %v", line, err)
	}
	return cmd, stdin
}

func TestLockHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	a, h := newApplier(t, testRegistry())
	f := filepath.Join(dir, "f")
	p := makePlan(t, a.Registry, tfile(f, "x"))
	holder, _ := startHolder(t, a.StateDir)

	start := time.Now()
	rep, err := a.Apply(context.Background(), p)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a held lock did not fail fast: %v", d)
	}
	var le *LockHeldError
	if !errors.As(err, &le) {
		t.Fatalf("Apply error %v, want *LockHeldError", err)
	}
	if le.PID != holder.Process.Pid || le.User == "" || le.Since.IsZero() || le.Path != filepath.Join(a.StateDir, LockFileName) {
		t.Errorf("lock error %+v, want pid %d", le, holder.Process.Pid)
	}
	if want := fmt.Sprintf("another toque apply holds the lock: pid %d (user %s) since ", holder.Process.Pid, le.User); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want prefix %q", err, want)
	}
	if rep != nil || len(h.Events()) != 0 {
		t.Error("something ran without the lock")
	}
	mustNotExist(t, f)
}

func TestLockTimeout(t *testing.T) {
	cases := []struct {
		name        string
		timeout     time.Duration
		releaseFter time.Duration // 0: never released during the test
		wantHeld    bool
	}{
		{"released while waiting", 5 * time.Second, 300 * time.Millisecond, false},
		{"still held at the deadline", 250 * time.Millisecond, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, _ := newApplier(t, testRegistry())
			a.LockTimeout = tc.timeout
			f := filepath.Join(dir, "f")
			p := makePlan(t, a.Registry, tfile(f, "x"))
			_, release := startHolder(t, a.StateDir)
			if tc.releaseFter > 0 {
				time.AfterFunc(tc.releaseFter, func() { release.Close() })
			}

			start := time.Now()
			_, err := a.Apply(context.Background(), p)
			waited := time.Since(start)
			if tc.wantHeld {
				var le *LockHeldError
				if !errors.As(err, &le) {
					t.Fatalf("Apply error %v, want *LockHeldError", err)
				}
				if waited < tc.timeout || le.Waited < tc.timeout || !strings.Contains(err.Error(), "gave up after waiting") {
					t.Errorf("gave up after %v (error says %v): %v", waited, le.Waited, err)
				}
				mustNotExist(t, f)
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if waited < tc.releaseFter-50*time.Millisecond {
				t.Errorf("did not wait for the lock: %v", waited)
			}
			if got := readFile(t, f); got != "x" {
				t.Errorf("content %q", got)
			}
		})
	}
}

func TestLockFileOfDeadProcessDoesNotBlock(t *testing.T) {
	a, _ := newApplier(t, testRegistry())
	if err := os.MkdirAll(a.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A record left behind by a process that died holding the lock: the
	// kernel released its flock.
	stale := `{"pid": 999999, "user": "ghost", "hostname": "x", "since": "2020-01-01T00:00:00Z"}`
	if err := os.WriteFile(filepath.Join(a.StateDir, LockFileName), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	p := makePlan(t, a.Registry, tfile(filepath.Join(t.TempDir(), "f"), "x"))
	if _, err := a.Apply(context.Background(), p); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func TestLockRecordsHolderAndReleases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	since := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	l, err := lockIn(dir, "sha256:abc", func() time.Time { return since })
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, %v", fi.Mode().Perm(), err)
	}
	path := filepath.Join(dir, LockFileName)
	var h lockHolder
	if err := json.Unmarshal([]byte(readFile(t, path)), &h); err != nil {
		t.Fatal(err)
	}
	if h.PID != os.Getpid() || h.Since != "2025-01-02T03:04:05Z" || h.PlanDigest != "sha256:abc" || h.User == "" || h.StateDir != dir {
		t.Errorf("holder record %+v", h)
	}
	// A second open file description in this process conflicts too.
	if _, err := lockIn(dir, "", time.Now); err == nil {
		t.Fatal("the lock was taken twice")
	} else if le := (*LockHeldError)(nil); !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Errorf("second lock: %v", err)
	}
	l.release()
	l2, err := lockIn(dir, "", time.Now)
	if err != nil {
		t.Fatalf("lock not released: %v", err)
	}
	l2.release()
	if got := readFile(t, path); got != "" {
		t.Errorf("released lock file still holds %q", got)
	}
}

func TestLockWaitStopsOnStop(t *testing.T) {
	a, _ := newApplier(t, testRegistry())
	a.LockTimeout = 10 * time.Second
	stop := make(chan struct{})
	a.Stop = stop
	p := makePlan(t, a.Registry, tfile(filepath.Join(t.TempDir(), "f"), "x"))
	startHolder(t, a.StateDir)
	time.AfterFunc(100*time.Millisecond, func() { close(stop) })
	start := time.Now()
	_, err := a.Apply(context.Background(), p)
	var ie *InterruptedError
	if !errors.As(err, &ie) || ie.NotStarted != 1 {
		t.Fatalf("Apply error %v, want *InterruptedError", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stop while waiting for the lock took %v", d)
	}
}
