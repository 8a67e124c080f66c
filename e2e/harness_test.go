package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/command"
	"github.com/toquehq/toque/internal/testenv"
)

// toqueBin is the binary built once for every end-to-end test, or the
// one TOQUE_TEST_BINARY names (make test-nonroot builds it beforehand: the
// user it runs the tests as cannot use the caller's Go caches).
var toqueBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toque-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Every apply takes the host-wide lock: keep it in the scratch dir, never
	// the machine's /run/toque. (The harness gives each test a lock of its
	// own, so that parallel tests do not wait for each other; this one is
	// for the commands a test starts with the process's environment.)
	os.Setenv("TOQUE_HOST_LOCK", filepath.Join(dir, "run", "apply.lock"))
	if bin := os.Getenv("TOQUE_TEST_BINARY"); bin != "" {
		if !filepath.IsAbs(bin) {
			fmt.Fprintf(os.Stderr, "TOQUE_TEST_BINARY=%s: want an absolute path\n", bin)
			os.Exit(1)
		}
		toqueBin = bin
	} else {
		toqueBin = filepath.Join(dir, "toque")
		cmd := exec.Command("go", "build", "-o", toqueBin, "..")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building toque:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
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

// Most tests run toque in-process: command.Run, as main calls it, with the
// test's own streams and toque's settings (TOQUE_STATE_DIR, NO_COLOR…)
// injected, so such tests can run side by side. What only a process can
// show — signals, a closed stdout, exit statuses, TOQUE_LOG on the real
// stderr, a terminal, the README's commands — runs the built binary (bin,
// runCmd).

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

// defaults are the harness's settings for toque, as NAME=VALUE.
func (e *env) defaults() []string {
	return []string{"TOQUE_STATE_DIR=" + e.state, "TOQUE_HOST_LOCK=" + e.hostLock, "NO_COLOR=1"}
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

const siteRecipe = `
default "site" {
  greeting = "hello"
}

directory "www" {
  path = "ROOT/www"
  mode = "0755"
}

file "ROOT/www/index.html" {
  content = "<h1>${node.site.greeting}</h1>\n"
  mode    = "0644"
}

link "ROOT/current" {
  to = "ROOT/www"
}
`

// The README's workflow, on the binary: its exit statuses as a process.
func TestE2ECreateFromNothingThenNoChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("site.hcl", siteRecipe)

	r := e.mustBin(2, "plan", "-detailed-exitcode", "-out=plan.out")
	for _, want := range []string{
		`+ directory "www"`,
		`+ file "` + e.root + `/www/index.html"`,
		`Plan: 3 to create, 0 to update, 0 to delete`,
		"Plan digest: sha256:",
		"toque apply plan.out",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, r.stdout)
		}
	}
	st, err := os.Stat(filepath.Join(e.dir, "plan.out"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("plan file mode = %o, want 0600", st.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(e.root, "www")); !os.IsNotExist(err) {
		t.Fatal("plan changed the host")
	}

	e.mustBin(0, "show", "plan.out")
	r = e.mustBin(0, "apply", "plan.out")
	if !strings.Contains(r.stdout, "Apply complete!") {
		t.Errorf("apply output:\n%s", r.stdout)
	}
	if got := e.read("www/index.html"); got != "<h1>hello</h1>\n" {
		t.Errorf("index.html = %q", got)
	}
	if m := e.mode("www/index.html"); m != 0o644 {
		t.Errorf("mode = %o", m)
	}
	if l, err := os.Readlink(filepath.Join(e.root, "current")); err != nil || l != filepath.Join(e.root, "www") {
		t.Errorf("link = %q, %v", l, err)
	}
	reports, _ := filepath.Glob(filepath.Join(e.state, "reports", "*.json"))
	if len(reports) == 0 {
		t.Error("apply wrote no report in the state directory")
	}

	r = e.mustBin(0, "plan", "-detailed-exitcode")
	if !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
}

// TestE2EDigestOnlyWhereItNamesSomething: the text of a plan shows its
// digest when the plan is saved, or about to be applied; a plan printed
// and thrown away has none (its salt and time are new on every run, so
// nothing could ever carry it), and is not encoded for it.
func TestE2EDigestOnlyWhereItNamesSomething(t *testing.T) {
	e := newEnv(t)
	e.recipe("site.hcl", `file "ROOT/motd" { content = "hi\n" }`)

	if r := e.must(0, "plan"); strings.Contains(r.stdout, "Plan digest") || !strings.Contains(r.stdout, "1 to create") {
		t.Errorf("unsaved plan:\n%s", r.stdout)
	}
	r := e.must(0, "plan", "-out=plan.out")
	saved := digestLine.FindStringSubmatch(r.stdout)
	if saved == nil {
		t.Fatalf("saved plan shows no digest:\n%s", r.stdout)
	}
	if show := e.must(0, "show", "plan.out"); !strings.Contains(show.stdout, "Plan digest: "+saved[1]) {
		t.Errorf("show does not print the saved plan's digest %s:\n%s", saved[1], show.stdout)
	}
	for _, args := range [][]string{{"plan", "-json"}, {"plan", "-markdown"}} {
		if r := e.must(0, args...); !strings.Contains(r.stdout, "sha256:") {
			t.Errorf("%v: the format carries a digest, but none is there:\n%s", args, r.stdout)
		}
	}
	r = e.must(0, "apply", "-auto-approve")
	if m := digestLine.FindStringSubmatch(r.stdout); m == nil || !strings.Contains(r.stdout, "Apply complete!") {
		t.Errorf("apply without a plan file shows no digest of the plan it applies:\n%s", r.stdout)
	}
	r = e.must(0, "apply", "-auto-approve")
	if strings.Contains(r.stdout, "Plan digest") || !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("apply with nothing to do shows a digest of a plan it does not apply:\n%s", r.stdout)
	}
}

func TestE2EUnsetModeIsLeftAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("motd", "old\n", 0o604) // readable by others: the diff is shown
	e.recipe("motd.hcl", `file "ROOT/motd" { content = "new\n" }`)

	r := e.must(2, "plan", "-detailed-exitcode", "-out=plan.out")
	for _, want := range []string{"-old", "+new", "mode: not set in the recipe, left as it is", "0604"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	e.must(0, "apply", "plan.out")
	if got := e.read("motd"); got != "new\n" {
		t.Errorf("content = %q", got)
	}
	if m := e.mode("motd"); m != 0o604 {
		t.Errorf("mode changed to %o; an unset mode must be left alone", m)
	}
	backups, _ := filepath.Glob(filepath.Join(e.state, "backup", "*"))
	if len(backups) != 1 {
		t.Errorf("want 1 backup of the replaced file, got %v", backups)
	}
}

func TestE2EStalePlanIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.conf", "a-old\n", 0o644)
	e.write("b.conf", "b-old\n", 0o644)
	e.recipe("conf.hcl", `
file "ROOT/a.conf" { content = "a-new\n" }
file "ROOT/b.conf" { content = "b-new\n" }
file "ROOT/c.conf" { content = "c\n" }
`)
	e.must(0, "plan", "-out=plan.out")
	e.write("b.conf", "someone else\n", 0o644)
	before := e.snapshot()

	r := e.must(3, "apply", "plan.out")
	if !strings.Contains(r.stderr, "file["+e.root+"/b.conf]") || !strings.Contains(r.stderr, "content") {
		t.Errorf("stale error does not name the resource and property:\n%s", r)
	}
	sameSnapshot(t, before, e.snapshot())
}

func TestE2EResourceAlreadyInPlannedStateCountsAsDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `
file "ROOT/a.conf" { content = "a\n" }
file "ROOT/b.conf" { content = "b\n" }
`)
	e.must(0, "plan", "-out=plan.out")
	// As if an interrupted apply had written a.conf already.
	e.write("a.conf", "a\n", 0o644)
	r := e.must(0, "apply", "plan.out")
	if !strings.Contains(r.stdout, "already") {
		t.Errorf("apply did not say a.conf was already done:\n%s", r.stdout)
	}
	if e.read("b.conf") != "b\n" {
		t.Error("b.conf not written")
	}
}

