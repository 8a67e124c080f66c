package packages

// TestFreshHostInContainer is issue 22's yardstick, end to end: on a
// fresh host, "package → its configuration → its service, with a
// notification from the configuration to the service" converges in ONE
// `toque plan` and ONE `toque apply`, the plan being exact (the template
// shows its diff against the configuration file the package ships, the
// file under a directory the package creates says so, the service is
// planned from the unit the package ships), and the next plan says "No
// changes.".
//
// It runs the toque binary in a booted systemd-nspawn container (tier C
// of /work/shared/notes/testing-host-resources.md): this host's root
// under an overlay whose changes vanish with the container (mounted in a
// private mount namespace of its own), so real apt, dpkg and systemd act
// on the container alone, with no network: the packages are built here
// with dpkg-deb and served from a file: repository. The test checks that
// the machine's dpkg status, apt configuration and unit tree are as they
// were.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/debtest"
	"github.com/toquehq/toque/internal/testenv"
)

// webPkgs are a web server and its common files, as Debian splits nginx:
// the common package ships the configuration (a conffile) and its
// directories, the server the unit and a debhelper-style postinst.
var webPkgs = []debtest.Pkg{
	{Name: "toque-web-common", Version: "1.0",
		Files: map[string]string{
			"etc/toque-web/toque-web.conf":  "greeting = hello from the package\nport = 8080\n",
			"usr/share/toque-web/index.txt": "it works\n",
		},
		Dirs:      []string{"etc/toque-web/sites"},
		Conffiles: []string{"/etc/toque-web/toque-web.conf"},
		// The account the server runs as, made by the maintainer script.
		Postinst: `if [ "$1" = configure ] && ! getent passwd toque-web >/dev/null; then
	adduser --quiet --system --group --no-create-home --home /nonexistent toque-web
fi`},
	{Name: "toque-web", Version: "1.0", Depends: "toque-web-common",
		Files: map[string]string{"lib/systemd/system/toque-web.service": `[Unit]
Description=toque's fixture web server
[Service]
ExecStart=/bin/sh -c 'cp /etc/toque-web/toque-web.conf /run/toque-web.seen; exec sleep infinity'
ExecReload=/bin/sh -c 'cp /etc/toque-web/toque-web.conf /run/toque-web.seen; date +%%s%%N >> /run/toque-web.reloads'
[Install]
WantedBy=multi-user.target
`},
		Postinst: `if [ "$1" = configure ]; then
	deb-systemd-helper unmask 'toque-web.service' >/dev/null || true
	if deb-systemd-helper --quiet was-enabled 'toque-web.service'; then
		deb-systemd-helper enable 'toque-web.service' >/dev/null || true
	fi
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload >/dev/null || true
		deb-systemd-invoke start 'toque-web.service' >/dev/null || true
	fi
fi`},
}

const webRecipe = `package "toque-web" {}

# The package's configuration file, replaced: the plan shows the diff
# against the file toque-web-common ships.
template "/etc/toque-web/toque-web.conf" {
  source    = "toque-web.conf.tpl"
  variables = { greeting = "hello from toque" }
  notifies "reload" {
    resource = "service[toque-web]"
  }
}

# A new file in a directory the package creates, owned by the account its
# maintainer script makes.
file "/etc/toque-web/sites/default.conf" {
  content = "site = default\n"
  group   = "toque-web"
  mode    = "0640"
}

service "toque-web" {
  action = ["enable", "start"]
}
`

func TestFreshHostInContainer(t *testing.T) {
	testenv.MustHave(t, testenv.Root, testenv.Nspawn, testenv.Nsenter, testenv.DpkgDev)
	host := hostDigests(t)
	t.Cleanup(func() {
		if now := hostDigests(t); now != host {
			t.Errorf("the machine changed during the test:\n%s\nwas:\n%s", now, host)
		}
	})
	work := t.TempDir()
	os.Chmod(work, 0o755)
	buildToque(t, filepath.Join(work, "toque"))
	debtest.Repo(t, filepath.Join(work, "repo"), webPkgs...)
	writeRecipes(t, work, "web", map[string]string{
		"web.hcl":            webRecipe,
		"toque-web.conf.tpl": "greeting = ${greeting}\nport = 8080\n",
	})
	writeRecipes(t, work, "sysctl", map[string]string{"sysctl.hcl": sysctlRecipe})

	c := bootContainer(t, work)
	t.Run("package, its configuration, its service", func(t *testing.T) { c.t = t; testWebServer(c) })
	t.Run("a side effect the plan did not predict", func(t *testing.T) { c.t = t; testSideEffect(c) })
}

