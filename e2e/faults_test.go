package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A reader that stops early (toque plan -out=p | head) neither kills toque
// nor leaves an older plan in place: the plan file is written first, and a
// closed stdout is a normal end.
func TestE2EPlanIntoAClosedPipe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var src strings.Builder
	for i := 0; i < 400; i++ {
		// Long enough that the plan outgrows the pipe's buffer.
		fmt.Fprintf(&src, "file \"ROOT/f%03d\" { content = \"%d %s\\n\" }\n", i, i, strings.Repeat("x", 300))
	}
	e.recipe("many.hcl", src.String())
	planPath := filepath.Join(e.dir, "p")
	e.must(0, "plan", "-out=p")
	old, _ := os.ReadFile(planPath)
	e.write("f000", "changed since\n", 0o644) // the new plan differs

	if stderr := readSomeThenClose(t, e, "plan", "-out=p"); strings.Contains(stderr, "broken pipe") {
		t.Errorf("a closed stdout is reported as an error:\n%s", stderr)
	}
	now, err := os.ReadFile(planPath)
	if err != nil || bytes.Equal(now, old) {
		t.Fatalf("the plan file was not replaced by the new plan (%v)", err)
	}
	// show, like plan, ends normally when its reader has seen enough.
	for _, args := range [][]string{{"show", "p"}, {"show", "-markdown", "p"}} {
		if stderr := readSomeThenClose(t, e, args...); strings.Contains(stderr, "broken pipe") {
			t.Errorf("toque %s: a closed stdout is reported as an error:\n%s", strings.Join(args, " "), stderr)
		}
	}
}

// readSomeThenClose runs the toque binary with args, reads ten bytes of
// its stdout and closes it, as head does, and wants exit 0. It returns
// what toque wrote on stderr.
func readSomeThenClose(t *testing.T, e *env, args ...string) string {
	t.Helper()
	cmd := e.binCmd(append([]string{"-chdir=" + e.dir}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(out, buf); err != nil {
		t.Fatal(err)
	}
	out.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("toque %s into a closed pipe: %v (want exit 0)\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stderr.String()
}

// The first Ctrl-C is acknowledged at once, naming the resource in hand,
// even when that resource takes long.
func TestE2EFirstInterruptIsAcknowledgedAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("slow.hcl", `
execute "slow" { command = "sleep 30" }
file "ROOT/after" { content = "x" }
`)
	e.must(0, "plan", "-out=plan.out")
	cmd := e.binCmd("-chdir="+e.dir, "apply", "plan.out")
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, 10*time.Second, "the slow resource to start", func() bool { return strings.Contains(stdout.String(), "execute[slow]: Running") })
	cmd.Process.Signal(os.Interrupt)
	waitFor(t, 5*time.Second, "the acknowledgement", func() bool {
		return strings.Contains(stderr.String(), "Stopping after execute[slow], the resource in hand")
	})
	// The second aborts promptly; nothing after the slow resource ran.
	start := time.Now()
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 {
		t.Fatalf("want exit 5, got %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the second Ctrl-C took %s to end the run", d)
	}
	if _, err := os.Stat(filepath.Join(e.root, "after")); !os.IsNotExist(err) {
		t.Error("a resource after the interrupt ran")
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
