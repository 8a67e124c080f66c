package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// Piped input prints one value per line, with the scope a recipe has:
// the merged attributes (the command line's too), the host's facts, every
// function, and where each value came from.
func TestE2EConsolePiped(t *testing.T) {
	e := newEnv(t)
	e.recipe("web.hcl", consoleRecipe)
	e.recipe("prod.json", "{\n  \"web\": {\n    \"port\": 8080\n  },\n  \"app\": {\"token\": \"tok-secret\"}\n}\n")
	hostname, _ := os.Hostname()
	input := strings.Join([]string{
		"node.web.port",
		"node.web.upstreams",
		`upper(node.web.server)`,
		"host.hostname",
		"provenance(node.web.port)",
		`provenance("web.user").source`,
		"node.db",
		"node.app.token",
		`"${node.db.password}!"`,
		"{",
		"  a = [1,",
		"  2]",
		"}",
		"",
		":source node.web.port",
	}, "\n") + "\n"
	r := e.console(input, "-attr-file=prod.json", "-attr", "web.server=apache")
	if r.code != 0 {
		t.Fatalf("console: %s", r)
	}
	want := strings.Join([]string{
		"8080",
		`["a", "b"]`,
		`"APACHE"`,
		`"` + hostname + `"`,
		`{ level = "normal", source = "-attr-file prod.json:3" }`,
		`"web.hcl:8"`,
		`{ host = "db.internal", password = (sensitive) }`,
		`(sensitive)`,
		`(sensitive)`,
		`{ a = [1, 2] }`,
		`node.web.port = 8080  # normal, -attr-file prod.json:3`,
		`    default   web.hcl:3               80`,
		`    normal    -attr-file prod.json:3  8080`,
	}, "\n") + "\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s\n(stderr: %s)", r.stdout, want, r.stderr)
	}
	for _, secret := range []string{"hunter2-console", "tok-secret"} {
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("the console shows %q:\n%s", secret, r)
		}
	}
	// It evaluated no resource: no guard ran, nothing was run.
	for _, f := range []string{"ran", "guard-ran"} {
		if _, err := os.Stat(filepath.Join(e.root, f)); err == nil {
			t.Errorf("the console ran %s", f)
		}
	}
}

// Errors are diagnostics naming the input line; the console goes on and
// exits 1 at the end.
func TestE2EConsoleErrors(t *testing.T) {
	e := newEnv(t)
	e.recipe("web.hcl", consoleRecipe)
	r := e.console("node.web.prot\nnode.db.password + 1\n:source web.nope\n:bogus\nnode.web.port\n[1,\n", "-attr", "app.token=x")
	if r.code != 1 {
		t.Fatalf("want exit 1: %s", r)
	}
	if r.stdout != "80\n" {
		t.Errorf("stdout %q, want the one good value", r.stdout)
	}
	for _, want := range []string{
		"on <stdin>:1:9:", "Did you mean node.web.port?",
		"node.db.password has a sensitive value",
		"Attribute not set", "node.web.nope is set by no recipe",
		"the console has no command :bogus",
		"on <stdin>:6:4:",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "hunter2-console") {
		t.Errorf("a diagnostic shows the sensitive value:\n%s", r.stderr)
	}

	// Bad flags stop it before it reads anything.
	r = e.console("node.web.port\n", "-attr", "web.port")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, `-attr "web.port" has no "="`) {
		t.Errorf("console -attr web.port: %s", r)
	}
}

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
	cmd.Env = append(os.Environ(), "TOQUE_STATE_DIR="+e.state, "TERM=xterm", "NO_COLOR=1")
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
