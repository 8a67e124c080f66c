// Package testutil holds helpers toque's tests share across packages:
// writing file trees, running git in isolation, waiting for a condition or
// for a process to be gone (polling, never a fixed sleep), and keeping
// toque's state in a scratch directory. Only tests import it. Whether a test can run here at all is
// internal/testenv's business.
package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// WriteFiles writes files (path relative to dir → content) under dir,
// creating directories as needed.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// IsolateGit gives git — the test's and any process it starts — a
// temporary HOME, no system or global configuration, a fixed identity and
// fixed dates, so tests never depend on the machine's git set-up. It
// returns the temporary HOME. Without git the test skips (testenv).
func IsolateGit(t testing.TB) string {
	t.Helper()
	testenv.MustHave(t, testenv.Git)
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   "/dev/null",
		"GIT_AUTHOR_NAME":     "Test Author",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_COMMITTER_NAME":  "Test Committer",
		"GIT_COMMITTER_EMAIL": "committer@example.com",
		"GIT_AUTHOR_DATE":     "2024-01-02T03:04:05Z",
		"GIT_COMMITTER_DATE":  "2024-01-02T03:04:05Z",
		"GIT_TERMINAL_PROMPT": "0",
	} {
		t.Setenv(k, v)
	}
	return home
}

// Git runs git with args in dir and returns its trimmed output, failing
// the test when git fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	testenv.MustHave(t, testenv.Git)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Gone reports whether process pid has exited; a zombie counts, since it
// runs no more.
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// WaitGone polls until process pid is gone, and fails the test (killing
// the process) if it is still running after a few seconds. Tests use it
// rather than a fixed sleep: to prove that a process was killed before it
// could leave a marker, wait for the process, then look for the marker.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !Gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Await polls cond every few milliseconds until it holds, and reports
// whether it did within timeout. Tests wait for what they need this way
// rather than for a fixed time: as soon as it is there, and not forever.
func Await(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// WaitFor is Await that fails the test, saying what it waited for, when
// cond does not hold within timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Await(timeout, cond) {
		t.Fatalf("gave up after %s waiting for %s", timeout, what)
	}
}

// Exists reports whether path exists: a cond for Await and WaitFor.
func Exists(path string) func() bool {
	return func() bool {
		_, err := os.Lstat(path)
		return err == nil
	}
}

// ReadPid reads the process id a test's script wrote to file.
func ReadPid(t testing.TB, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the script wrote no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
