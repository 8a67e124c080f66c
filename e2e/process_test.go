package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
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
	defer cmd.Process.Kill()
	waitFor(t, 30*time.Second, "the guard to start", func() bool {
		_, err := os.Stat(filepath.Join(e.root, "guard.started"))
		return err == nil
	})
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

// complete runs the binary as a completing shell does (complete -C:
// COMP_LINE set, the command name and words as arguments) in dir.
func (e *env) complete(dir, line string) []string {
	e.t.Helper()
	cmd := exec.Command(toqueBin, "toque", "", "")
	cmd.Dir = dir
	cmd.Env = []string{"COMP_LINE=" + line, "COMP_POINT=" + strconv.Itoa(len(line))}
	r := e.runCmd(cmd)
	if r.code != 0 {
		e.t.Fatalf("completing %q: %s", line, r)
	}
	got := strings.Fields(r.stdout)
	sort.Strings(got)
	return got
}

// Completion offers commands, each command's own flags, plan files for
// apply and show, and directories for -chdir (in whose directory file
// arguments then complete).
func TestE2ECompletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("web.hcl", `file "ROOT/x" { content = "x" }`)
	e.must(0, "plan", "-out=saved.plan")
	e.recipe("notes.txt", "not a plan")
	if err := os.Mkdir(filepath.Join(e.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Dir(e.dir)

	cases := []struct {
		dir, line string
		want      []string
	}{
		{base, "toque ", []string{"apply", "console", "export", "fleet", "fmt", "graph", "install", "keygen", "plan", "show", "update", "validate", "version"}},
		// fleet's subcommands complete one word at a time; fleet agent
		// (run by toque fleet on the hosts) is not offered.
		{base, "toque fleet ", []string{"apply", "hosts", "plan", "show"}},
		{base, "toque fleet plan -li", []string{"-limit"}},
		{base, "toque -", []string{"-chdir", "-help", "-install-autocomplete", "-uninstall-autocomplete", "-version"}},
		{base, "toque -chdir=re", []string{"recipes/", "recipes/sub/"}},
		{base, "toque -chdir=recipes con", []string{"console"}},
		{base, "toque plan -attr", []string{"-attr", "-attr-file"}},
		{base, "toque apply -a", []string{"-attr", "-attr-file", "-auto-approve"}},
		{e.dir, "toque apply ", []string{"./", "saved.plan", "sub/"}},
		{e.dir, "toque show s", []string{"saved.plan", "sub/"}},
		{base, "toque -chdir=recipes apply ", []string{"./", "saved.plan", "sub/"}},
		{base, "toque -chdir recipes show sa", []string{"saved.plan"}},
		{e.dir, "toque plan -attr-file n", []string{"notes.txt"}},
	}
	for _, tc := range cases {
		got := e.complete(tc.dir, tc.line)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

// -install-autocomplete writes what hashicorp/cli's installer writes, in
// the files of $HOME (a temporary one here: never the machine's), once;
// -uninstall-autocomplete takes it out again and leaves the rest.
func TestE2EInstallAutocomplete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := t.TempDir()
	config := filepath.Join(home, "config")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + config}
	write := func(rel, content string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The binary: what the shells will run is the executable's path.
	toque := func(want int, args ...string) result {
		t.Helper()
		cmd := exec.Command(toqueBin, args...)
		cmd.Env = env
		r := e.runCmd(cmd)
		if r.code != want {
			t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
		}
		return r
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(home, rel))
		if err != nil {
			return "(missing)"
		}
		return string(b)
	}

	// No shell configuration at all: nothing to install into.
	r := toque(1, "-install-autocomplete")
	if !strings.Contains(r.stderr, "No shell configuration found") {
		t.Errorf("without rc files: %s", r)
	}
	// ... and nothing to remove from: that is no error.
	if r := toque(0, "-uninstall-autocomplete"); !strings.Contains(r.stdout, "Completion is not installed") {
		t.Errorf("uninstall without rc files: %s", r)
	}

	write("dotfiles/bashrc", "export A=1\n")
	if err := os.Symlink(filepath.Join(home, "dotfiles/bashrc"), filepath.Join(home, ".bashrc")); err != nil {
		t.Fatal(err)
	}
	write(".zshrc", "setopt nocorrect")
	if err := os.MkdirAll(filepath.Join(config, "fish"), 0o755); err != nil {
		t.Fatal(err)
	}

	r = toque(0, "-install-autocomplete")
	for _, want := range []string{"Installed completion for bash in " + filepath.Join(home, ".bashrc"), "for zsh", "for fish"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("install does not say %q: %s", want, r)
		}
	}
	bashrc := read(".bashrc")
	if want := "export A=1\n\ncomplete -C " + toqueBin + " toque\n"; bashrc != want {
		t.Errorf(".bashrc = %q, want %q", bashrc, want)
	}
	if fi, err := os.Lstat(filepath.Join(home, ".bashrc")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf(".bashrc is no longer a link: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(home, "dotfiles/bashrc")); fi.Mode().Perm() != 0o600 {
		t.Errorf("bashrc mode %v, want 0600 kept", fi.Mode().Perm())
	}
	if want := "setopt nocorrect\n\nautoload -U +X bashcompinit && bashcompinit\ncomplete -o nospace -C " + toqueBin + " toque\n"; read(".zshrc") != want {
		t.Errorf(".zshrc = %q, want %q", read(".zshrc"), want)
	}
	if fish := read("config/fish/completions/toque.fish"); !strings.Contains(fish, "__complete_toque") || !strings.Contains(fish, toqueBin) {
		t.Errorf("toque.fish = %q", fish)
	}

	// Again: nothing changes.
	r = toque(0, "-install-autocomplete")
	if !strings.Contains(r.stdout, "Completion for bash is installed already") || read(".bashrc") != bashrc {
		t.Errorf("a second install: %s\n.bashrc = %q", r, read(".bashrc"))
	}

	r = toque(0, "-uninstall-autocomplete")
	if !strings.Contains(r.stdout, "Removed completion for bash") {
		t.Errorf("uninstall: %s", r)
	}
	if got := read(".bashrc"); got != "export A=1\n" {
		t.Errorf(".bashrc after uninstall = %q", got)
	}
	if got := read(".zshrc"); strings.Contains(got, "complete -o nospace") || !strings.HasPrefix(got, "setopt nocorrect\n") {
		t.Errorf(".zshrc after uninstall = %q", got)
	}
	if got := read("config/fish/completions/toque.fish"); got != "(missing)" {
		t.Errorf("toque.fish after uninstall = %q", got)
	}
	toque(1, "-install-autocomplete", "plan")
}