func TestE2EEditedPlanIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	e.must(0, "plan", "-out=plan.out")
	p := filepath.Join(e.dir, "plan.out")
	b, _ := os.ReadFile(p)
	edited := bytes.Replace(b, []byte(`a\\n`), []byte(`b\\n`), 1)
	if bytes.Equal(edited, b) {
		edited = bytes.Replace(b, []byte("a.conf"), []byte("b.conf"), 1)
	}
	if err := os.WriteFile(p, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.must(1, "apply", "plan.out")
	if !strings.Contains(strings.ToLower(r.stderr), "checksum") {
		t.Errorf("want a checksum error:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.conf")); !os.IsNotExist(err) {
		t.Error("an edited plan changed the host")
	}

	// Truncated, and not a plan at all.
	os.WriteFile(p, b[:len(b)/2], 0o600)
	e.must(1, "apply", "plan.out")
	e.must(1, "show", "plan.out")
	os.WriteFile(p, []byte("hello"), 0o600)
	e.must(1, "apply", "plan.out")
}

func TestE2EPlanFromAnotherHostIsRefused(t *testing.T) {
	t.Parallel()
	// Another hostname is a UTS namespace away: root makes one, anyone
	// else in a user namespace of their own.
	unshare := []string{"unshare", "--uts"}
	if ok, _ := testenv.Has(testenv.Root); ok {
		testenv.MustHave(t, testenv.Unshare)
	} else {
		testenv.MustHave(t, testenv.UserNS)
		unshare = append(unshare, "--user", "--map-root-user")
	}
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	e.must(0, "plan", "-out=plan.out")
	cmd := exec.Command(unshare[0], append(unshare[1:], "sh", "-c", `hostname toque-elsewhere && exec "$@"`, "sh",
		toqueBin, "-chdir="+e.dir, "apply", "plan.out")...)
	r := e.runCmd(cmd)
	if r.code != 1 || !strings.Contains(r.stderr, "toque-elsewhere") {
		t.Fatalf("want the other host refused by name, got %s", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.conf")); !os.IsNotExist(err) {
		t.Error("a plan from another host changed this one")
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

func TestE2EBadInput(t *testing.T) {
	t.Parallel()
	testBadInput(t, []badInput{
		{"syntax", "file \"/x\" {\n  content = \n}\n", "bad.hcl:2:"},
		{"unknown type", "fiel \"/x\" {}\n", "bad.hcl:1:"},
		{"unknown property", "file \"/x\" {\n  contents = \"a\"\n}\n", "bad.hcl:2:"},
		{"wrong type", "file \"/x\" {\n  content = [1, 2]\n}\n", "bad.hcl:2:"},
		{"missing attribute", "file \"/x\" {\n  content = node.nope.x\n}\n", "bad.hcl:2:"},
		{"duplicate", "file \"/x\" {}\nfile \"/x\" {}\n", "bad.hcl:2:"},
		{"bad mode", "file \"/x\" {\n  mode = \"999\"\n}\n", "bad.hcl:2:"},
	})
}

func TestE2EFmtCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("ugly.hcl", "file \"/x\" {\ncontent=\"a\"\n    mode = \"0644\"\n}\n")
	r := e.must(3, "fmt", "-check")
	if !strings.Contains(r.stdout, "ugly.hcl") {
		t.Errorf("fmt -check did not list the file:\n%s", r)
	}
	e.must(0, "fmt")
	e.must(0, "fmt", "-check")
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

	cmd := exec.Command(toqueBin, "-chdir="+e.dir, "apply", "plan.out")
	cmd.Env = append(os.Environ(), e.defaults()...)
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

// A file whose parent directory does not exist, and that no earlier
// resource creates, fails the plan: the apply would fail there after
// earlier resources changed the host. A directory declared before it, or a
// recursive one, makes the plan good.
func TestE2EMissingParentFailsThePlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `
file "ROOT/a.conf" { content = "a\n" }
file "ROOT/no/such/dir/b.conf" { content = "b\n" }
link "ROOT/none/l" { to = "ROOT/a.conf" }
file "ROOT/c.conf" { content = "c\n" }
`)
	before := e.snapshot()
	r := e.must(1, "plan", "-out=plan.out")
	flat := strings.Join(strings.Fields(r.stderr), " ")
	for _, want := range []string{"Missing directory", "conf.hcl:3", "needs the directory " + e.root + "/no/such/dir", "needs the directory " + e.root + "/none"} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stderr)
		}
	}
	if r := e.run("apply", "plan.out"); r.code == 0 {
		t.Errorf("the errored plan was applied:\n%s", r)
	}
	sameSnapshot(t, before, e.snapshot())

	e.recipe("conf.hcl", `
file "ROOT/a.conf" { content = "a\n" }
directory "ROOT/no/such/dir" { recursive = true }
file "ROOT/no/such/dir/b.conf" { content = "b\n" }
directory "ROOT/none" {}
link "ROOT/none/l" { to = "ROOT/a.conf" }
`)
	e.must(0, "plan", "-out=plan.out")
	e.must(0, "apply", "plan.out")
	if e.read("no/such/dir/b.conf") != "b\n" {
		t.Error("b.conf was not written")
	}
}

func TestE2EMissingOrForeignPlanFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	r := e.must(1, "apply", "nope.out")
	if !strings.Contains(r.stderr, "nope.out") {
		t.Errorf("the error does not name the file:\n%s", r)
	}
	e.must(1, "show", "nope.out")
	os.WriteFile(filepath.Join(e.dir, "recipe.out"), []byte(`{"toque_plan": 99, "checksum": "x", "plan": {}}`), 0o600)
	r = e.must(1, "apply", "recipe.out")
	if !strings.Contains(strings.ToLower(r.stderr), "version") {
		t.Errorf("an incompatible version is not named as such:\n%s", r)
	}
}

func TestE2EApplyWithoutPlanFileAsksForYes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)

	r := e.inProcess(strings.NewReader("no\n"), nil, "-chdir="+e.dir, "apply")
	if r.code != 1 || !strings.Contains(r.stdout, "Apply cancelled.") {
		t.Fatalf("answering no: %s", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.conf")); !os.IsNotExist(err) {
		t.Fatal("a cancelled apply changed the host")
	}

	r = e.inProcess(strings.NewReader("yes\n"), nil, "-chdir="+e.dir, "apply")
	if r.code != 0 || !strings.Contains(r.stdout, "Only 'yes' will be accepted") || e.read("a.conf") != "a\n" {
		t.Fatalf("answering yes: %s", r)
	}

	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "b\n" }`)
	e.must(0, "apply", "-auto-approve")
	if e.read("a.conf") != "b\n" {
		t.Error("-auto-approve did not apply")
	}
	r = e.must(1, "apply", "-auto-approve", "plan.out")
	if !strings.Contains(r.stderr, "no planning flags") {
		t.Errorf("-auto-approve with a plan file: %s", r)
	}
}

func TestE2ELogging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	cmd := exec.Command(toqueBin, "-chdir="+e.dir, "plan")
	cmd.Env = append(os.Environ(), "TOQUE_LOG=debug")
	r := e.runCmd(cmd)
	if r.code != 0 || !strings.Contains(r.stderr, "[DEBUG]") {
		t.Errorf("TOQUE_LOG=debug wrote no debug log to stderr: %s", r)
	}
	logPath := filepath.Join(t.TempDir(), "toque.log")
	cmd = exec.Command(toqueBin, "-chdir="+e.dir, "plan")
	cmd.Env = append(os.Environ(), "TOQUE_LOG=trace", "TOQUE_LOG_PATH="+logPath)
	r = e.runCmd(cmd)
	b, _ := os.ReadFile(logPath)
	if r.code != 0 || strings.Contains(r.stderr, "[DEBUG]") || !strings.Contains(string(b), "[DEBUG]") {
		t.Errorf("TOQUE_LOG_PATH: stderr %q, log file %d bytes", r.stderr, len(b))
	}
	cmd = exec.Command(toqueBin, "-chdir="+e.dir, "plan")
	cmd.Env = append(os.Environ(), "TOQUE_LOG=loud")
	if r := e.runCmd(cmd); r.code != 1 || !strings.Contains(r.stderr, "TOQUE_LOG=loud") {
		t.Errorf("a bad TOQUE_LOG: %s", r)
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
		cmd.Env = append(append(os.Environ(), "TOQUE_STATE_DIR="+e.state, "TERM=xterm"), extraEnv...)
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
	cmd := exec.Command(toqueBin, "-chdir="+e.dir, "plan", "-out=plan.out")
	cmd.Env = append(os.Environ(), "TOQUE_STATE_DIR="+e.state)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(e.root, "guard.started")); err == nil {
			break
		}
		if i > 500 {
			cmd.Process.Kill()
			t.Fatal("the guard never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
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

// A sensitive resource's values — content, commands, guard commands and
// their output — appear in no output and no log; only the plan file holds
// them.
func TestE2ESensitiveValuesNeverShow(t *testing.T) {
	t.Parallel()
	const secret = "HUNTER2SECRET"
	e := newEnv(t)
	e.recipe("secret.hcl", `
