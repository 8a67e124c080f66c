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
	cmd := exec.Command(toqueBin, append([]string{"-chdir=" + e.dir}, args...)...)
	cmd.Env = append(os.Environ(), "TOQUE_STATE_DIR="+e.state, "NO_COLOR=1")
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

// A plan that fails leaves no plan at -out: the older one is removed
// first. A file at -out that is not a plan is never replaced.
func TestE2EPlanRemovesAStaleOutFile(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `file "ROOT/a" { content = "a" }`)
	e.must(0, "plan", "-out=p")
	// A syntax error: no plan at all.
	e.recipe("a.hcl", `file "ROOT/a" { content = `)
	r := e.must(1, "plan", "-out=p")
	if _, err := os.Stat(filepath.Join(e.dir, "p")); !os.IsNotExist(err) {
		t.Errorf("a failed plan left the older plan file in place (%v)\n%s", err, r)
	}
	// An evaluation error: an errored plan replaces it, which apply refuses.
	e.recipe("a.hcl", `file "ROOT/a" { content = "a" }`)
	e.must(0, "plan", "-out=p")
	e.recipe("a.hcl", `file "ROOT/a" { content = nosuchfunction() }`)
	e.must(1, "plan", "-out=p")
	if r := e.must(1, "apply", "p"); !strings.Contains(r.stderr, "errored") {
		t.Errorf("apply of an errored plan:\n%s", r)
	}

	e.recipe("a.hcl", `file "ROOT/a" { content = "a" }`)
	notes := filepath.Join(e.dir, "notes.txt")
	os.WriteFile(notes, []byte("my notes\n"), 0o644)
	r = e.must(1, "plan", "-out=notes.txt")
	if !strings.Contains(r.stderr, "is not a toque plan file; refusing to replace it") {
		t.Errorf("no refusal:\n%s", r)
	}
	if b, _ := os.ReadFile(notes); string(b) != "my notes\n" {
		t.Errorf("a file that is not a plan was replaced: %q", b)
	}
}

// The first Ctrl-C is acknowledged at once, naming the resource in hand,
// even when that resource takes long.
func TestE2EFirstInterruptIsAcknowledgedAtOnce(t *testing.T) {
	e := newEnv(t)
	e.recipe("slow.hcl", `
execute "slow" { command = "sleep 30" }
file "ROOT/after" { content = "x" }
`)
	e.must(0, "plan", "-out=plan.out")
	cmd := exec.Command(toqueBin, "-chdir="+e.dir, "apply", "plan.out")
	cmd.Env = append(os.Environ(), "TOQUE_STATE_DIR="+e.state, "NO_COLOR=1")
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

// live_stream shows a command's output as it runs, each line under its
// resource, escaped; -json has an output event per line.
func TestE2ELiveStream(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
execute "loud" {
  command     = "echo first; printf 'esc \\033[2J here\\n'; echo err >&2"
  live_stream = true
}
execute "quiet" {
  command = "echo hidden-output"
}
`)
	e.must(0, "plan", "-out=plan.out")
	r := e.must(0, "apply", "plan.out")
	for _, want := range []string{"execute[loud]: first\n", `execute[loud]: esc \x1b[2J here`, "execute[loud]: err\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "hidden-output") || strings.Contains(r.stdout, "\x1b") {
		t.Errorf("output of a command without live_stream, or a raw escape:\n%q", r.stdout)
	}
	e.must(0, "plan", "-out=plan.out")
	r = e.must(0, "apply", "-json", "plan.out")
	if !strings.Contains(r.stdout, `"type":"output"`) || !strings.Contains(r.stdout, `"line":"first"`) {
		t.Errorf("no output events:\n%s", r.stdout)
	}
}

// A bad flag is one short error, not the usage twice.
func TestE2EBadFlagIsOneError(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `file "ROOT/a" { content = "a" }`)
	r := e.must(1, "plan", "-outt=p")
	if r.stderr != "Error: plan has no option -outt. Did you mean -out? Run 'toque plan -help' for its options.\n" {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
