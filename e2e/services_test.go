package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// The service types against the real systemd, in three tiers (the
// "Tests" section of docs/service.md). systemctl's live verbs (start,
// status, daemon-reload) need systemd running as PID 1, which CI's
// machine kind — a VM or container whose systemd is installed but
// offline — does not have: only unit files and enablement work there, in
// an /etc overlay. Real starts and stops need a systemd of its own, booted
// by systemd-nspawn (with --register=no --keep-unit, which nspawn needs
// without a running systemd, and in a cgroup of its own that is removed
// after it, so that it leaves none on the host):
//
//   - resources/systemd_test.go: systemctl --root on unit files in a temp
//     dir (enablement, systemd-analyze verify), no root needed;
//   - TestE2EServicesOffline: toque's production command lines on this
//     host, whose systemd is not running, inside a mount namespace with
//     an overlay on /etc: enablement works offline, start is a plan error;
//   - TestE2EServicesSystemd: a real systemd booted in a systemd-nspawn
//     container over this host's /usr and /etc (an overlay): start, stop,
//     restart, reload, daemon-reload and idempotence.
//
// None of them starts, stops or enables anything on the host itself: the
// last two check that the host's /etc/systemd/system is unchanged. Each
// runs where the machine can (internal/testenv: it skips, saying why, or
// fails in CI's strict tier).

