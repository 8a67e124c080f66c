package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// console runs toque console (in-process) in the recipe dir with input
// piped in.
func (e *env) console(input string, args ...string) result {
	e.t.Helper()
	return e.inProcess(strings.NewReader(input), nil, append([]string{"-chdir=" + e.dir, "console"}, args...)...)
}

const consoleRecipe = `
default "web" {
  port      = 80
  upstreams = ["a", "b"]
  server    = "nginx"
}
override "web" {
  user = "www"
}
default "db" {
  password = sensitive("hunter2-console")
  host     = "db.internal"
}
file "ROOT/app.conf" {
  content = "${node.web.port} ${node.db.password} ${node.app.token}"
}
file "ROOT/token" {
  content   = node.app.token
  sensitive = true
}
execute "never" {
  command = "touch ROOT/ran"
  only_if = "touch ROOT/guard-ran"
}
`

// TestE2EConsoleLineEditing: at a terminal, the console reads lines with
// editing and history — the up arrow recalls the last line, the left and
// right arrows move in the line — and leaves on exit.
func TestE2EConsoleLineEditing(t *testing.T) {
	t.Parallel()
	testenv.MustHave(t, testenv.Script)
	e := newEnv(t)
	e.recipe("attrs.hcl", consoleRecipe)
	line := shellQuoteAll([]string{toqueBin, "-chdir=" + e.dir, "console"})
	cmd := exec.Command("script", "-qec", line, "/dev/null")
	cmd.Env = append(append(os.Environ(), e.defaults()...), "TERM=xterm")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Each line is typed once the console prompts for it (the n-th "> ").
	prompts := 0
	typeLine := func(keys string) {
		t.Helper()
		prompts++
		waitFor(t, 30*time.Second, fmt.Sprintf("prompt %d", prompts), func() bool { return strings.Count(out.String(), "> ") >= prompts })
		if _, err := io.WriteString(stdin, keys); err != nil {
			t.Fatal(err)
		}
	}
	const up, left, right = "\x1b[A", "\x1b[D", "\x1b[C"
	typeLine("node.web.port + 1\r")
	typeLine(up + "\r")                                      // the same line again
	typeLine(`upper("ac` + left + "b" + right + `")` + "\r") // upper("abc")
	typeLine("exit\r")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%q", err, out.String())
	}
	got := out.String()
	if n := strings.Count(got, "\r\n81\r\n"); n != 2 {
		t.Errorf("node.web.port + 1 evaluated %d times, want 2 (the second from the history):\n%q", n, got)
	}
	if !strings.Contains(got, `"ABC"`) {
		t.Errorf("the edited line was not upper(\"abc\"):\n%q", got)
	}
}
