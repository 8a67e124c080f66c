package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// probeTimeout bounds each probe: a requirement that hangs is not met.
const probeTimeout = 20 * time.Second

// debianHint is how scripts/test-deps gets a Debian package.
func debianHint(pkg string) string {
	return "scripts/test-deps installs it on Debian: apt-get install " + pkg
}

// probe checks r for real.
func probe(r Requirement) result {
	switch r {
	case Root:
		if uid := os.Geteuid(); uid != 0 {
			return result{known: true, err: fmt.Errorf("running as uid %d, not root", uid), hint: "run the tests as root: sudo make test"}
		}
		return result{known: true}
	case NonRoot:
		if os.Geteuid() == 0 {
			return result{known: true, err: errors.New("running as root"), hint: "make test-nonroot runs the tests as nobody"}
		}
		return result{known: true}
	case Bash:
		return program("bash", debianHint("bash"), "bash", "-c", "echo ok")
	case DashSh:
		return result{known: true, err: dashSh(), hint: "the tests that expect dash's messages skip elsewhere; Debian: /bin/sh is dash by default"}
	case Csh:
		return program("csh", debianHint("csh"), "csh", "-f", "-c", "echo ok")
	case Pwsh:
		return program("pwsh", "Debian does not package PowerShell, so no tier promises it", "pwsh", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", "Write-Output ok")
	case Python3:
		return program("python3", debianHint("python3-minimal"), "python3", "-c", "print('ok')")
	case Perl:
		return program("perl", debianHint("perl-base"), "perl", "-e", `print "ok\n"`)
	case Git:
		return program("git", debianHint("git"), "git", "-c", "alias.ok=!echo ok", "ok")
	case Jq:
		return program("jq", debianHint("jq"), "jq", "-rn", `"ok"`)
	case DpkgDev:
		for _, tool := range []string{"dpkg", "dpkg-deb", "dpkg-query", "apt-get", "apt-cache"} {
			if _, err := exec.LookPath(tool); err != nil {
				return result{known: true, err: fmt.Errorf("%s is not installed", tool), hint: "the package tests need Debian's apt and dpkg"}
			}
		}
		return program("dpkg-scanpackages", debianHint("dpkg-dev"), "sh", "-c", "dpkg-scanpackages --version >/dev/null && echo ok")
	case DnfRPM:
		for tool, pkg := range map[string]string{"rpm": "rpm", "rpmbuild": "rpm", "dnf": "dnf", "createrepo_c": "createrepo-c"} {
			if _, err := exec.LookPath(tool); err != nil {
				return result{known: true, err: fmt.Errorf("%s is not installed", tool), hint: debianHint(pkg)}
			}
		}
		// dnf --version opens the rpm database: Debian's rpm keeps it
		// under $HOME, so a throwaway HOME keeps the probe off the
		// machine's (a read alone rewrites its sqlite -shm file).
		return program("rpm", debianHint("rpm"), "sh", "-c", `rpm --eval '%{lua: print(rpm.vercmp("1.0", "1.0"))}' | grep -qx 0 && d=$(mktemp -d) && HOME="$d" dnf --version >/dev/null 2>&1; r=$?; rm -rf "$d"; [ $r = 0 ] && echo ok`)
	case Script:
		return program("script", debianHint("bsdutils"), "script", "-qec", "echo ok", "/dev/null")
	case Unshare:
		return program("unshare", "needs root and util-linux ("+debianHint("util-linux")+")", "unshare", "--mount", "--uts", "echo", "ok")
	case UserNS:
		return program("unshare", "user namespaces must be enabled (sysctl user.max_user_namespaces > 0) and util-linux installed", "unshare", "--user", "--map-root-user", "--mount", "echo", "ok")
	case Overlay:
		return result{known: true, err: overlay(), hint: "needs root (or user namespaces on Linux 5.11 or later) and overlayfs in the kernel"}
	case Nspawn:
		return nspawn()
	case Locales:
		for _, tool := range []string{"localedef", "locale-gen"} {
			if !inSbin(tool) {
				return result{known: true, err: fmt.Errorf("%s is not installed", tool), hint: debianHint("locales")}
			}
		}
		if _, err := os.Stat("/usr/share/i18n/SUPPORTED"); err != nil {
			return result{known: true, err: errors.New("glibc's list of supported locales, /usr/share/i18n/SUPPORTED, is missing"), hint: debianHint("locales")}
		}
		return result{known: true}
	case Visudo:
		if !inSbin("visudo") {
			return result{known: true, err: errors.New("visudo is not installed"), hint: debianHint("sudo")}
		}
		return program("visudo", debianHint("sudo"), "sh", "-c", `PATH=/usr/sbin:/sbin:$PATH; d=$(mktemp -d) && echo 'root ALL=(ALL) ALL' > "$d/f" && visudo -cf "$d/f" >/dev/null; r=$?; rm -rf "$d"; [ $r = 0 ] && echo ok`)
	case UpdateAlternatives:
		return program("update-alternatives", debianHint("dpkg"), "sh", "-c", `d=$(mktemp -d) && update-alternatives --altdir "$d" --admindir "$d" --query toque-probe >/dev/null 2>&1; rm -rf "$d"; update-alternatives --version >/dev/null && echo ok`)
	case SSHKeygen:
		return program("ssh-keygen and ssh-keyscan", debianHint("openssh-client"), "sh", "-c", `command -v ssh-keyscan >/dev/null && d=$(mktemp -d) && ssh-keygen -q -t ed25519 -N "" -f "$d/k" && ssh-keygen -l -f "$d/k.pub" >/dev/null; r=$?; rm -rf "$d"; [ $r = 0 ] && echo ok`)
	case DebianRootfs:
		return result{known: true, err: debianRootfs(), hint: "scripts/debian-rootfs makes it once, in " + DebianRootfsDir() + " (" + RootfsEnv + "), with root, debootstrap (" + debianHint("debootstrap") + ") and a Debian mirror (DEBIAN_MIRROR)"}
	case LoopDev:
		return result{known: true, err: loopDevice(), hint: "needs root, loop devices (/dev/loop-control) and mkfs.ext4 (" + debianHint("e2fsprogs") + ")"}
	case Systemctl:
		return program("systemctl and systemd-analyze", debianHint("systemd"), "sh", "-c", "systemctl --version >/dev/null && systemd-analyze --version >/dev/null && echo ok")
	case Nsenter:
		return program("nsenter", "needs root and util-linux ("+debianHint("util-linux")+")", "nsenter", "-t", strconv.Itoa(os.Getpid()), "-m", "echo", "ok")
	case Shadow:
		for _, tool := range []string{"useradd", "usermod", "userdel", "groupadd", "groupmod", "groupdel", "gpasswd", "chpasswd"} {
			if !inSbin(tool) {
				return result{known: true, err: fmt.Errorf("%s is not installed", tool), hint: debianHint("passwd")}
			}
		}
		return result{known: true}
	case Cron:
		if !inSbin("cron") {
			return result{known: true, err: errors.New("cron is not installed"), hint: debianHint("cron") + " (scripts/test-deps keeps it from starting on this machine)"}
		}
		return result{known: true}
	case Nobody:
		if _, err := user.Lookup("nobody"); err != nil {
			return result{known: true, err: fmt.Errorf("no user nobody: %w", err), hint: "Debian has one (uid 65534)"}
		}
		if _, err := user.LookupGroup("nogroup"); err != nil {
			return result{known: true, err: fmt.Errorf("no group nogroup: %w", err), hint: "Debian has one (gid 65534)"}
		}
		return result{known: true}
	case DevFull:
		return result{known: true, err: devFull(), hint: "a Linux /dev with the full device"}
	case Sshd:
		if !inSbin("sshd") {
			return result{known: true, err: errors.New("sshd is not installed"), hint: debianHint("openssh-server") + " (scripts/test-deps keeps it from starting on this machine)"}
		}
		return program("ssh and ssh-keygen", debianHint("openssh-client"), "sh", "-c", "command -v ssh >/dev/null && command -v ssh-keygen >/dev/null && echo ok")
	case NetNS:
		return result{known: true, err: netns(), hint: "needs root, iproute2 (" + debianHint("iproute2") + ") and util-linux's unshare"}
	case MachineID:
		if fi, err := os.Stat("/etc/machine-id"); err != nil || !fi.Mode().IsRegular() {
			return result{known: true, err: fmt.Errorf("/etc/machine-id is not a file here (%v)", err), hint: "systemd-machine-id-setup makes one"}
		}
		return result{known: true}
	case FHSDirs:
		for _, d := range []string{"/opt", "/var"} {
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				return result{known: true, err: fmt.Errorf("%s is not a directory here", d), hint: "the Chef RFC's guard examples cd into /opt and /var"}
			}
		}
		return result{known: true}
	}
	return result{err: fmt.Errorf("testenv knows no requirement %q", string(r))}
}

