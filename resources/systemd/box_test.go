package systemd

import (
	"bytes"
	"fmt"
	"io"
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

// Tier C of the service tests: a real systemd booted in a systemd-nspawn container over this host's /usr
// (read-only) and an overlay on its /etc (--volatile=yes: every change is
// gone with the container), without network, booted into basic.target so
// that none of the host's services starts in it. TestServicesInContainer
// boots one container, copies this test binary into it and runs, there
// and in one process, every test named TestInBox… (of this package and of
// systemd_test): they see systemd as PID 1, and run the types — and
// toque's commands, in-process — exactly as in production. Outside that
// process the TestInBox… tests skip. Nothing is started, stopped or
// enabled on the machine that runs the tests.

// inBoxEnv is set in the environment of the test process run in the
// container.
const inBoxEnv = "TOQUE_TEST_IN_SYSTEMD_BOX"

// boxDir is where the host directory holding the test binary is bound in
// the container (not under /tmp, which systemd mounts a tmpfs over).
const boxDir = "/toque-test-box"

// insideBox skips the test unless it runs in the container.
func insideBox(t *testing.T) {
	t.Helper()
	if os.Getenv(inBoxEnv) == "" {
		t.Skip("runs in the systemd container TestServicesInContainer boots")
	}
}

func TestServicesInContainer(t *testing.T) {
	if os.Getenv(inBoxEnv) != "" {
		t.Skip("this is the process in the container")
	}
	testenv.MustHave(t, testenv.Root, testenv.Nspawn, testenv.Nsenter)
	before := unitTreeDigest()
	// Registered before the box is booted, so that it runs after the box
	// halted (cleanups run last first): what the container did while it
	// shut down is checked too.
	t.Cleanup(func() {
		if after := unitTreeDigest(); after != before {
			t.Errorf("the host's /etc/systemd/system changed")
		}
	})
	b := bootBox(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, self, filepath.Join(b.dir, "systemd.test"))
	args := []string{"-test.run", "^TestInBox", "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := b.exec(append([]string{boxDir + "/systemd.test"}, args...)...)
	cmd.Env = append(os.Environ(), inBoxEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("the tests in the container (%v):\n%s", time.Since(start).Round(time.Millisecond), out.String())
	if err != nil {
		t.Errorf("the tests in the container failed: %v", err)
	}
	if !strings.Contains(out.String(), "--- PASS: TestInBox") && err == nil {
		t.Error("no TestInBox test ran in the container")
	}
	// Every test in the box can run there: a skip is a test that did not.
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "--- SKIP: TestInBox") {
			t.Errorf("a test skipped in the container: %s", strings.TrimSpace(l))
		}
	}
}

// unitTreeDigest lists everything under the host's /etc/systemd/system:
// names, modes, link targets and sizes.
func unitTreeDigest() string {
	var b strings.Builder
	filepath.Walk("/etc/systemd/system", func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s error %v\n", p, err)
			return nil
		}
		l, _ := os.Readlink(p)
		fmt.Fprintf(&b, "%s %v %d %s\n", p, fi.Mode(), fi.Size(), l)
		return nil
	})
	return b.String()
}

// box is the booted container.
type box struct {
	dir    string // the host directory bound at boxDir
	nspawn *exec.Cmd
	done   chan struct{}
	leader int
	groups []string
	log    *bytes.Buffer
}

// bootBox boots the container and halts it when the test ends. nspawn
// runs in cgroups of its own (cgroup v1's name=systemd and unified
// hierarchies here, or v2's), removed afterwards, so that the container's
// cgroups are not left under the host's.
func bootBox(t *testing.T) *box {
	t.Helper()
	b := &box{dir: t.TempDir(), done: make(chan struct{}), log: &bytes.Buffer{}}
	os.Chmod(b.dir, 0o755)
	name := fmt.Sprintf("toque-systemd-test-%d", os.Getpid())
	var procs []string
	hierarchies := []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err == nil {
		hierarchies = []string{"/sys/fs/cgroup"}
	}
	for _, h := range hierarchies {
		g := filepath.Join(h, name)
		if err := os.Mkdir(g, 0o755); err == nil {
			b.groups = append(b.groups, g)
			procs = append(procs, filepath.Join(g, "cgroup.procs"))
		}
	}
	script := `for p in $TOQUE_BOX_CGROUPS; do echo $$ > "$p" || exit 1; done; exec systemd-nspawn "$@"`
	b.nspawn = exec.Command("sh", "-c", script, "sh", "--quiet", "-D", "/", "--volatile=yes", "--overlay=/etc::/etc",
		"--bind="+b.dir+":"+boxDir, "--register=no", "--keep-unit", "--boot", "--console=passive", "--private-network",
		"-M", name, "--", "systemd.firstboot=off", "systemd.unit=basic.target")
	b.nspawn.Env = append(os.Environ(), "TOQUE_BOX_CGROUPS="+strings.Join(procs, " "))
	b.nspawn.Stdout, b.nspawn.Stderr = b.log, b.log
	start := time.Now()
	if err := b.nspawn.Start(); err != nil {
		b.removeGroups(t)
		t.Fatalf("cannot start systemd-nspawn: %v", err)
	}
	go func() { b.nspawn.Wait(); close(b.done) }()
	t.Cleanup(func() { b.halt(t) })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-b.done:
			t.Fatalf("systemd-nspawn cannot boot systemd here: %s", b.log.String())
		default:
		}
		b.leader = systemdChildOf(b.nspawn.Process.Pid)
		state := ""
		if b.leader != 0 {
			out, _ := b.exec("systemctl", "is-system-running").Output()
			if state = strings.TrimSpace(string(out)); state == "running" || state == "degraded" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd did not finish booting in the container in 60 s (init %d, state %q): %s", b.leader, state, b.log.String())
		}
	}
	t.Logf("booted systemd in a container in %v", time.Since(start).Round(time.Millisecond))
	return b
}

// systemdChildOf is the child of pid that runs systemd, 0 when none does
// yet (nspawn forks helpers first).
func systemdChildOf(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n)); strings.TrimSpace(string(comm)) == "systemd" {
			return n
		}
	}
	return 0
}

// exec is a command run in the container, in all its namespaces.
func (b *box) exec(args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(b.leader), "-a", "--"}, args...)...)
}

// halt stops the container: SIGTERM asks systemd to halt, a second one
// ends it at once; then its cgroups are removed.
func (b *box) halt(t *testing.T) {
	start := time.Now()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM, syscall.SIGKILL} {
		b.nspawn.Process.Signal(sig)
		select {
		case <-b.done:
			b.removeGroups(t)
			t.Logf("halted the container in %v", time.Since(start).Round(time.Millisecond))
			return
		case <-time.After(5 * time.Second):
		}
	}
	t.Errorf("systemd-nspawn %d did not end", b.nspawn.Process.Pid)
}

// removeGroups removes the cgroups the container left, innermost first.
func (b *box) removeGroups(t *testing.T) {
	for _, g := range b.groups {
		for try := 0; try < 50; try++ {
			var dirs []string
			filepath.Walk(g, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				os.Remove(dirs[i])
			}
			if _, err := os.Stat(g); os.IsNotExist(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := os.Stat(g); err == nil {
			t.Errorf("could not remove the container's cgroup %s", g)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// The process in the container sees systemd running, as the type does.
func TestInBoxSystemdRuns(t *testing.T) {
	insideBox(t)
	if why := hostSystemd().offline(); why != "" {
		t.Fatalf("in the container: %s", why)
	}
}
