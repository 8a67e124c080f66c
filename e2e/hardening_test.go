package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// The yardstick: a published hardening baseline (examples/hardening, dev-sec's
// os-hardening) converges a fresh Debian 12 in one plan and one apply, and
// the next plan says "No changes.". The host is real: debootstrap's
// Debian 12 with systemd, cron and OpenSSH (scripts/debian-rootfs, made once
// and cached outside the repository), booted by systemd-nspawn over a
// volatile overlay of that tree and in a network namespace of its own, so
// that its /etc, mounts, packages and network parameters are its own and
// nothing it does reaches this machine or the cached tree. toque runs in it
// as in production: as root, with its default state directory and lock.

// hardeningUser is a regular account the host has before the baseline,
// with a password, so that the role's ageing and home rules have one to
// act on.
const hardeningUser = "alice"

func TestE2EHardeningExample(t *testing.T) {
	testenv.MustHave(t, testenv.Root, testenv.Nspawn, testenv.Nsenter, testenv.DpkgDev, testenv.DebianRootfs)
	start := time.Now()
	rootfs := debianRootfs(t)
	sentinel := filepath.Join(rootfs, "usr/lib/openssh/ssh-keysign")
	before := fileMode(t, sentinel)
	hostTimestamps := readTrim(t, "/proc/sys/net/ipv4/tcp_timestamps")

	b := bootExample(t, rootfs, "hardening")
	b.sh("useradd --create-home --shell /bin/bash " + hardeningUser + " && echo " + hardeningUser + ":Correct-horse-9 | chpasswd")
	booted := time.Now()
	toque := b.exampleToque

	plan := toque(0, "plan", "-out=/root/hardening.plan")
	for _, want := range []string{
		"# package[auditd] will be created",
		"+PASS_MAX_DAYS 60",
		"-account\t[success=1 new_authtok_reqd=done default=ignore]\tpam_unix.so \n",
		"# mounted: remount: hidepid=2",
		"# mounted: remount: noexec",
		`~ mode = "4755" -> "0755"`, // ssh-keysign's SUID bit
		"+net.ipv4.tcp_timestamps = 0",
		`# user[ageing]["` + hardeningUser + `"] will be updated in place`,
		"~ max_days = 99999 -> 60",
		"# resource_group[sysctl]: the guards of its",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan lacks %q", want)
		}
	}
	// Kernel-wide parameters are the container's host's: skipped, and
	// said so.
	if !strings.Contains(plan, `# sysctl[dev-sec]["kernel.kptr_restrict"] skipped: only_if`) {
		t.Errorf("the plan does not skip the kernel-wide parameters in a container")
	}
	if t.Failed() {
		t.Fatalf("the plan:\n%s", plan)
	}
	planned := time.Now()

	apply := toque(0, "apply", "/root/hardening.plan")
	if !strings.Contains(apply, "Apply complete!") || !strings.Contains(apply, " 0 failed") {
		t.Fatalf("apply:\n%s", apply)
	}
	// Every resource is as the plan said right before it converges.
	var differed []string
	lines := strings.Split(apply, "\n")
	addr := ""
	for _, l := range lines {
		switch {
		case l != "" && !strings.HasPrefix(l, " "):
			addr = strings.SplitN(l, ": ", 2)[0]
		case strings.HasPrefix(strings.TrimSpace(l), "note: differs from plan"):
			differed = append(differed, addr)
		}
	}
	if len(differed) > 0 {
		t.Errorf("resources that differed from the plan at apply: %s", strings.Join(differed, ", "))
	}
	applied := time.Now()

	// One apply converges the host: the next plan has nothing to do.
	again := toque(0, "plan", "-detailed-exitcode")
	if !strings.HasPrefix(again, "No changes.") {
		t.Fatalf("the second plan is not empty:\n%s", again)
	}

	// What the baseline did, read from the host itself.
	for _, c := range []struct{ what, script, want string }{
		{"a network parameter, now", "cat /proc/sys/net/ipv4/tcp_timestamps", "0"},
		{"and at boot", "grep -x 'net.ipv4.tcp_timestamps = 0' /etc/sysctl.d/90-dev-sec.conf && stat -c %a /etc/sysctl.d/90-dev-sec.conf", "net.ipv4.tcp_timestamps = 0\n440"},
		{"/dev/shm mounted noexec", "findmnt -no OPTIONS /dev/shm | tr , '\\n' | grep -x noexec", "noexec"},
		{"/proc's hidepid", "findmnt -no OPTIONS /proc | tr , '\\n' | grep hidepid", "hidepid=invisible"},
		{"in fstab", "grep '^proc ' /etc/fstab", "proc /proc proc rw,nosuid,nodev,noexec,relatime,hidepid=2 0 0"},
		{"login.defs", "grep -E '^(PASS_MAX_DAYS|UMASK|ENCRYPT_METHOD) ' /etc/login.defs", "UMASK 027\nPASS_MAX_DAYS 60\nENCRYPT_METHOD SHA512"},
		{"its other lines kept", "grep -c '^MAIL_DIR' /etc/login.defs", "1"},
		{"a SUID bit removed", "stat -c %a /usr/lib/openssh/ssh-keysign", "755"},
		{"su for root's group", "stat -c '%a %U:%G' /usr/bin/su", "750 root:root"},
		{"a file system disabled", "grep -v '^#' /etc/modprobe.d/disable_cramfs.conf", "install cramfs /bin/false"},
		{"PAM: no_pass_expiry, kept by pam-auth-update", "grep pam_unix /etc/pam.d/common-account", "account\t[success=1 new_authtok_reqd=done default=ignore]\tpam_unix.so no_pass_expiry"},
		{"PAM: faillock", "grep -c pam_faillock /etc/pam.d/common-auth", "2"},
		{"PAM: passwdqc", "grep -o 'pam_passwdqc.so.*' /etc/pam.d/common-password", "pam_passwdqc.so min=disabled,disabled,16,12,8"},
		{"password ageing", "getent shadow " + hardeningUser + " | cut -d: -f4-6", "7:60:7"},
		{"a private home", "stat -c %a /home/" + hardeningUser, "700"},
		{"system accounts keep *", "getent shadow daemon | cut -d: -f2", "*"},
		{"core dumps off", "cat /etc/security/limits.d/10.hardcore.conf | grep -v '^#'", "*\thard\tcore\t0"},
		{"auditd.conf, Debian's other keys kept", "grep -E '^(max_log_file_action|plugin_dir) ' /etc/audit/auditd.conf", "max_log_file_action = keep_logs\nplugin_dir = /etc/audit/plugins.d"},
		{"cron's directories root's alone", "stat -c %a /etc/cron.d /etc/crontab", "700\n600"},
		{"sshd_config, checked by sshd before it was written", "grep -E '^(PermitRootLogin|PasswordAuthentication) ' /etc/ssh/sshd_config && stat -c %a /etc/ssh/sshd_config", "PermitRootLogin no\nPasswordAuthentication no\n600"},
		{"sshd reloaded with it", "sshd -T | grep -E '^(permitrootlogin|maxauthtries) ' | sort", "maxauthtries 2\npermitrootlogin no"},
		{"no weak moduli", "awk '$5 < 2048' /etc/ssh/moduli | wc -l", "0"},
	} {
		if got := b.sh(c.script); got != c.want {
			t.Errorf("%s: `%s` gives %q, want %q", c.what, c.script, got, c.want)
		}
	}

	// Nothing reached this machine or the cached tree.
	if after := fileMode(t, sentinel); after != before {
		t.Errorf("the cached tree changed: %s is %v, was %v", sentinel, after, before)
	}
	if now := readTrim(t, "/proc/sys/net/ipv4/tcp_timestamps"); now != hostTimestamps {
		t.Errorf("this machine's net.ipv4.tcp_timestamps is %s, was %s", now, hostTimestamps)
	}
	t.Logf("boot %v, plan %v, apply %v, second plan and checks %v",
		booted.Sub(start).Round(time.Millisecond), planned.Sub(booted).Round(time.Millisecond),
		applied.Sub(planned).Round(time.Millisecond), time.Since(applied).Round(time.Millisecond))
}