func writeRecipes(t *testing.T, work, name string, files map[string]string) {
	dir := filepath.Join(work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// testWebServer: package → configuration → service in one plan and one
// apply, then "No changes.".
func testWebServer(c *container) {
	t := c.t
	c.dir = "web"
	// apt reads only the test's repository.
	c.sh(`rm -f /etc/apt/sources.list.d/* && echo 'deb [trusted=yes] file:` + ctrDir + `/repo ./' > /etc/apt/sources.list && apt-get -q update >/dev/null`)
	if out := c.sh("dpkg-query -W -f='${db:Status-Status}' toque-web 2>/dev/null || true"); out != "" {
		t.Fatalf("toque-web is on the fresh host already: %q", out)
	}

	plan := c.toque(2, "plan", "-detailed-exitcode", "-out="+ctrDir+"/web.plan")
	for _, want := range []string{
		"+ package \"toque-web\"",
		// The template's diff is against the file the package ships.
		"-greeting = hello from the package",
		"+greeting = hello from toque",
		"the diff is against the file package[toque-web] (toque-web-common 1.0) ships",
		// The file's directory comes from the package, its group from the
		// package's maintainer script.
		"/etc/toque-web/sites: created by package[toque-web] (toque-web-common 1.0)",
		"group toque-web: created by package[toque-web] (toque-web-common 1.0), through its postinst",
		// The service is planned from the unit the package ships.
		"installed by package[toque-web] (toque-web 1.0)",
	} {
		if !strings.Contains(plan.out, want) {
			t.Errorf("the plan does not show %q:\n%s", want, plan.out)
		}
	}
	if strings.Contains(plan.out, "Error") {
		t.Fatalf("plan:\n%s", plan)
	}

	apply := c.toque(0, "apply", ctrDir+"/web.plan")
	t.Logf("plan:\n%s\napply:\n%s", plan.out, apply.out)
	if !strings.Contains(apply.out, "Apply complete!") {
		t.Errorf("apply:\n%s", apply)
	}
	if got := c.sh("dpkg-query -W -f='${Version} ${db:Status-Status}' toque-web toque-web-common"); got != "1.0 installed1.0 installed" {
		t.Errorf("packages after apply: %q", got)
	}
	if got := c.sh("stat -c '%U:%G %a' /etc/toque-web/sites/default.conf"); got != "root:toque-web 640" {
		t.Errorf("the site file: %s", got)
	}
	if got := c.sh("cat /etc/toque-web/toque-web.conf"); got != "greeting = hello from toque\nport = 8080" {
		t.Errorf("configuration after apply: %q", got)
	}
	if got := c.sh("systemctl is-enabled toque-web.service; systemctl is-active toque-web.service"); got != "enabled\nactive" {
		t.Errorf("service after apply: %q", got)
	}
	if got := c.sh("cat /run/toque-web.seen"); !strings.Contains(got, "hello from toque") {
		t.Errorf("the service runs with %q, not the recipe's configuration", got)
	}

	if !strings.Contains(apply.out, "0 failed, 0 skipped.") || strings.Contains(apply.out, "did not end as planned") {
		t.Errorf("the apply should end as planned:\n%s", apply.out)
	}

	again := c.toque(0, "plan", "-detailed-exitcode")
	if !strings.Contains(again.out, "No changes.") {
		t.Errorf("second plan:\n%s", again)
	}
}

// sysctlRecipe is issue 22's side effect: setting net.ipv4.ip_forward to
// 0 makes the kernel reset net.ipv4.conf.all.accept_redirects to 1, which
// the plan holds unchanged at 0.
const sysctlRecipe = `sysctl "net.ipv4.conf.all.accept_redirects" {
  value = "0"
}

sysctl "net.ipv4.ip_forward" {
  value = "0"
}
`

// testSideEffect: apply carries out the plan, reads every resource again,
// and says — exit 7, in the summary, the error and the report — which one
// did not end where the plan said; the next plan shows the drift.
func testSideEffect(c *container) {
	t := c.t
	c.dir = "sysctl"
	c.sh("sysctl -q -w net.ipv4.ip_forward=1 && sysctl -q -w net.ipv4.conf.all.accept_redirects=0")
	c.toque(2, "plan", "-detailed-exitcode", "-out="+ctrDir+"/sysctl.plan")
	r := c.toque(7, "apply", ctrDir+"/sysctl.plan")
	for _, want := range []string{"1 did not end as planned", "Resources did not end as planned",
		`sysctl[net.ipv4.conf.all.accept_redirects]: value: predicted "0", actual "1"`} {
		if !strings.Contains(r.out+r.err, want) {
			t.Errorf("apply does not say %q:\n%s", want, r)
		}
	}
	if got := c.sh("sysctl -n net.ipv4.conf.all.accept_redirects"); got != "1" {
		t.Fatalf("the kernel did not reset accept_redirects (%s): the scenario needs it", got)
	}
	report := c.sh("cat " + ctrDir + "/sysctl/state/reports/last.json")
	if !strings.Contains(report, `"did_not_end_as_planned": 1`) || !strings.Contains(report, `"property": "value"`) {
		t.Errorf("the report does not record it:\n%s", report)
	}
	// -verify=false skips the reading: a new plan (the drift), applied.
	c.toque(2, "plan", "-detailed-exitcode", "-out="+ctrDir+"/sysctl2.plan")
	if r := c.toque(0, "apply", "-verify=false", ctrDir+"/sysctl2.plan"); strings.Contains(r.out, "did not end as planned") {
		t.Errorf("-verify=false:\n%s", r)
	}
}

// hostDigests digests what a package test must never change on the
// machine: its dpkg status, its apt configuration and its unit tree.
func hostDigests(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, root := range []string{"/var/lib/dpkg/status", "/etc/apt", "/etc/systemd/system"} {
		h := sha256.New()
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
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
				f, _ := os.ReadFile(p)
				h.Write(f)
			}
			fmt.Fprintln(h)
			return nil
		})
		fmt.Fprintf(&b, "%s %s\n", root, hex.EncodeToString(h.Sum(nil)))
	}
	return b.String()
}