// unitTreeDigest is a digest of everything under /etc/systemd/system of
// the host: names, modes, link targets and contents.
func unitTreeDigest(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	filepath.Walk("/etc/systemd/system", func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			fmt.Fprintf(h, "%s error %v\n", p, err)
			return nil
		}
		fmt.Fprintf(h, "%s %v", p, fi.Mode())
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			fmt.Fprintf(h, " -> %s", l)
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		fmt.Fprintln(h)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// hostUntouched fails the test at its end unless the host's unit tree is
// as it was when it was called.
func hostUntouched(t *testing.T) {
	t.Helper()
	before := unitTreeDigest(t)
	t.Cleanup(func() {
		if after := unitTreeDigest(t); after != before {
			t.Errorf("the host's /etc/systemd/system changed (digest %s, was %s)", after, before)
		}
	})
}

// Bad input: a unit named by its path, or content systemd could not read
// as a unit file, is refused with the file, line and column.
func TestE2EServicesBadInput(t *testing.T) {
	t.Parallel()
	testBadInput(t, []badInput{
		{"a service named by its path", `
service "/etc/systemd/system/web.service" {
  action = "start"
}
`, "bad.hcl:2:9"},
		{"service_name with a path", `
service "web" {
  service_name = "/lib/systemd/system/web.service"
  action       = ["enable", "start"]
}
`, "bad.hcl:3:18"},
		{"a unit name without a type", `
systemd_unit "web" {
  content = "[Service]\nExecStart=/bin/true\n"
}
`, "bad.hcl:2:14"},
		{"a nested object in content", `
systemd_unit "web.service" {
  content = {
    Service = { Environment = { A = "1" } }
  }
}
`, "bad.hcl:3:13"},
		{"an action services do not have", `
service "web" {
  action = ["enable", "create"]
}
`, "bad.hcl:3"},
	})
	e := newEnv(t)
	e.recipe("bad.hcl", "service \"/etc/systemd/system/web.service\" {\n  action = \"start\"\n}\n")
	r := e.must(1, "plan")
	if !strings.Contains(flat(r.stderr), `is a path, not a unit name: name the unit ("web.service")`) || strings.Count(r.stderr, "Error:") != 1 {
		t.Errorf("want one error that says what to write:\n%s", r)
	}
}

// offlineToque runs toque in a mount namespace where /etc is an overlay
// on the host's (upper in upper): systemctl, run by toque as in
// production, changes unit files there, never in the host's /etc.
func offlineToque(e *env, upper string, args ...string) result {
	e.t.Helper()
	script := `mount -t overlay overlay -o "lowerdir=/etc,upperdir=$0/upper,workdir=$0/work" /etc && exec "$@"`
	argv := append([]string{"--mount", "--propagation", "private", "sh", "-c", script, upper, toqueBin, "-chdir=" + e.dir}, args...)
	return e.runCmd(exec.Command("unshare", argv...))
}

// Tier B: this host's systemd is installed but not running (PID 1 is not
// systemd), as in a container or an image build. toque runs its real
// systemctl command lines in an /etc overlay: a unit file is created,
// enabled, changed, disabled and deleted; a unit enabled by someone else
// is disabled; a second plan does nothing; starting is a plan error that
// says why; and a plan goes stale when someone else changes the unit file.
func TestE2EServicesOffline(t *testing.T) {
	t.Parallel()
	testenv.MustHave(t, testenv.Root, testenv.Unshare, testenv.Overlay, testenv.Systemctl)
	if fi, err := os.Stat("/run/systemd/system"); err == nil && fi.IsDir() {
		t.Skip("systemd runs on this host: the offline tier is for hosts where it does not (TestE2EServicesSystemd covers a running one)")
	}
	hostUntouched(t)
	e := newEnv(t)
	upper := t.TempDir()
	// In the overlay, a unit someone else installed and enabled.
	units := filepath.Join(upper, "upper/systemd/system")
	for _, d := range []string{"work", "upper/systemd/system/multi-user.target.wants"} {
		if err := os.MkdirAll(filepath.Join(upper, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(units, "toque-e2e-other.service"), []byte("[Service]\nExecStart=/bin/sleep 1000\n[Install]\nWantedBy=multi-user.target\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/systemd/system/toque-e2e-other.service", filepath.Join(units, "multi-user.target.wants/toque-e2e-other.service")); err != nil {
		t.Fatal(err)
	}
	if r := offlineToque(e, upper, "version"); r.code != 0 {
		t.Fatalf("cannot mount an overlay on /etc in a mount namespace here: %s", r)
	}
	unit := func(actions, exec string) {
		e.recipe("a.hcl", fmt.Sprintf(`
systemd_unit "toque-e2e-offline.service" {
  content = {
    Service = { ExecStart = "%s" }
    Install = { WantedBy = "multi-user.target" }
  }
  action = %s
}

service "toque-e2e-other" {
  action = "disable"
}
`, exec, actions))
	}
	unit(`["create", "enable"]`, "/bin/sleep 1000")
	r := offlineToque(e, upper, "plan", "-out=plan.out")
	for _, want := range []string{
		"# systemd_unit[toque-e2e-offline.service] (action create, 1 of 2) will be created",
		"+ExecStart=/bin/sleep 1000",
		"(action enable, 2 of 2) will be updated in place\n  #   disabled: enable enables it",
		"# service[toque-e2e-other] will be updated in place\n  #   enabled: disable disables it",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r)
		}
	}
	offlineToque(e, upper, "apply", "plan.out")
	link := filepath.Join(upper, "upper/systemd/system/multi-user.target.wants/toque-e2e-offline.service")
	if l, err := os.Readlink(link); err != nil || l != "/etc/systemd/system/toque-e2e-offline.service" {
		t.Fatalf("enable made no link in the overlay (%q, %v)", l, err)
	}
	if r := offlineToque(e, upper, "plan", "-detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r)
	}

	// Change one property.
	unit(`["create", "enable"]`, "/bin/sleep 2000")
	r = offlineToque(e, upper, "plan", "-out=plan.out")
	if r.code != 0 || !strings.Contains(r.stdout, "-ExecStart=/bin/sleep 1000") || !strings.Contains(r.stdout, "+ExecStart=/bin/sleep 2000") {
		t.Errorf("plan of a change:\n%s", r)
	}
	// Stale: someone else edits the unit file between plan and apply.
	unitFile := filepath.Join(upper, "upper/systemd/system/toque-e2e-offline.service")
	os.WriteFile(unitFile, []byte("[Service]\nExecStart=/bin/sleep 3\n"), 0o644)
	if r := offlineToque(e, upper, "apply", "plan.out"); r.code != 3 || !strings.Contains(r.stderr, "systemd_unit[toque-e2e-offline.service]") {
		t.Errorf("want a stale plan (exit 3), got %s", r)
	}
	offlineToque(e, upper, "plan", "-out=plan.out")
	if r := offlineToque(e, upper, "apply", "plan.out"); r.code != 0 {
		t.Fatalf("apply of the change: %s", r)
	}

	// Nothing runs here: start is a plan error that says why.
	unit(`["create", "start"]`, "/bin/sleep 2000")
	r = offlineToque(e, upper, "plan")
	if r.code != 1 || !strings.Contains(flat(r.stderr), "systemd is not running as the init system (PID 1) here") || !strings.Contains(r.stderr, "a.hcl:2:1") {
		t.Errorf("start offline: want a plan error saying why, got %s", r)
	}

	// Remove.
	unit(`["disable", "delete"]`, "/bin/sleep 2000")
	r = offlineToque(e, upper, "plan", "-out=plan.out")
	if !strings.Contains(r.stdout, "(action delete, 2 of 2) will be deleted") {
		t.Errorf("plan of the removal:\n%s", r)
	}
	offlineToque(e, upper, "apply", "plan.out")
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("disable left the link: %v", err)
	}
	if fi, err := os.Lstat(unitFile); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("delete left the unit file in the overlay")
	}
	if r := offlineToque(e, upper, "plan", "-detailed-exitcode"); r.code != 0 {
		t.Errorf("plan after the removal:\n%s", r)
	}
}