// bootExample boots a container of the Debian tree rootfs (a volatile
// overlay of it) with examples/NAME copied into it, for exampleToque.
func bootExample(t *testing.T, rootfs, name string) *box {
	t.Helper()
	b := bootNspawn(t, []string{"-D", rootfs, "--volatile=overlay"}, []string{"systemd.firstboot=off"})
	if err := os.CopyFS(filepath.Join(b.dir, "example"), os.DirFS(filepath.Join(repoRoot, "examples", name))); err != nil {
		t.Fatal(err)
	}
	return b
}

// exampleToque runs toque in the container, in the example's directory,
// with the container's own environment (toque's defaults, as in
// production: the harness's tripwire is for this machine), and returns
// its output; an exit status other than want fails the test.
func (b *box) exampleToque(want int, args ...string) string {
	b.t.Helper()
	cmd := b.exec(append([]string{boxDir + "/toque", "-chdir=" + boxDir + "/example"}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "NO_COLOR=1"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		b.t.Fatalf("toque %s: %v", strings.Join(args, " "), err)
	}
	if code != want {
		b.t.Fatalf("toque %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, want, out.String())
	}
	return out.String()
}

// debianRootfs is the Debian 12 tree the container boots: made by
// scripts/debian-rootfs the first time (about two minutes), then kept.
func debianRootfs(t *testing.T) string {
	t.Helper()
	dir := testenv.DebianRootfsDir()
	start := time.Now()
	out, err := exec.Command(filepath.Join(repoRoot, "scripts/debian-rootfs"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/debian-rootfs %s: %v\n%s", dir, err, out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Logf("made the Debian root file system in %s in %v", dir, d.Round(time.Second))
	}
	return dir
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