// buildToque builds the toque binary to bin (TOQUE_TEST_BINARY when set).
func buildToque(t *testing.T, bin string) {
	t.Helper()
	if pre := os.Getenv("TOQUE_TEST_BINARY"); pre != "" {
		b, err := os.ReadFile(pre)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
	cmd := exec.Command("go", "build", "-o", bin, "github.com/toquehq/toque")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building toque: %v\n%s", err, out)
	}
}

// container is a booted systemd in a systemd-nspawn container over this
// host's root, under an overlay (a tmpfs upper layer) mounted in a mount
// namespace of its own, so that every change vanishes with it; booted
// into basic.target (none of the host's services start), no network, the
// test's directory bound at ctrDir.
type container struct {
	// t is the test in hand (a subtest), top the one that booted it.
	t, top *testing.T
	// dir is the scenario's directory under ctrDir: its recipes, state
	// and logs.
	dir    string
	name   string
	cmd    *exec.Cmd
	done   chan struct{}
	leader int
	groups []string
	log    *bytes.Buffer
}

// ctrDir is where the test's directory is inside the container (not
// under /tmp, which systemd mounts a tmpfs over).
const ctrDir = "/toque-e2e"

func bootContainer(t *testing.T, dir string) *container {
	t.Helper()
	c := &container{t: t, top: t, name: fmt.Sprintf("toque-fresh-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6), done: make(chan struct{}), log: &bytes.Buffer{}}
	layers := t.TempDir()
	// The container's cgroups go below one of its own, removed at the
	// end, never the host's root cgroup.
	var procs []string
	hierarchies := []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err == nil {
		hierarchies = []string{"/sys/fs/cgroup"}
	}
	for _, h := range hierarchies {
		g := filepath.Join(h, c.name)
		if err := os.Mkdir(g, 0o755); err == nil {
			c.groups = append(c.groups, g)
			procs = append(procs, filepath.Join(g, "cgroup.procs"))
		}
	}
	script := `set -e
for p in $CGROUPS; do echo $$ > "$p"; done
mount -t tmpfs tmpfs "$LAYERS"
mkdir "$LAYERS/upper" "$LAYERS/work" "$LAYERS/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$LAYERS/upper,workdir=$LAYERS/work" "$LAYERS/root"
exec systemd-nspawn --quiet -D "$LAYERS/root" --bind="$BIND" --register=no --keep-unit --boot --console=passive --private-network -M "$NAME" -- systemd.firstboot=off systemd.unit=basic.target`
	c.cmd = exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
	c.cmd.Env = append(os.Environ(), "CGROUPS="+strings.Join(procs, " "), "LAYERS="+layers, "BIND="+dir+":"+ctrDir, "NAME="+c.name)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	start := time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("cannot start systemd-nspawn: %v", err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(c.halt)
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		select {
		case <-c.done:
			t.Fatalf("systemd-nspawn cannot boot systemd here: %s", c.log.String())
		default:
		}
		c.leader = systemdBelow(c.cmd.Process.Pid)
		if c.leader != 0 {
			out, _ := c.exec("systemctl", "is-system-running").Output()
			if s := strings.TrimSpace(string(out)); s == "running" || s == "degraded" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd did not finish booting in the container in 90 s: %s", c.log.String())
		}
	}
	t.Logf("booted systemd in a container in %v", time.Since(start).Round(time.Millisecond))
	return c
}

// systemdBelow is the process running systemd among pid's descendants (the
// container's init), 0 when none does yet.
func systemdBelow(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n)); strings.TrimSpace(string(comm)) == "systemd" {
			return n
		}
		if m := systemdBelow(n); m != 0 {
			return m
		}
	}
	return 0
}

