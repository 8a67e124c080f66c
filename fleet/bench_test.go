package fleet_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toquehq/toque/fleet/fleetlab"
	"github.com/toquehq/toque/internal/testenv"
)

// The speed of toque fleet on a lab of 20 hosts (make bench): the
// quickstart example planned by one host's toque plan, by toque fleet
// plan over 1 and over 20 hosts (warm: the agent and the recipes are on
// the hosts, and the masters of the previous run are up), and the
// equivalent playbook run by ansible-playbook --check --diff (warm: its
// ControlPersist masters stay up between runs). Each reports the median
// wall time and CPU time of its runs (-benchtime Nx: N runs, after one run
// to warm up); the fleet plans also how many ssh processes a warm run
// starts, and how many of them are masters. ansible-playbook is Debian's ansible-core; without it, that
// benchmark skips.

const benchHosts = 20

var (
	benchOnce sync.Once
	bench     *benchLab
	benchErr  error
)

type benchLab struct {
	f   *labFixture
	lab *fleetlab.Lab
	dir string // the inventory, the playbook
}

// benchLabFixture is the benchmarks' fixture, nil when none ran.
func benchLabFixture() *labFixture {
	if bench == nil {
		return nil
	}
	return bench.f
}

func benchFixture(b *testing.B) *benchLab {
	b.Helper()
	testenv.MustHave(b, testenv.Root, testenv.Unshare, testenv.Nsenter, testenv.Overlay, testenv.NetNS, testenv.Sshd)
	benchOnce.Do(func() { bench, benchErr = startBench() })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return bench
}

func startBench() (*benchLab, error) {
	f, err := startFixtureHosts(nil)
	if err != nil {
		return nil, err
	}
	var aliases []string
	for i := 1; i <= benchHosts; i++ {
		aliases = append(aliases, fmt.Sprintf("node-%02d", i))
	}
	l, err := fleetlab.Start(filepath.Join(f.dir, "benchlab"), aliases)
	if err != nil {
		return nil, err
	}
	f.lab = l
	bl := &benchLab{f: f, lab: l, dir: filepath.Join(f.dir, "bench")}
	_, self, _, _ := runtime.Caller(0)
	quickstart := filepath.Join(filepath.Dir(self), "..", "examples", "quickstart")
	files := map[string]string{
		"fleet.hcl": fmt.Sprintf(`ssh_config = %q
recipes    = %q
hosts      = [%s]
environment = {
  QUICKSTART_ROOT = "/srv/toque-quickstart"
  TOQUE_STATE_DIR = "/var/lib/toque-bench"
  TOQUE_HOST_LOCK = "/run/toque-bench/apply.lock"
}
rollout { parallel = %d }
`, l.SSHConfig, quickstart, `"`+strings.Join(aliases, `", "`)+`"`, benchHosts),
		"hosts.ini": "[all]\n" + strings.Join(aliases, "\n") + "\n",
		"site.conf.j2": `# site.conf, written by the quickstart
listen {{ site_port }}
root   {{ root }}
`,
		"quickstart.yml": `- hosts: all
  gather_facts: false
  vars:
    root: /srv/ansible-quickstart
    title: toque quickstart
    site_port: 9090
  tasks:
    - file: { path: "{{ root }}", state: directory, mode: "0755" }
    - file: { path: "{{ root }}/www", state: directory, mode: "0755" }
    - copy: { dest: "{{ root }}/www/index.html", content: "<h1>{{ title }} on {{ inventory_hostname }}</h1>\n", mode: "0644" }
    - template: { src: site.conf.j2, dest: "{{ root }}/site.conf", mode: "0640" }
    - file: { src: "{{ root }}/www", dest: "{{ root }}/current", state: link, force: true }
`,
	}
	for name, content := range files {
		p := filepath.Join(bl.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	return bl, nil
}

// median is the middle of the durations, in milliseconds.
func median(ds []time.Duration) float64 {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	m := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		m = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return float64(m) / float64(time.Millisecond)
}

// timeRuns runs cmd once to warm up, then b.N times, and reports the
// median wall time and the median CPU time of the command with the
// processes it waited for (ssh clients; not the hosts, nor the masters
// once in the background), steadier than wall time on a shared machine.
func timeRuns(b *testing.B, mk func() *exec.Cmd, okCodes ...int) {
	b.Helper()
	var cpus []time.Duration
	once := func() time.Duration {
		cmd := mk()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		begin := time.Now()
		err := cmd.Run()
		d := time.Since(begin)
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			b.Fatal(err)
		}
		ok := code == 0
		for _, c := range okCodes {
			ok = ok || code == c
		}
		if !ok {
			b.Fatalf("%v: exit %d\n%s", cmd.Args, code, out.String())
		}
		cpus = append(cpus, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		return d
	}
	once()
	cpus = nil
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ds = append(ds, once())
	}
	b.StopTimer()
	b.ReportMetric(median(ds), "ms-median")
	b.ReportMetric(median(cpus), "cpu-ms-median")
	b.ReportMetric(0, "ns/op")
}

// countSSH runs a warm fleet command once more with a debug log and
// reports how many ssh processes it ran and how many masters it started
// (per run, whatever the load).
func countSSH(b *testing.B, cmd *exec.Cmd) {
	b.Helper()
	cmd.Env = append(cmd.Env, "TOQUE_LOG=debug")
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		b.Fatal(err)
	}
	b.ReportMetric(float64(strings.Count(string(out), "ssh ran:")), "ssh-procs/run")
	b.ReportMetric(float64(strings.Count(string(out), "ssh ran: op=master")), "masters/run")
}