// box is a real systemd booted in a systemd-nspawn container (tier C):
// this host's /usr, read-only, under a fresh root (--volatile=yes), with
// an overlay on the host's /etc whose changes vanish with the container,
// no network, and a host directory bound at boxDir for the toque binary,
// recipes, state and plans. It is booted into basic.target, so none of
// the host's enabled services starts in it.
type box struct {
	// t is the test in hand (a subtest); top the one that booted the
	// box, which halts it.
	t, top *testing.T
	dir    string // the host directory bound at boxDir
	name   string
	nspawn *exec.Cmd
	done   chan struct{}
	leader int
	groups []string
	log    *bytes.Buffer
}

// boxDir is where the bound directory is inside the container (not under
// /tmp, which systemd mounts a tmpfs over).
const boxDir = "/toque-e2e"

// bootBox boots the container, unless this machine cannot (testenv: a
// skip, or a failure in CI's strict root tier). It halts it when the test
// ends.
func bootBox(t *testing.T) *box {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Nspawn, testenv.Nsenter)
	return bootNspawn(t, []string{"-D", "/", "--volatile=yes", "--overlay=/etc::/etc"}, []string{"systemd.firstboot=off", "systemd.unit=basic.target"})
}

// bootNspawn boots a container of the tree image names (nspawn's -D
// DIR, and how it keeps it: --volatile…), without network, its systemd
// started with bootArgs, and waits for it to be up. It halts it when the
// test ends.
func bootNspawn(t *testing.T, image, bootArgs []string) *box {
	t.Helper()
	b := &box{t: t, top: t, dir: t.TempDir(), name: fmt.Sprintf("toque-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6), done: make(chan struct{}), log: &bytes.Buffer{}}
	os.Chmod(b.dir, 0o755)
	copyFile(t, toqueBin, filepath.Join(b.dir, "toque"), 0o755)
	// nspawn (--keep-unit) makes the container's cgroups below its own: a
	// cgroup of its own, removed when it ends, keeps them off the host's.
	// Hierarchies: cgroup v1's name=systemd and v2's unified, or v2 alone.
	var procs []string
	hierarchies := []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err == nil {
		hierarchies = []string{"/sys/fs/cgroup"}
	}
	for _, h := range hierarchies {
		g := filepath.Join(h, b.name)
		if err := os.Mkdir(g, 0o755); err == nil {
			b.groups = append(b.groups, g)
			procs = append(procs, filepath.Join(g, "cgroup.procs"))
		}
	}
	script := `for p in $TOQUE_BOX_CGROUPS; do echo $$ > "$p" || exit 1; done; exec systemd-nspawn "$@"`
	args := append(append([]string{"sh", "-c", script, "sh", "--quiet"}, image...),
		"--bind="+b.dir+":"+boxDir, "--register=no", "--keep-unit", "--boot", "--console=passive", "--private-network",
		"-M", b.name, "--")
	b.nspawn = exec.Command(args[0], append(args[1:], bootArgs...)...)
	b.nspawn.Env = append(os.Environ(), "TOQUE_BOX_CGROUPS="+strings.Join(procs, " "))
	b.nspawn.Stdout, b.nspawn.Stderr = b.log, b.log
	start := time.Now()
	if err := b.nspawn.Start(); err != nil {
		b.removeGroups()
		t.Fatalf("cannot start systemd-nspawn: %v", err)
	}
	go func() { b.nspawn.Wait(); close(b.done) }()
	t.Cleanup(b.halt)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-b.done:
			t.Fatalf("systemd-nspawn cannot boot systemd here: %s", b.log.String())
		default:
		}
		// The container's init is nspawn's child once it has become
		// systemd (nspawn forks helpers first).
		b.leader = systemdChildOf(b.nspawn.Process.Pid)
		state := ""
		if b.leader != 0 {
			out, _ := b.exec("systemctl", "is-system-running").Output()
			if state = strings.TrimSpace(string(out)); state == "running" || state == "degraded" {
				break
			}
		}
		if time.Now().After(deadline) {
			jobs := ""
			if b.leader != 0 {
				out, _ := b.exec("systemctl", "list-jobs", "--no-pager").CombinedOutput()
				jobs = string(out)
			}
			t.Fatalf("systemd did not finish booting in the container in 60 s (init %d, state %q; jobs: %s): %s", b.leader, state, jobs, b.log.String())
		}
	}
	t.Logf("booted systemd in a container in %v", time.Since(start).Round(time.Millisecond))
	return b
}