func (c *container) exec(args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(c.leader), "-a", "--"}, args...)...)
}

// sh runs a shell command in the container and returns its output,
// failing the test when it fails.
func (c *container) sh(script string) string {
	c.t.Helper()
	out, err := c.exec("sh", "-c", script).CombinedOutput()
	if err != nil {
		c.t.Fatalf("in the container, %s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

type toqueResult struct {
	code     int
	out, err string
}

func (r toqueResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}

// toque runs toque in the container on the test's recipes, with its state
// and logs in the test's directory; want is the exit status it must have.
func (c *container) toque(want int, args ...string) toqueResult {
	c.t.Helper()
	in := ctrDir + "/" + c.dir
	cmd := c.exec(append([]string{ctrDir + "/toque", "-chdir=" + in}, args...)...)
	cmd.Env = append(os.Environ(), "TOQUE_STATE_DIR="+in+"/state", "TOQUE_HOST_LOCK="+ctrDir+"/host.lock", "NO_COLOR=1",
		"TOQUE_LOG=debug", "TOQUE_LOG_PATH="+in+"/toque.log")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	c.t.Logf("toque %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	r := toqueResult{out: out.String(), err: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	if r.code != want {
		c.t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

// halt stops the container (SIGTERM asks systemd to halt; a second ends
// it at once), then removes its cgroups and what nspawn leaves in /run.
func (c *container) halt() {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM, syscall.SIGKILL} {
		c.cmd.Process.Signal(sig)
		select {
		case <-c.done:
			c.cleanup()
			return
		case <-time.After(5 * time.Second):
		}
	}
	c.top.Errorf("the container did not end")
}

func (c *container) cleanup() {
	os.RemoveAll(filepath.Join("/run/systemd/nspawn/propagate", c.name))
	for _, g := range c.groups {
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
	}
}
