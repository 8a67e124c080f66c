package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkE2EPlanAccounts times `toque plan` of 100 users and 50 groups
// that are all in their desired state (and, in the second case, 20 cron
// files and 20 kernel parameters besides), as a whole process run in a
// namespace over /etc whose databases hold them. It reports the
// processes toque started (procs/op: every process goes through
// internal/shellexec, which logs each at debug level) — none, since each
// type reads files, not tools — and toque's CPU time (cpu-ms/plan: user
// and system, which a busy machine does not inflate as it does the wall
// time).
//
//	go test -run '^$' -bench PlanAccounts -benchtime 20x .
func BenchmarkE2EPlanAccounts(b *testing.B) {
	for _, c := range []struct {
		name        string
		cron, sysct int
	}{{"users=100,groups=50", 0, 0}, {"users=100,groups=50,cron_d=20,sysctl=20", 20, 20}} {
		b.Run(c.name, func(b *testing.B) { benchPlanAccounts(b, 100, 50, c.cron, c.sysct) })
	}
}

func benchPlanAccounts(b *testing.B, users, groups, crons, sysctls int) {
	ns := newHostNS(b, nil, nsOptions{net: true})
	dir := b.TempDir()
	os.Chmod(dir, 0o755)
	var recipe, passwd, shadow, group, gshadow, setup strings.Builder
	for i := 0; i < users; i++ {
		fmt.Fprintf(&passwd, "bench%d:x:%d:%d:Bench %d:/home/bench%d:/bin/sh\n", i, 12000+i, 12000+i, i, i)
		fmt.Fprintf(&shadow, "bench%d:%s:19000:0:99999:7:::\n", i, e2eHash)
		fmt.Fprintf(&group, "bench%d:x:%d:\n", i, 12000+i)
		fmt.Fprintf(&gshadow, "bench%d:!::\n", i)
		fmt.Fprintf(&recipe, "user \"bench%d\" {\n  uid      = %d\n  gid      = \"bench%d\"\n  comment  = \"Bench %d\"\n  home     = \"/home/bench%d\"\n  shell    = \"/bin/sh\"\n  password = \"%s\"\n}\n", i, 12000+i, i, i, i, e2eHash)
	}
	for j := 0; j < groups; j++ {
		var members []string
		for k := 0; k < 5; k++ {
			members = append(members, fmt.Sprintf("bench%d", (j*5+k)%users))
		}
		fmt.Fprintf(&group, "benchgrp%d:x:%d:%s\n", j, 15000+j, strings.Join(members, ","))
		fmt.Fprintf(&gshadow, "benchgrp%d:!::%s\n", j, strings.Join(members, ","))
		fmt.Fprintf(&recipe, "group \"benchgrp%d\" {\n  gid     = %d\n  members = [\"%s\"]\n}\n", j, 15000+j, strings.Join(members, `", "`))
	}
	for i := 0; i < crons; i++ {
		fmt.Fprintf(&recipe, "cron_d \"bench_%d\" {\n  minute  = \"%d\"\n  command = \"true\"\n  user    = \"bench%d\"\n}\n", i, i, i)
	}
	keys := []string{"net.ipv4.ip_forward", "net.ipv4.tcp_syncookies", "net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter", "net.ipv4.icmp_echo_ignore_broadcasts",
		"net.ipv4.conf.all.accept_redirects", "net.ipv4.conf.default.accept_redirects", "net.ipv4.conf.all.send_redirects", "net.ipv4.conf.default.send_redirects", "net.ipv4.conf.all.accept_source_route",
		"net.ipv4.conf.default.accept_source_route", "net.ipv4.conf.all.log_martians", "net.ipv4.tcp_timestamps", "net.ipv4.ip_default_ttl", "net.ipv6.conf.all.forwarding",
		"net.ipv6.conf.all.accept_ra", "net.ipv6.conf.default.accept_ra", "net.ipv4.tcp_fin_timeout", "net.core.somaxconn", "net.ipv4.tcp_keepalive_time"}
	for i := 0; i < sysctls && i < len(keys); i++ {
		fmt.Fprintf(&recipe, "sysctl %q {\n  value = \"@%s\"\n}\n", keys[i], keys[i])
	}
	files := map[string]string{"passwd": passwd.String(), "shadow": shadow.String(), "group": group.String(), "gshadow": gshadow.String()}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		fmt.Fprintf(&setup, "cat %s >> /etc/%s\n", p, name)
	}
	// Each cron file and kernel parameter as the recipe has it: the live
	// value, persisted.
	fmt.Fprintf(&setup, "mkdir -p /etc/sysctl.d /etc/cron.d\n")
	for i := 0; i < sysctls && i < len(keys); i++ {
		fmt.Fprintf(&setup, "v=$(cat /proc/sys/%s | tr -s ' \\t' '  '); sed -i \"s|@%s\\\"|$v\\\"|\" %s\n", strings.ReplaceAll(keys[i], ".", "/"), keys[i], filepath.Join(dir, "bench.hcl"))
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.hcl"), []byte(recipe.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := ns.cmd("sh", "-c", setup.String()).CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	isolation := []string{"TOQUE_STATE_DIR=" + filepath.Join(dir, "state"), "TOQUE_HOST_LOCK=" + filepath.Join(dir, "run", "apply.lock")}
	var cpu time.Duration
	run := func(extra ...string) ([]byte, error) {
		cmd := ns.cmd(toqueBin, "-chdir="+dir, "plan", "-detailed-exitcode", "-no-color")
		cmd.Env = append(os.Environ(), append(isolation, extra...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if cmd.ProcessState != nil {
			// nsenter execs toque: this is toque's own CPU time.
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		return out.Bytes(), err
	}
	if crons+sysctls > 0 {
		// Bring the cron files and the persisted parameters into their
		// desired state once.
		cmd := ns.cmd(toqueBin, "-chdir="+dir, "plan", "-out="+filepath.Join(dir, "p.out"))
		cmd.Env = append(os.Environ(), isolation...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		cmd = ns.cmd(toqueBin, "apply", filepath.Join(dir, "p.out"))
		cmd.Env = append(os.Environ(), isolation...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
	out, err := run("TOQUE_LOG=debug")
	if err != nil {
		b.Fatalf("the plan is not a no-op (%v):\n%s", err, out)
	}
	procs := bytes.Count(out, []byte("starting process"))
	b.ResetTimer()
	cpu = 0
	start := time.Now()
	for n := 0; n < b.N; n++ {
		if out, err := run(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/plan")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/plan")
	b.ReportMetric(float64(procs), "procs/op")
}

const e2eHash = "$6$toquesalt$B/z3PiLDhw/N3ppNyPd9SHpsFAjF4qI6WvXWusj6bTN1w3XDVcvZeBwPDoEbUu8EbLf2og0ZQ3oC9BlluTbtB0"