file "ROOT/secret.conf" {
  content   = "password=`+secret+`\n"
  sensitive = true
}
execute "use-secret" {
  command   = "echo `+secret+`"
  sensitive = true
}
bash "guarded" {
  code      = "echo `+secret+`; exit 3"
  sensitive = true
  not_if    = "echo `+secret+`; test `+secret+` = nope"
  ignore_failure = true
}
`)
	logPath := filepath.Join(t.TempDir(), "trace.log")
	run := func(args ...string) string {
		r := e.toque([]string{"TOQUE_LOG=trace", "TOQUE_LOG_PATH=" + logPath}, append([]string{"-chdir=" + e.dir}, args...)...)
		if r.code != 0 {
			t.Fatalf("toque %v: %s", args, r)
		}
		return r.stdout + r.stderr
	}
	var all strings.Builder
	all.WriteString(run("plan", "-out=plan.out"))
	all.WriteString(run("show", "plan.out"))
	all.WriteString(run("show", "-json", "plan.out"))
	all.WriteString(run("show", "-markdown", "plan.out"))
	all.WriteString(run("apply", "-json", "plan.out"))
	report, _ := os.ReadFile(filepath.Join(e.state, "reports", "last.json"))
	all.Write(report)
	logged, _ := os.ReadFile(logPath)
	if len(logged) == 0 {
		t.Fatal("the trace log is empty: the test proves nothing")
	}
	if strings.Contains(all.String(), secret) {
		t.Errorf("a sensitive value reached the output:\n%s", all.String())
	}
	if strings.Contains(string(logged), secret) {
		t.Errorf("a sensitive value reached the log:\n%s", logged)
	}
	if !strings.Contains(all.String(), "(sensitive)") {
		t.Error("nothing says (sensitive)")
	}
	if e.read("secret.conf") != "password="+secret+"\n" {
		t.Error("the sensitive file was not written")
	}
}

// A value only the host can judge (an owner that must exist) fails the
// plan, not the apply half-way; validate, which never reads the host, lets
// it pass.
func TestE2EUnknownOwnerFailsThePlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("own.hcl", `
file "ROOT/a.conf" { content = "a\n" }
file "ROOT/b.conf" {
  content = "b\n"
  owner   = "no-such-user-toque"
}
execute "as-nobody-group" {
  command = "true"
  group   = "no-such-group-toque"
}
`)
	r := e.must(1, "plan", "-out=plan.out")
	flat := strings.Join(strings.Fields(r.stderr), " ") // the detail is word-wrapped
	for _, want := range []string{"own.hcl:5:", "needs the user no-such-user-toque, which does not exist", "own.hcl:9:", "needs the group no-such-group-toque, which does not exist"} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	e.must(1, "apply", "plan.out") // the errored plan is refused
	if _, err := os.Stat(filepath.Join(e.root, "a.conf")); !os.IsNotExist(err) {
		t.Error("a.conf was written")
	}
	e.must(0, "validate")
}

func TestE2EHelpAndUnknownCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.toque(nil, "-help")
	if r.code != 0 || !strings.Contains(r.stdout, "-chdir=DIR") || !strings.Contains(r.stdout, "plan ") {
		t.Errorf("toque -help: %s", r)
	}
	r = e.toque(nil, "plna")
	if r.code != 1 || !strings.Contains(r.stderr, `Did you mean "plan"?`) {
		t.Errorf("a mistyped command: %s", r)
	}
	for _, cmd := range []string{"plan", "apply", "show", "validate", "fmt", "version", "graph", "install", "update", "export"} {
		r := e.toque(nil, cmd, "-help")
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: toque") {
			t.Errorf("toque %s -help: %s", cmd, r)
		}
	}
}

// The guard of a planned notified run is evaluated again at pre-flight: a
// different verdict means the host changed since the plan, so the plan is
// stale and nothing is applied.
func TestE2ENotifiedRunGuardFlippedBeforeApplyIsStale(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("reload.hcl", `
file "ROOT/app.conf" {
  content = "v2\n"
  notifies "run" {
    resource = "execute[reload]"
  }
}
execute "reload" {
  command = "echo reloaded >> ROOT/reload.log"
  action  = "nothing"
  not_if  = "test -f ROOT/maintenance"
}
`)
	r := e.must(0, "plan", "-out=plan.out")
	if !strings.Contains(r.stdout, "execute[reload] will run") {
		t.Fatalf("the notified run is not planned:\n%s", r.stdout)
	}
	e.write("maintenance", "", 0o644)
	r = e.must(3, "apply", "plan.out")
	flat := strings.Join(strings.Fields(r.stderr), " ")
	if !strings.Contains(flat, "execute[reload] (notified run)") || !strings.Contains(flat, "test -f") {
		t.Errorf("the stale notified run is not named:\n%s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.root, "app.conf")); !os.IsNotExist(err) {
		t.Error("a stale plan changed the host")
	}
}

// command.Run resolves what it is given — no -chdir, relative paths,
// relative settings — against Streams.Env.Dir, not the process's working
// directory: the in-process tests depend on it.
func TestE2EInProcessWorkingDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	vars := map[string]string{"TOQUE_STATE_DIR": "state", "TOQUE_LOG": "debug", "TOQUE_LOG_PATH": "toque.log"}
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
	for _, p := range []string{"plan.out", "toque.log", "state/reports/last.json"} {
		if _, err := os.Stat(filepath.Join(e.dir, p)); err != nil {
			t.Errorf("%s is not under Env.Dir: %v", p, err)
		}
	}
}

// TestE2EPrintedPlanIsTheSavedPlansText: a plan only printed keeps nothing
// of its unchanged resources, yet reads exactly as the same plan saved,
// but for the lines about saving it.
func TestE2EPrintedPlanIsTheSavedPlansText(t *testing.T) {
	e := newEnv(t)
	e.write("same.conf", "same\n", 0o644)
	e.write("old.conf", "old\n", 0o644)
	e.recipe("site.hcl", `