// inSbin reports whether the program name is installed, in PATH or in
// the sbin directories a non-root PATH may lack.
func inSbin(name string) bool {
	if _, err := exec.LookPath(name); err == nil {
		return true
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return true
		}
	}
	return false
}

// program runs argv and expects "ok" on its standard output.
func program(name, hint string, argv ...string) result {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return result{known: true, err: fmt.Errorf("%s is not installed", name), hint: hint}
	}
	out, err := runProbe(argv...)
	if err == nil && strings.TrimSpace(out) != "ok" {
		err = fmt.Errorf("printed %q, not ok", out)
	}
	if err != nil {
		return result{known: true, err: fmt.Errorf("`%s` does not work here: %w", strings.Join(argv, " "), err), hint: hint}
	}
	return result{known: true}
}

// runProbe runs argv with the probe timeout and returns its standard output;
// the error includes standard error.
func runProbe(argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = nil
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errb.String()); msg != "" {
			return out.String(), fmt.Errorf("%w: %s", err, msg)
		}
		return out.String(), err
	}
	return out.String(), nil
}

// netns makes a network namespace with a veth pair in it, which goes
// away with the namespace.
func netns() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	for _, tool := range []string{"unshare", "ip"} {
		if !inSbin(tool) {
			return fmt.Errorf("%s is not installed", tool)
		}
	}
	out, err := runProbe("unshare", "--net", "sh", "-c", "PATH=/usr/sbin:/sbin:$PATH; ip link add tq0 type veth peer name tq1 && ip addr add 10.231.0.1/24 dev tq0 && ip link set tq0 up && echo ok")
	if err == nil && strings.TrimSpace(out) != "ok" {
		err = fmt.Errorf("printed %q, not ok", out)
	}
	if err != nil {
		return fmt.Errorf("cannot make a veth pair in a network namespace: %w", err)
	}
	return nil
}

