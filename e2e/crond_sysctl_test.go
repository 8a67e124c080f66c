package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// cron_d end to end: a job for a user created earlier in the same plan,
// a second plan is a no-op, a changed hour is a diff, someone else's edit
// makes the plan stale, delete.
func TestE2ECronD(t *testing.T) {
	e := newEnv(t)
	ns := newHostNS(t, e, nsOptions{})
	recipe := func(hour string) string {
		return `user "cronner" {
  shell = "/bin/sh"
}

cron_d "toque_job" {
  minute  = "*/5"
  hour    = "` + hour + `"
  command = "date +\\%s >> /tmp/toque-job.log"
  user    = "cronner"
  mailto  = ""
}
`
	}
	e.recipe("cron.hcl", recipe("*"))
	r := ns.must(0, "plan", "-out=plan.out")
	for _, want := range []string{"# cron_d[toque_job] will be created", `+*/5 * * * * cronner date +\%s >> /tmp/toque-job.log`, `+ mode    = "0644"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	ns.must(0, "apply", "plan.out")
	if got := ns.sh("stat -c '%U:%G %a' /etc/cron.d/toque_job; tail -n 1 /etc/cron.d/toque_job"); got != "root:root 644\n*/5 * * * * cronner date +\\%s >> /tmp/toque-job.log\n" {
		t.Errorf("the file: %q", got)
	}
	if r := ns.must(0, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}

	e.recipe("cron.hcl", recipe("3"))
	r = ns.must(0, "plan", "-out=plan.out")
	if !strings.Contains(r.stdout, "-*/5 * * * * cronner") || !strings.Contains(r.stdout, "+*/5 3 * * * cronner") {
		t.Errorf("plan of a new hour:\n%s", r.stdout)
	}
	ns.must(0, "apply", "plan.out")

	e.recipe("cron.hcl", recipe("4"))
	ns.must(0, "plan", "-out=plan.out")
	ns.sh("echo '# mine' >> /etc/cron.d/toque_job")
	if r := ns.must(3, "apply", "plan.out"); !strings.Contains(r.stderr, "cron_d[toque_job]: content") {
		t.Errorf("stale apply:\n%s", r)
	}

	e.recipe("cron.hcl", `cron_d "toque_job" {
  action = "delete"
}
`)
	ns.must(0, "plan", "-out=plan.out")
	ns.must(0, "apply", "plan.out")
	if out, code := ns.shStatus("test -e /etc/cron.d/toque_job"); code == 0 {
		t.Errorf("not deleted: %s", out)
	}
}

// The real cron accepts what toque writes. Debian's cron reads every
// file of /etc/cron.d when it starts, logging to syslog each file it
// ignores, then runs the @reboot jobs: toque's files must draw no error
// (a control file that cron refuses proves the log is heard), and the
// @reboot job toque wrote runs, with its variables as the recipe says
// (quoted, empty, with quotes inside) and its \% a %.
func TestE2ECronAcceptsWhatToqueWrites(t *testing.T) {
	e := newEnv(t)
	testenv.MustHave(t, testenv.Cron)
	ns := newHostNS(t, e, nsOptions{cron: true})
	marker := filepath.Join(e.root, "ran")
	e.recipe("cron.hcl", `cron_d "toque_every_minute" {
  minute      = "*/2"
  hour        = "1-5,22"
  weekday     = "mon-fri"
  month       = "jan,dec"
  command     = "echo minute $(date +\\%s)"
  mailto      = ""
  path        = "/usr/bin:/bin"
  shell       = "/bin/sh"
  comment     = "accepted by cron"
  environment = { A = "  padded", B = "both \" and", C = "\"quoted", D = "", E = "a=b # c" }
}

cron_d "toque_at_boot" {
  time        = "reboot"
  command     = "echo \"[$A|$B|$C|$D|$E|$(date +\\%Y)]\" > `+marker+`"
  mailto      = ""
  environment = { A = "  padded", B = "both \" and", C = "\"quoted", D = "", E = "a=b # c" }
}
`)
	ns.must(0, "plan", "-out=plan.out")
	ns.must(0, "apply", "plan.out")

	// Only toque's files, and the control; no host job may run here.
	ns.sh(`for f in /etc/cron.d/*; do case "$f" in /etc/cron.d/toque_*) ;; *) rm -f "$f";; esac; done
: > /etc/crontab
rm -rf /var/spool/cron/crontabs/*
printf '61 * * * * root true\n' > /etc/cron.d/control_bad && chmod 644 /etc/cron.d/control_bad`)

	sock := filepath.Join(ns.dir, "log.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	os.Chmod(sock, 0o666)
	ns.sh("ln -sf " + sock + " /dev/log")
	var mu sync.Mutex
	var logged []string
	started := make(chan struct{})
	go func() {
		buf := make([]byte, 8192)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			msg := string(buf[:n])
			mu.Lock()
			logged = append(logged, msg)
			mu.Unlock()
			if strings.Contains(msg, "Running @reboot jobs") {
				close(started)
			}
		}
	}()
	cron := ns.cmd("cron", "-f", "-L", "15")
	if err := cron.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cron.Process.Kill()
		cron.Wait()
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatalf("cron did not start; syslog:\n%s", strings.Join(logged, "\n"))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(marker); err == nil && strings.HasSuffix(string(b), "]\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the @reboot job did not run; syslog:\n%s", strings.Join(logged, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	log := strings.Join(logged, "\n")
	mu.Unlock()
	if !strings.Contains(log, "/etc/cron.d/control_bad") {
		t.Fatalf("cron's complaint about the control file was not heard; syslog:\n%s", log)
	}
	for _, line := range logged {
		if strings.Contains(line, "toque_") && (strings.Contains(line, "ERROR") || strings.Contains(line, "Error") || strings.Contains(line, "INSECURE")) {
			t.Errorf("cron refused a file toque wrote: %s", line)
		}
	}
	year := time.Now().Format("2006")
	if got, _ := os.ReadFile(marker); string(got) != `[  padded|both " and|"quoted||a=b # c|`+year+"]\n" {
		t.Errorf("the job saw %q", got)
	}
}

// sysctl end to end, in a network namespace of its own: set and
// persisted, a no-op, changed, made stale by someone's sysctl -w, removed;
// the host's value never moves.
func TestE2ESysctl(t *testing.T) {
	e := newEnv(t)
	hostValue, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Fatalf("this kernel has no IPv4 forwarding switch: %v", err)
	}
	ns := newHostNS(t, e, nsOptions{net: true})
	t.Cleanup(func() {
		if now, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); string(now) != string(hostValue) {
			t.Errorf("the host's ip_forward moved: %q, was %q", now, hostValue)
		}
	})
	conf := "/etc/sysctl.d/99-toque-net.ipv4.ip_forward.conf"
	recipe := func(v string) string {
		return `sysctl "net/ipv4/ip_forward" {
  value = ` + v + `
}
sysctl "net.ipv4.ip_local_port_range" {
  value = "32768    60999"
}
`
	}
	ns.sh("sysctl -w net.ipv4.ip_forward=0 net.ipv4.ip_local_port_range='32768 60999' >/dev/null")
	e.recipe("sysctl.hcl", recipe("1"))
	r := ns.must(0, "plan", "-out=plan.out")
	if !strings.Contains(r.stdout, `~ value = "0" -> "1"`) || !strings.Contains(r.stdout, "Plan: 0 to create, 2 to update") {
		t.Errorf("plan:\n%s", r.stdout)
	}
	ns.must(0, "apply", "plan.out")
	if got := ns.sh("cat /proc/sys/net/ipv4/ip_forward; tail -n 1 " + conf + "; stat -c '%U %a' " + conf); got != "1\nnet.ipv4.ip_forward = 1\nroot 644\n" {
		t.Errorf("after apply: %q", got)
	}
	if r := ns.must(0, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
	// What toque wrote is what sysctl --system loads at boot.
	if got := ns.sh("sysctl -w net.ipv4.ip_forward=0 >/dev/null; sysctl -p " + conf + " >/dev/null; cat /proc/sys/net/ipv4/ip_forward"); got != "1\n" {
		t.Errorf("sysctl -p of the file: %q", got)
	}

	e.recipe("sysctl.hcl", recipe("0"))
	ns.must(0, "plan", "-out=plan.out")
	ns.sh("sysctl -w net.ipv4.ip_forward=1 >/dev/null; echo 2 > /proc/sys/net/ipv4/ip_forward 2>/dev/null || true")
	ns.sh("sysctl -w net.ipv4.ip_local_port_range='1024 65000' >/dev/null")
	if r := ns.must(3, "apply", "plan.out"); !strings.Contains(r.stderr, "sysctl[net.ipv4.ip_local_port_range]: value") {
		t.Errorf("stale apply:\n%s", r)
	}
	ns.sh("sysctl -w net.ipv4.ip_local_port_range='32768 60999' >/dev/null")
	ns.must(0, "plan", "-out=plan.out")
	ns.must(0, "apply", "plan.out")
	if got := ns.sh("cat /proc/sys/net/ipv4/ip_forward"); got != "0\n" {
		t.Errorf("changed to 0: %q", got)
	}

	e.recipe("sysctl.hcl", `sysctl "net.ipv4.ip_forward" {
  action = "remove"
}
`)
	ns.must(0, "plan", "-out=plan.out")
	ns.must(0, "apply", "plan.out")
	if out, code := ns.shStatus("test -e " + conf); code == 0 {
		t.Errorf("not removed: %s", out)
	}
}