file "ROOT/same.conf" {
  content = "same\n"
  mode    = "0644"
}
file "ROOT/old.conf" { content = "new\n" }
file "ROOT/new.conf" { content = "created\n" }
file "ROOT/skipped.conf" {
  content = "x\n"
  only_if = "false"
}
execute "reload" {
  command = "true"
  action  = "nothing"
  subscribes "run" { resource = "file[ROOT/old.conf]" }
}
execute "twice" {
  command = "true"
  creates = "ROOT/same.conf"
}
`)
	printed := e.must(0, "plan").stdout
	saved := e.must(0, "plan", "-out=plan.out").stdout
	ms := regexp.MustCompile(`in [0-9]+ ms`) // a guard's duration
	cut := func(s string) string {
		if i := strings.Index(s, "\nPlan digest:"); i >= 0 {
			s = s[:i]
		}
		return ms.ReplaceAllString(s, "in … ms")
	}
	if cut(printed) != cut(saved) || strings.Contains(printed, "Plan digest") {
		t.Errorf("the printed plan is not the saved plan's text\n--- printed\n%s\n--- saved\n%s", printed, saved)
	}
	for _, want := range []string{"~ file", "+ file", "? file", "2 unchanged"} {
		if !strings.Contains(printed, want) {
			t.Errorf("plan lacks %q:\n%s", want, printed)
		}
	}
}