// systemdChildOf is the child of pid that runs systemd, 0 when none does
// yet.
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

// sh runs a shell command in the container and returns its output,
// failing the test when it fails.
func (b *box) sh(script string) string {
	b.t.Helper()
	out, err := b.exec("sh", "-c", script).CombinedOutput()
	if err != nil {
		b.t.Fatalf("in the container, %s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// halt stops the container: SIGTERM asks systemd to halt, a second one
// ends it at once; then its cgroups are removed.
func (b *box) halt() {
	start := time.Now()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM, syscall.SIGKILL} {
		b.nspawn.Process.Signal(sig)
		select {
		case <-b.done:
			b.removeGroups()
			b.top.Logf("halted the container in %v", time.Since(start).Round(time.Millisecond))
			return
		case <-time.After(5 * time.Second):
		}
	}
	b.top.Errorf("systemd-nspawn %d did not end", b.nspawn.Process.Pid)
}

// removeGroups removes the cgroups the container left, innermost first
// (a cgroup is removable once its processes are gone).
func (b *box) removeGroups() {
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
			b.top.Errorf("could not remove the container's cgroup %s", g)
		}
	}
}

// scenario is a recipe directory and state directory in the container.
type scenario struct {
	b    *box
	name string
	// shim puts a systemctl first in PATH that records each call's verb
	// (calls) and runs the real one.
	shim bool
}

func (b *box) scenario(name string) *scenario {
	b.t.Helper()
	for _, d := range []string{"recipes", "state"} {
		if err := os.MkdirAll(filepath.Join(b.dir, name, d), 0o755); err != nil {
			b.t.Fatal(err)
		}
	}
	return &scenario{b: b, name: name}
}

// recipe writes the scenario's only recipe.
func (s *scenario) recipe(src string) {
	s.b.t.Helper()
	if err := os.WriteFile(filepath.Join(s.b.dir, s.name, "recipes", "a.hcl"), []byte(src), 0o644); err != nil {
		s.b.t.Fatal(err)
	}
}