// devFull writes to /dev/full and expects ENOSPC.
func devFull() error {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); !errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("writing to /dev/full gave %v, not ENOSPC", err)
	}
	return nil
}

// dashSh checks /bin/sh by what the tests rely on: dash's `[` knows `=`
// but not `==`, and dash has no `[[`.
func dashSh() error {
	what := "/bin/sh"
	if real, err := filepath.EvalSymlinks("/bin/sh"); err == nil {
		what = "/bin/sh (" + real + ")"
	}
	cmd := exec.Command("/bin/sh", "-c", "[ a == a ]")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "unexpected operator") {
		return fmt.Errorf("%s is not dash: `[ a == a ]` gave %v, %q, not dash's exit 2 \"unexpected operator\"", what, err, out)
	}
	out, err = exec.Command("/bin/sh", "-c", "[[ 1 == 1 ]]").CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 127 {
		return fmt.Errorf("%s is not dash: `[[ 1 == 1 ]]` gave %v, %q, not exit 127", what, err, out)
	}
	return nil
}

// overlay mounts an overlayfs in a private mount namespace (a user
// namespace too when not root) and checks a lower file shows through.
func overlay() error {
	dir, err := os.MkdirTemp("", "testenv-overlay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "lower", "f"), []byte("ok\n"), 0o644); err != nil {
		return err
	}
	argv := []string{"unshare", "--mount"}
	if os.Geteuid() != 0 {
		argv = append(argv, "--user", "--map-root-user")
	}
	script := `mount -t overlay overlay -o "lowerdir=$1/lower,upperdir=$1/upper,workdir=$1/work" "$1/merged" && cat "$1/merged/f"`
	argv = append(argv, "sh", "-c", script, "sh", dir)
	if _, err := exec.LookPath("unshare"); err != nil {
		return errors.New("unshare is not installed")
	}
	out, err := runProbe(argv...)
	if err == nil && strings.TrimSpace(out) != "ok" {
		err = fmt.Errorf("the merged directory shows %q", out)
	}
	if err != nil {
		return fmt.Errorf("cannot mount overlayfs: %w", err)
	}
	return nil
}

