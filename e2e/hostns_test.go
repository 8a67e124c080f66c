package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// The host-resource tests that run toque's production command lines —
// useradd, gpasswd, sysctl -w, writes to /etc/cron.d — run them for real
// inside a private mount namespace whose /etc and /var are overlays on the
// host's and whose /home is a scratch directory. An overlay on the whole
// of /etc, not a bind mount of /etc/passwd alone: the shadow tools write
// passwd+ and rename it over passwd, which fails on a mount point (and
// leaves passwd+ in the real /etc). getent, id, NSS and Go's os/user read
// back exactly as in production; the host is untouched, which every test
// proves by hashing its account databases and listing /etc/cron.d and
// /etc/sysctl.d before and after.

// hostNS is one such namespace, held open by a sleeping process that
// commands join with nsenter.
type hostNS struct {
	t       testing.TB
	e       *env
	holder  *exec.Cmd
	dir     string
	nsFlags []string // nsenter's: -m, and -n with its own network
}

// nsOptions says what else a namespace gets.
type nsOptions struct {
	net  bool // a network namespace of its own (sysctl net.*)
	cron bool // /run a tmpfs and /dev an overlay, for a cron daemon and its syslog socket
}

// newHostNS makes a namespace for e's test, and proves at cleanup that
// the host's databases and drop-in directories did not change.
func newHostNS(t testing.TB, e *env, o nsOptions) *hostNS {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Unshare, testenv.Nsenter, testenv.Overlay, testenv.Shadow)
	before := hostFingerprint(t)
	t.Cleanup(func() {
		if after := hostFingerprint(t); after != before {
			t.Errorf("the host changed under the test:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
	dir, err := os.MkdirTemp("", "toque-ns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"etc.u", "etc.w", "var.u", "var.w", "dev.u", "dev.w", "home"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := `set -e
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/etc.u,workdir=$1/etc.w" /etc
mount -t overlay overlay -o "lowerdir=/var,upperdir=$1/var.u,workdir=$1/var.w" /var
mount --bind "$1/home" /home
if [ "$2" = cron ]; then
  mount -t tmpfs tmpfs /run
  mount -t overlay overlay -o "lowerdir=/dev,upperdir=$1/dev.u,workdir=$1/dev.w" /dev
fi
echo ready
exec sleep infinity`
	args := []string{"--mount", "--propagation", "private"}
	flags := []string{"-m"}
	if o.net {
		args, flags = append(args, "--net"), append(flags, "-n")
	}
	mode := "plain"
	if o.cron {
		mode = "cron"
	}
	cmd := exec.Command("unshare", append(args, "sh", "-c", script, "sh", dir, mode)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting unshare: %v", err)
	}
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line == "ready\n"
		io.Copy(io.Discard, out)
	}()
	ok := false
	select {
	case ok = <-ready:
	case <-time.After(20 * time.Second):
	}
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("cannot make a mount namespace with overlays on /etc and /var: %s", strings.TrimSpace(stderr.String()))
	}
	ns := &hostNS{t: t, e: e, holder: cmd, dir: dir, nsFlags: flags}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return ns
}

// hostFingerprint digests what no test may change on the host: the
// account databases, and the names in /etc/cron.d and /etc/sysctl.d.
func hostFingerprint(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow"} {
		data, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s %s\n", f, hex.EncodeToString(sum[:8]))
	}
	for _, d := range []string{"/etc/cron.d", "/etc/sysctl.d", "/home"} {
		entries, _ := os.ReadDir(d)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "%s: %s\n", d, strings.Join(names, " "))
	}
	return b.String()
}

// cmd is argv run inside the namespace.
func (ns *hostNS) cmd(argv ...string) *exec.Cmd {
	args := append([]string{"-t", fmt.Sprint(ns.holder.Process.Pid)}, ns.nsFlags...)
	return exec.Command("nsenter", append(append(args, "--"), argv...)...)
}

// toque runs toque inside, with -chdir set to the recipe directory.
func (ns *hostNS) toque(args ...string) result {
	ns.t.Helper()
	return ns.e.runCmd(ns.cmd(append([]string{toqueBin, "-chdir=" + ns.e.dir}, args...)...))
}

// must is toque inside, failing the test unless it exits want.
func (ns *hostNS) must(want int, args ...string) result {
	ns.t.Helper()
	r := ns.toque(args...)
	if r.code != want {
		ns.t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

// sh runs a shell command inside and returns its output; it fails the
// test when the command fails.
func (ns *hostNS) sh(script string) string {
	ns.t.Helper()
	out, err := ns.cmd("sh", "-c", script).CombinedOutput()
	if err != nil {
		ns.t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}
