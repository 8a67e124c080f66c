package fleet_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/fleet/fleetlab"
	"github.com/toquehq/toque/internal/testenv"
)

// The fleet tests share one lab of real hosts (fleetlab): network
// namespaces with an sshd each and overlays over /etc, /var, /srv, /run,
// /root, /home and /opt, started by the first test that needs it and
// stopped when the tests end. toque is built once, and is both the
// orchestrator (run in the lab's network namespace) and the agent the
// hosts get (TOQUE_AGENT_DIR).
//
// Each test writes under its own /srv/NAME on the hosts, so tests do not
// see each other's changes; a test that breaks a host (stops its sshd,
// changes its key) mends it before it ends.

var labHosts = []string{"web-01", "web-02", "web-03", "web-04", "web-05", "web-06", "db-01", "db-02"}

var (
	fixtureOnce sync.Once
	fixture     *labFixture
	fixtureErr  error
)

type labFixture struct {
	dir      string
	bin      string // the toque binary
	agents   string // TOQUE_AGENT_DIR
	lab      *fleetlab.Lab
	started  time.Duration
	building time.Duration
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range []*labFixture{fixture, benchLabFixture()} {
		if f != nil {
			if f.lab != nil {
				f.lab.Close()
			}
			os.RemoveAll(f.dir)
		}
	}
	os.Exit(code)
}

// lab gives the test the shared lab, or skips it where one cannot run.
func lab(t *testing.T) *labFixture {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Unshare, testenv.Nsenter, testenv.Overlay, testenv.NetNS, testenv.Sshd)
	first := false
	fixtureOnce.Do(func() {
		first = true
		fixture, fixtureErr = startFixtureHosts(labHosts)
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	if first {
		// What the shared fixture cost, paid by the first test only.
		t.Logf("fleet lab: toque built in %s, %d hosts started in %s", fixture.building.Round(time.Millisecond), len(labHosts), fixture.started.Round(time.Millisecond))
	}
	return fixture
}

// startFixtureHosts builds toque and, unless aliases is nil, starts a
// lab of those hosts.
func startFixtureHosts(aliases []string) (*labFixture, error) {
	dir, err := os.MkdirTemp("/tmp", "toque-fleet-test-")
	if err != nil {
		return nil, err
	}
	// sshd reads authorized keys as the user logging in (deploy too).
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	f := &labFixture{dir: dir, bin: filepath.Join(dir, "bin", "toque"), agents: filepath.Join(dir, "agents")}
	begin := time.Now()
	if bin := os.Getenv("TOQUE_TEST_BINARY"); bin != "" {
		f.bin = bin
	} else {
		// Without symbols and DWARF: the first plan ships the agent to
		// every host, and this is 28% fewer bytes to send.
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", f.bin, "github.com/toquehq/toque")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building toque: %v\n%s", err, out)
		}
	}
	f.building = time.Since(begin)
	// The agent is this same build (the hosts share the machine's libc, so
	// a cgo build runs there too; make release builds static ones).
	if err := os.MkdirAll(f.agents, 0o755); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(f.bin)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(f.agents, "toque-linux-amd64"), data, 0o755); err != nil {
		return nil, err
	}
	if aliases == nil {
		return f, nil
	}
	begin = time.Now()
	f.lab, err = fleetlab.Start(filepath.Join(dir, "lab"), aliases)
	if err != nil {
		return nil, err
	}
	// The classic curve25519 key exchange: OpenSSH 9's default
	// (sntrup761x25519) costs about 80 ms of CPU per side and connection,
	// and every fleet command connects to every host; the tests are about
	// toque, not the key exchange (the benchmarks time both).
	if err := f.lab.SetCommon("KexAlgorithms curve25519-sha256"); err != nil {
		return nil, err
	}
	f.started = time.Since(begin)
	return f, nil
}

// run is one toque run's outcome.
type run struct {
	code           int
	stdout, stderr string
}