// nspawn boots nothing: it runs one command in a container over a
// volatile copy of this host's /usr, which needs root and
// systemd-nspawn.
func nspawn() result {
	hint := "needs root and " + debianHint("systemd-container")
	if _, err := exec.LookPath("systemd-nspawn"); err != nil {
		return result{known: true, err: errors.New("systemd-nspawn is not installed"), hint: hint}
	}
	out, err := runProbe("systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "--directory=/", "--volatile=yes", "--pipe", "/bin/echo", "ok")
	if err == nil && strings.TrimSpace(out) != "ok" {
		err = fmt.Errorf("printed %q, not ok", out)
	}
	if err != nil {
		return result{known: true, err: fmt.Errorf("systemd-nspawn cannot run a container here: %w", err), hint: hint}
	}
	return result{known: true}
}

// loopDevice makes a small ext4 image and mounts it through a loop device
// in a private mount namespace, which releases the device when it ends.
func loopDevice() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	for _, tool := range []string{"unshare", "mkfs.ext4", "losetup"} {
		if !inSbin(tool) {
			return fmt.Errorf("%s is not installed", tool)
		}
	}
	dir, err := os.MkdirTemp("", "testenv-loop-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		return err
	}
	if err := os.Truncate(img, 8<<20); err != nil {
		return err
	}
	script := `PATH=/usr/sbin:/sbin:$PATH; mkfs.ext4 -q -F "$1" && unshare --mount --propagation private sh -c 'mount -o loop "$1" "$2" && umount "$2" && echo ok' sh "$1" "$2"`
	out, err := runProbe("sh", "-c", script, "sh", img, mnt)
	if err == nil && strings.TrimSpace(out) != "ok" {
		err = fmt.Errorf("printed %q, not ok", out)
	}
	if err != nil {
		return fmt.Errorf("cannot mount an ext4 image through a loop device: %w", err)
	}
	return nil
}

// debianRootfs checks that scripts/debian-rootfs has made the root file
// system, or could: root, debootstrap, and a mirror that answers.
func debianRootfs() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	if _, err := os.Stat(filepath.Join(DebianRootfsDir(), ".toque-rootfs")); err == nil {
		return nil
	}
	if !inSbin("debootstrap") {
		return errors.New("debootstrap is not installed, and no root file system was made before")
	}
	mirror := os.Getenv("DEBIAN_MIRROR")
	if mirror == "" {
		mirror = "http://deb.debian.org/debian"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, strings.TrimSuffix(mirror, "/")+"/dists/bookworm/Release", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the Debian mirror %s does not answer: %w", mirror, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the Debian mirror %s answers %s for bookworm's Release file", mirror, resp.Status)
	}
	return nil
}