// toque runs toque in the container on the scenario, with debug logs
// kept in its log file; want is the exit status it must have.
func (s *scenario) toque(want int, args ...string) result {
	t := s.b.t
	t.Helper()
	in := boxDir + "/" + s.name
	cmd := s.b.exec(append([]string{boxDir + "/toque", "-chdir=" + in + "/recipes"}, args...)...)
	cmd.Env = append(os.Environ(), "TOQUE_STATE_DIR="+in+"/state", "TOQUE_HOST_LOCK="+in+"/host.lock", "NO_COLOR=1",
		"TOQUE_LOG=debug", "TOQUE_LOG_PATH="+in+"/toque.log")
	if s.shim {
		shim := filepath.Join(s.b.dir, s.name, "shim")
		os.MkdirAll(shim, 0o755)
		script := "#!/bin/sh\necho \"$1\" >> " + in + "/calls\nexec /usr/bin/systemctl \"$@\"\n"
		if err := os.WriteFile(filepath.Join(shim, "systemctl"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "PATH="+in+"/shim:"+os.Getenv("PATH"))
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("toque %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r := result{code, out.String(), errb.String()}
	if code != want {
		t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

// processes counts the processes toque started whose argv starts with
// prefix, as its debug log says, and empties the log.
func (s *scenario) processes(prefix ...string) int {
	p := filepath.Join(s.b.dir, s.name, "toque.log")
	b, _ := os.ReadFile(p)
	os.Remove(p)
	q := `starting process: argv=["` + strings.Join(prefix, `", "`) + `"`
	return strings.Count(string(b), q)
}

// calls lists the verbs of the systemctl calls the shim saw, and
// forgets them.
func (s *scenario) calls() string {
	p := filepath.Join(s.b.dir, s.name, "calls")
	b, _ := os.ReadFile(p)
	os.Remove(p)
	return strings.Join(strings.Fields(string(b)), " ")
}

// Tier C: start, stop, restart, reload, daemon-reload and idempotence on
// a real systemd, and the service example.
func TestE2EServicesSystemd(t *testing.T) {
	t.Parallel()
	hostUntouched(t)
	b := bootBox(t)
	if out := b.sh("test -d /run/systemd/system && systemctl is-system-running"); out != "running" && out != "degraded" {
		t.Fatalf("systemd in the container: %s", out)
	}
	t.Run("unit, template, restart", func(t *testing.T) { b.t = t; testUnitLifecycle(b) })
	t.Run("reload and stop", func(t *testing.T) { b.t = t; testReloadStop(b) })
	t.Run("stale", func(t *testing.T) { b.t = t; testServiceStale(b) })
	t.Run("one daemon-reload", func(t *testing.T) { b.t = t; testOneDaemonReload(b) })
	t.Run("example", func(t *testing.T) { b.t = t; testServiceExample(b) })
	t.Run("many services", func(t *testing.T) { b.t = t; testManyServices(b) })
}

// mainPID is the unit's main process, "0" when it has none.
func (b *box) mainPID(unit string) string {
	return b.sh("systemctl show -p MainPID --value " + unit)
}

// A unit file made from an object, enabled and started; a second plan
// does nothing; a changed configuration restarts it once; a changed unit
// file is reloaded and restarts it; then it is stopped, disabled and
// deleted.
func testUnitLifecycle(b *box) {
	t := b.t
	s := b.scenario("lifecycle")
	recipe := func(greeting, sleep string) {
		s.recipe(fmt.Sprintf(`
file "/etc/toque-e2e.conf" {
  content = "%s\n"
  notifies "restart" {
    resource = "service[toque-e2e]"
  }
}

systemd_unit "toque-e2e.service" {
  content = {
    Unit    = { Description = "toque e2e" }
    Service = { ExecStart = "/bin/sleep %s" }
    Install = { WantedBy = "multi-user.target" }
  }
  notifies "restart" {
    resource = "service[toque-e2e]"
  }
}

service "toque-e2e" {
  action = ["enable", "start"]
}
`, greeting, sleep))
	}
	recipe("hello", "1000")
	r := s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	for _, want := range []string{
		"# systemd_unit[toque-e2e.service] will be created",
		"+ExecStart=/bin/sleep 1000",
		"then systemd reads its unit files again (one daemon-reload after this batch of unit files)",
		"# service[toque-e2e] (action enable, 1 of 2) will be updated in place\n  #   not on the host yet",
		"# service[toque-e2e] (action start, 2 of 2) will be updated in place",
		"# service[toque-e2e] will run: notified by file[/etc/toque-e2e.conf] and systemd_unit[toque-e2e.service] (delayed)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	s.processes()
	s.toque(0, "apply", "plan.out")
	if n := s.processes("systemctl", "daemon-reload"); n != 1 {
		t.Errorf("%d daemon-reloads, want 1", n)
	}
	if got := b.sh("systemctl is-enabled toque-e2e; systemctl is-active toque-e2e"); got != "enabled\nactive" {
		t.Fatalf("after apply: %q", got)
	}
	pid := b.mainPID("toque-e2e")

	// A second plan does nothing, and reads the units of each type with
	// one systemctl show (a shim first in PATH counts them).
	s.shim = true
	r = s.toque(0, "plan", "-detailed-exitcode")
	s.shim = false
	if !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
	if got := s.calls(); got != "show show" {
		t.Errorf("the second plan ran systemctl %q, want one show per type", got)
	}

	// The configuration changes: one restart.
	recipe("bonjour", "1000")
	r = s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	if !strings.Contains(r.stdout, "# service[toque-e2e] will run: notified by file[/etc/toque-e2e.conf] (delayed)") {
		t.Errorf("plan of a new configuration:\n%s", r.stdout)
	}
	s.toque(0, "apply", "plan.out")
	if now := b.mainPID("toque-e2e"); now == pid || now == "0" {
		t.Errorf("main PID %s, was %s: not restarted", now, pid)
	}
	pid = b.mainPID("toque-e2e")

	// The unit file changes: systemd reads it, and the restart runs it.
	recipe("bonjour", "2000")
	s.toque(0, "plan", "-out=plan.out")
	s.processes()
	s.toque(0, "apply", "plan.out")
	if n := s.processes("systemctl", "daemon-reload"); n != 1 {
		t.Errorf("%d daemon-reloads, want 1", n)
	}
	if got := b.sh("systemctl show -p ExecStart --value toque-e2e; systemctl show -p NeedDaemonReload --value toque-e2e"); !strings.Contains(got, "argv[]=/bin/sleep 2000") || !strings.HasSuffix(got, "no") {
		t.Errorf("systemd did not read the new unit: %s", got)
	}
	if now := b.mainPID("toque-e2e"); now == pid {
		t.Errorf("not restarted after the unit changed")
	}

	// Remove: stop, disable, delete; then nothing is left to do.
	s.recipe(`
systemd_unit "toque-e2e.service" {
  action = ["stop", "disable", "delete"]
}

file "/etc/toque-e2e.conf" {
  action = "delete"
}
`)
	r = s.toque(0, "plan", "-out=plan.out")
	s.toque(0, "apply", "plan.out")
	if got := b.sh("systemctl show -p LoadState --value toque-e2e; test -e /etc/systemd/system/toque-e2e.service || echo gone"); got != "not-found\ngone" {
		t.Errorf("after the removal: %q\nplan:\n%s", got, r.stdout)
	}
	if r := s.toque(0, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("plan after the removal:\n%s", r.stdout)
	}
}

// reload is a run step that runs ExecReload; stop stops the unit, and a
// second plan does nothing; a unit without ExecReload cannot be reloaded.
func testReloadStop(b *box) {
	t := b.t
	b.sh(`printf '[Service]\nExecStart=/bin/sleep 1000\nExecReload=/bin/sh -c "echo reloaded >> /run/toque-e2e-reload.log"\n' > /etc/systemd/system/toque-e2e-r.service &&
printf '[Service]\nExecStart=/bin/sleep 1000\n' > /etc/systemd/system/toque-e2e-n.service &&
systemctl daemon-reload && systemctl start toque-e2e-r toque-e2e-n`)
	s := b.scenario("reload")
	s.recipe(`service "toque-e2e-r" {
  action = "reload"
}
`)
	r := s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	if !strings.Contains(r.stdout, "# service[toque-e2e-r] will run: reload runs on every apply") || !strings.Contains(r.stdout, `! service "toque-e2e-r"`) {
		t.Errorf("plan of a reload:\n%s", r.stdout)
	}
	s.toque(0, "apply", "plan.out")
	if got := b.sh("cat /run/toque-e2e-reload.log"); got != "reloaded" {
		t.Errorf("reload log %q", got)
	}
	s.recipe(`service "toque-e2e-n" {
  action = "reload"
}
`)
	if r := s.toque(1, "plan"); !strings.Contains(flat(r.stderr), "toque-e2e-n.service cannot reload its configuration (it has no ExecReload=): use restart") {
		t.Errorf("reload without ExecReload:\n%s", r)
	}
	s.recipe(`service "toque-e2e-r" {
  action = "stop"
}
`)
	s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	s.toque(0, "apply", "plan.out")
	if got := b.sh("systemctl is-active toque-e2e-r || true"); got != "inactive" {
		t.Errorf("after stop: %s", got)
	}
	if r := s.toque(0, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "already inactive (dead)") && !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan of stop:\n%s", r.stdout)
	}
}

// A plan goes stale when someone else changes the unit between plan and
// apply: a running service planned as a no-op is stopped by hand.
func testServiceStale(b *box) {
	t := b.t
	b.sh(`printf '[Service]\nExecStart=/bin/sleep 1000\n' > /etc/systemd/system/toque-e2e-s.service && systemctl daemon-reload && systemctl start toque-e2e-s`)
	s := b.scenario("stale")
	s.recipe(`service "toque-e2e-s" {
  action = "start"
}

file "/etc/toque-e2e-stale" {
  content = "x\n"
}
`)
	s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	b.sh("systemctl stop toque-e2e-s")
	r := s.toque(3, "apply", "plan.out")
	if !strings.Contains(r.stderr, "service[toque-e2e-s]") || !strings.Contains(r.stderr, "active_state") {
		t.Errorf("the stale error does not name the service and what changed:\n%s", r)
	}
	if b.sh("test -e /etc/toque-e2e-stale && echo changed || echo untouched") != "untouched" {
		t.Error("a stale plan changed the host")
	}
}

// Three new unit files and their starts: one daemon-reload, after the
// last unit file and before the first start.
func testOneDaemonReload(b *box) {
	t := b.t
	s := b.scenario("reloads")
	var src strings.Builder
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&src, "systemd_unit \"toque-e2e-%d.service\" {\n  content = \"[Service]\\nExecStart=/bin/sleep 100%d\\n\"\n}\n\n", i, i)
	}
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&src, "service \"toque-e2e-%d\" {\n  action = \"start\"\n}\n\n", i)
	}
	s.recipe(src.String())
	s.toque(0, "plan", "-out=plan.out")
	s.processes()
	s.toque(0, "apply", "plan.out")
	log, _ := os.ReadFile(filepath.Join(b.dir, s.name, "toque.log"))
	order := regexp.MustCompile(`starting process: argv=\["systemctl", "(daemon-reload|start)`).FindAllStringSubmatch(string(log), -1)
	var verbs []string
	for _, m := range order {
		verbs = append(verbs, m[1])
	}
	if got := strings.Join(verbs, " "); got != "daemon-reload start start start" {
		t.Errorf("systemctl ran %q, want one daemon-reload before the starts", got)
	}
	if got := b.sh("systemctl is-active toque-e2e-1 toque-e2e-2 toque-e2e-3"); got != "active\nactive\nactive" {
		t.Errorf("units: %q", got)
	}
	if r := s.toque(0, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
}

// examples/service, as its comment says to run it.
func testServiceExample(b *box) {
	t := b.t
	s := b.scenario("example")
	src, err := filepath.Glob("../examples/service/*")
	if err != nil || len(src) == 0 {
		t.Fatalf("examples/service: %v", err)
	}
	for _, f := range src {
		copyFile(t, f, filepath.Join(b.dir, s.name, "recipes", filepath.Base(f)), 0o644)
	}
	r := s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	if !strings.Contains(r.stdout, `(action enable, 1 of 2)`) || !strings.Contains(r.stdout, "service[toque-hello] will run: notified by") {
		t.Errorf("plan of the example:\n%s", r.stdout)
	}
	s.toque(0, "apply", "plan.out")
	if got := b.sh("cat /run/toque-hello/greeting; systemctl is-enabled toque-hello"); got != "hello from toque\nenabled" {
		t.Errorf("after apply: %q", got)
	}
	if r := s.toque(0, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
	cmd := func(env string, want int, args ...string) result {
		t.Helper()
		c := s.b.exec(append([]string{"env", env, boxDir + "/toque", "-chdir=" + boxDir + "/" + s.name + "/recipes"}, args...)...)
		c.Env = append(os.Environ(), "TOQUE_STATE_DIR="+boxDir+"/"+s.name+"/state", "TOQUE_HOST_LOCK="+boxDir+"/"+s.name+"/host.lock", "NO_COLOR=1")
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		r := result{code, out.String(), errb.String()}
		if code != want {
			t.Fatalf("want exit %d, got %s", want, r)
		}
		return r
	}
	r = cmd("HELLO_GREETING=bonjour", 2, "plan", "-detailed-exitcode", "-out="+boxDir+"/"+s.name+"/plan.out")
	if !strings.Contains(r.stdout, "+GREETING=bonjour") || !strings.Contains(r.stdout, "service[toque-hello] will run: notified by template[/etc/toque-hello.conf] (delayed)") {
		t.Errorf("plan of a new greeting:\n%s", r.stdout)
	}
	cmd("HELLO_GREETING=bonjour", 0, "apply", boxDir+"/"+s.name+"/plan.out")
	if got := b.sh("cat /run/toque-hello/greeting"); got != "bonjour" {
		t.Errorf("greeting after the restart: %q", got)
	}
}

// Speed: a plan of services that are already enabled and running reads
// them all with one systemctl show, and nothing else. With
// TOQUE_BENCH_RUNS set (make bench-services: 21), the plan of 100 such
// services is timed that many times inside the container, and the median
// logged; otherwise 20 services, planned once.
func testManyServices(b *box) {
	t := b.t
	count, runs := 20, 0
	if n, err := strconv.Atoi(os.Getenv("TOQUE_BENCH_RUNS")); err == nil && n > 0 {
		count, runs = 100, n
	}
	b.sh(`names=$(seq -f 'toque-b%g.service' 1 ` + strconv.Itoa(count) + `)
for n in $names; do printf '[Service]\nExecStart=/bin/sleep 1000\n[Install]\nWantedBy=multi-user.target\n' > /etc/systemd/system/$n; done
systemctl daemon-reload && systemctl enable --no-reload $names 2>/dev/null && systemctl daemon-reload && systemctl start $names`)
	s := b.scenario("hundred")
	var src strings.Builder
	for i := 1; i <= count; i++ {
		fmt.Fprintf(&src, "service \"toque-b%d\" {\n  action = [\"enable\", \"start\"]\n}\n\n", i)
	}
	s.recipe(src.String())
	s.shim = true
	r := s.toque(0, "plan", "-detailed-exitcode")
	s.shim = false
	if !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("plan of %d services in their desired state:\n%s", count, r.stdout)
	}
	if got := s.calls(); got != "show" {
		t.Errorf("the plan ran systemctl %q, want one show", got)
	}
	if runs == 0 {
		return
	}
	in := boxDir + "/" + s.name
	out := b.sh(fmt.Sprintf(`cd %s && for i in $(seq %d); do s=$(date +%%s%%N); TOQUE_STATE_DIR=%s/state TOQUE_HOST_LOCK=%s/host.lock %s/toque -chdir=%s/recipes plan >/dev/null || exit 1; e=$(date +%%s%%N); echo $(( (e-s)/1000 )); done`, in, runs, in, in, boxDir, in))
	var us []int
	for _, f := range strings.Fields(out) {
		n, _ := strconv.Atoi(f)
		us = append(us, n)
	}
	sort.Ints(us)
	t.Logf("plan of %d services in their desired state, %d runs: median %.1f ms, min %.1f ms, max %.1f ms; 1 process (systemctl show)",
		count, len(us), float64(us[len(us)/2])/1000, float64(us[0])/1000, float64(us[len(us)-1])/1000)
}