func (bl *benchLab) toque(args ...string) *exec.Cmd {
	cmd := bl.lab.Command(bl.f.bin, args...)
	cmd.Dir = bl.dir
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + bl.dir,
		"XDG_RUNTIME_DIR=" + bl.dir, "TOQUE_AGENT_DIR=" + bl.f.agents, "NO_COLOR=1",
		"TOQUE_STATE_DIR=" + filepath.Join(bl.dir, "state"), "TOQUE_HOST_LOCK=" + filepath.Join(bl.dir, "apply.lock")}
	return cmd
}

// BenchmarkQuickstartPlanOneHost is toque plan of the quickstart, run on
// one host of the lab: what one host's plan costs.
func BenchmarkQuickstartPlanOneHost(b *testing.B) {
	bl := benchFixture(b)
	_, self, _, _ := runtime.Caller(0)
	quickstart := filepath.Join(filepath.Dir(self), "..", "examples", "quickstart")
	h := bl.lab.Hosts[0]
	timeRuns(b, func() *exec.Cmd {
		cmd := h.ExecCommand("env", "QUICKSTART_ROOT=/srv/toque-quickstart", "TOQUE_STATE_DIR=/var/lib/toque-bench", bl.f.bin, "-chdir="+quickstart, "plan", "-no-color")
		return cmd
	})
}

// BenchmarkQuickstartFleetPlan1 is toque fleet plan -out of the
// quickstart on one host, warm.
func BenchmarkQuickstartFleetPlan1(b *testing.B) {
	bl := benchFixture(b)
	timeRuns(b, func() *exec.Cmd { return bl.toque("fleet", "plan", "-limit=node-01", "-out=one.plan") })
	countSSH(b, bl.toque("fleet", "plan", "-limit=node-01", "-out=one.plan"))
}

// kexes are the key exchanges the 20-host benchmarks run with: OpenSSH
// 9's default (sntrup761x25519-sha512, post-quantum, about 80 ms of CPU
// per side and connection here) and curve25519-sha256, which a
// configuration may choose.
var kexes = []string{"default", "curve25519-sha256"}

func withKex(b *testing.B, bl *benchLab, kex string) {
	b.Helper()
	lines := []string{}
	if kex != "default" {
		lines = append(lines, "KexAlgorithms "+kex)
	}
	if err := bl.lab.SetCommon(lines...); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkQuickstartFleetPlan20 is toque fleet plan -out of the
// quickstart on the 20 hosts, warm.
func BenchmarkQuickstartFleetPlan20(b *testing.B) {
	bl := benchFixture(b)
	for _, kex := range kexes {
		b.Run("kex="+kex, func(b *testing.B) {
			withKex(b, bl, kex)
			timeRuns(b, func() *exec.Cmd { return bl.toque("fleet", "plan", "-out=fleet.plan") })
			countSSH(b, bl.toque("fleet", "plan", "-out=fleet.plan"))
		})
	}
}

// BenchmarkQuickstartAnsibleCheck20 is ansible-playbook --check --diff of
// the equivalent playbook on the same 20 hosts (20 forks, pipelining,
// no facts gathered), warm.
func BenchmarkQuickstartAnsibleCheck20(b *testing.B) {
	bl := benchFixture(b)
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		b.Skip("needs ansible-playbook (Debian: apt-get install ansible-core); only the benchmarks use it")
	}
	for _, kex := range kexes {
		b.Run("kex="+kex, func(b *testing.B) {
			withKex(b, bl, kex)
			timeRuns(b, func() *exec.Cmd {
				cmd := bl.lab.Command("ansible-playbook", "-i", "hosts.ini", "-f", fmt.Sprint(benchHosts), "--check", "--diff", "quickstart.yml")
				cmd.Dir = bl.dir
				cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + bl.dir, "LANG=C.UTF-8",
					"ANSIBLE_SSH_ARGS=-F " + bl.lab.SSHConfig + " -o ControlMaster=auto -o ControlPersist=60s",
					"ANSIBLE_PIPELINING=true", "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3", "ANSIBLE_NOCOLOR=1", "ANSIBLE_LOCAL_TEMP=" + filepath.Join(bl.dir, "ansible-tmp")}
				return cmd
			})
		})
	}
}