func (r run) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// scenario is one test's working directory: its inventory, recipes and
// the toque it runs in the lab's network.
type scenario struct {
	t   *testing.T
	f   *labFixture
	dir string
	run string // XDG_RUNTIME_DIR
	env []string
	// last is the last run a test kept.
	last run
}

func (f *labFixture) scenario(t *testing.T) *scenario {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"home", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The test's own masters, which persist between its commands: under a
	// path short enough for their sockets (t.TempDir's is not), closed
	// when the test ends.
	run, err := os.MkdirTemp("/tmp", "tqrun")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		closeMasters(filepath.Join(run, "toque-fleet"))
		os.RemoveAll(run)
	})
	return &scenario{t: t, f: f, dir: dir, run: run, env: []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_RUNTIME_DIR=" + run,
		"TOQUE_AGENT_DIR=" + f.agents,
		"TOQUE_STATE_DIR=" + filepath.Join(dir, "state"),
		"TOQUE_HOST_LOCK=" + filepath.Join(run, "apply.lock"),
		"NO_COLOR=1",
	}}
}

// masters lists the control sockets of the masters in dir.
func masters(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// closeMasters asks the masters in dir to exit.
func closeMasters(dir string) {
	for _, sock := range masters(dir) {
		exec.Command("ssh", "-o", "ControlPath="+sock, "-O", "exit", "x").Run()
	}
}

// write writes a file of the scenario; @LAB@ is the lab's directory.
func (s *scenario) write(name, content string) {
	s.t.Helper()
	content = strings.ReplaceAll(content, "@SSHCONFIG@", s.f.lab.SSHConfig)
	p := filepath.Join(s.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// toqueCmd is toque run in the lab's network, in the scenario's directory.
func (s *scenario) toqueCmd(args ...string) *exec.Cmd {
	cmd := s.f.lab.Command(s.f.bin, args...)
	cmd.Dir = s.dir
	cmd.Env = s.env
	return cmd
}

func (s *scenario) toque(args ...string) run {
	s.t.Helper()
	cmd := s.toqueCmd(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	begin := time.Now()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	r := run{code, out.String(), errb.String()}
	if testing.Verbose() {
		s.t.Logf("toque %s (%s)\n%s", strings.Join(args, " "), time.Since(begin).Round(time.Millisecond), r)
	}
	return r
}

// local runs toque on this machine (show, which needs no host).
func (s *scenario) local(args ...string) run {
	s.t.Helper()
	cmd := exec.Command(s.f.bin, args...)
	cmd.Dir, cmd.Env = s.dir, s.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return run{code, out.String(), errb.String()}
}

func (s *scenario) want(r run, code int, contains ...string) {
	s.t.Helper()
	if r.code != code {
		s.t.Fatalf("want exit %d, got:\n%s", code, r)
	}
	for _, c := range contains {
		if !strings.Contains(r.stdout+r.stderr, c) {
			s.t.Fatalf("output lacks %q:\n%s", c, r)
		}
	}
}

// host is a lab host.
func (s *scenario) host(alias string) *fleetlab.Host {
	h := s.f.lab.Host(alias)
	if h == nil {
		s.t.Fatalf("no host %s", alias)
	}
	return h
}

// content is a file's content on a host, "" (and false) when it has none.
func (s *scenario) content(alias, path string) (string, bool) {
	s.t.Helper()
	data, err := s.host(alias).ReadFile(path)
	return data, err == nil
}

// bundleEntries reads a bundle's tar entries.
func bundleEntries(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[hdr.Name] = b
	}
}

// hostEnv is what every test's inventory gives toque on the hosts: its
// state inside the host's own overlays.
const hostEnv = `environment = {
  TOQUE_STATE_DIR = "/var/lib/toque-fleet-test"
  TOQUE_HOST_LOCK = "/run/toque-fleet-test/apply.lock"
}
`

// interrupt sends SIGINT to a running toque.
func interrupt(cmd *exec.Cmd) { cmd.Process.Signal(syscall.SIGINT) }
