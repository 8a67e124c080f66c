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

// The real cron accepts what toque writes. Debian's cron reads every
// file of /etc/cron.d when it starts, logging to syslog each file it
// ignores, then runs the @reboot jobs: toque's files must draw no error
// (a control file that cron refuses proves the log is heard), and the
// @reboot job toque wrote runs, with its variables as the recipe says
// (quoted, empty, with quotes inside) and its \% a %.
func TestE2ECronAcceptsWhatToqueWrites(t *testing.T) {
	t.Parallel()
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
