// Package rpmtest builds what toque's dnf tests run the real rpm and dnf
// against, on a Debian machine: fixture .rpm packages made with rpmbuild
// (a throwaway %_topdir), a local repository indexed with createrepo_c,
// and a Host: a mount namespace whose /etc, /var, /run, /usr and root's
// home are overlays of the machine's, with its own rpm database in /var/lib/rpm
// (Debian's rpm keeps one under root's home by default) and the fixture
// repositories as its only dnf repositories. Wrappers first on PATH run
// rpm and dnf inside it (nsenter), so the provider's command lines are the
// production ones, and everything they write lands in the overlays: the
// machine's dpkg status and rpm databases, its dnf and rpm configuration,
// os-release and toque's own state are never written (HostDigests proves
// it).
//
// Only tests import it. It needs root, unshare and overlayfs, and the
// tools scripts/test-deps installs (testenv.DnfRPM).
package rpmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// Pkg describes one fixture package (noarch).
type Pkg struct {
	Name, Version string
	// Release defaults to 1.
	Release string
	Epoch   int
	// Requires is the package's Requires: line.
	Requires string
	// Config, when set, is installed as /etc/NAME.conf, marked
	// %config(noreplace), with this content.
	Config string
	// PostLua, when set, is a %post scriptlet in rpm's built-in Lua, which
	// needs no interpreter package (a /bin/sh scriptlet would need one
	// that provides /bin/sh in the namespace's empty rpm database). It runs
	// inside the namespace.
	PostLua string
	// Fail makes %post fail (an error in Lua).
	Fail bool
}

func (p Pkg) release() string {
	if p.Release == "" {
		return "1"
	}
	return p.Release
}

// EVR is the version as dnf shows it.
func (p Pkg) EVR() string {
	s := p.Version + "-" + p.release()
	if p.Epoch > 0 {
		s = strconv.Itoa(p.Epoch) + ":" + s
	}
	return s
}

// File is the .rpm's file name.
func (p Pkg) File() string { return fmt.Sprintf("%s-%s-%s.noarch.rpm", p.Name, p.Version, p.release()) }

// Require lets the test go on only as root with unshare, overlayfs, rpm,
// rpmbuild, dnf and createrepo_c; it skips otherwise, or fails in a
// strict tier that promises them (internal/testenv).
func Require(t testing.TB) {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Unshare, testenv.Overlay, testenv.DnfRPM)
}

// spec is p's spec file.
func (p Pkg) spec() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Name: %s\nVersion: %s\nRelease: %s\n", p.Name, p.Version, p.release())
	if p.Epoch > 0 {
		fmt.Fprintf(&b, "Epoch: %d\n", p.Epoch)
	}
	b.WriteString("Summary: toque test fixture\nLicense: MIT\nBuildArch: noarch\nAutoReqProv: no\n")
	if p.Requires != "" {
		fmt.Fprintf(&b, "Requires: %s\n", p.Requires)
	}
	b.WriteString("%description\ntoque test fixture\n%install\n")
	fmt.Fprintf(&b, "mkdir -p %%{buildroot}/usr/share/%s %%{buildroot}/etc\n", p.Name)
	fmt.Fprintf(&b, "echo %s > %%{buildroot}/usr/share/%s/version\n", p.EVR(), p.Name)
	if p.Config != "" {
		fmt.Fprintf(&b, "cat > %%{buildroot}/etc/%s.conf <<'TOQUE_EOF'\n%sTOQUE_EOF\n", p.Name, p.Config)
	}
	fmt.Fprintf(&b, "%%files\n/usr/share/%s\n", p.Name)
	if p.Config != "" {
		fmt.Fprintf(&b, "%%config(noreplace) /etc/%s.conf\n", p.Name)
	}
	switch {
	case p.Fail:
		b.WriteString("%post -p <lua>\nerror(\"toque fixture: %post fails on purpose\")\n")
	case p.PostLua != "":
		b.WriteString("%post -p <lua>\n" + p.PostLua + "\n")
	}
	return b.String()
}

// Build makes p's .rpm in dir with rpmbuild -bb in a throwaway %_topdir
// (its temporary files too), and returns its path.
func Build(t testing.TB, dir string, p Pkg) string {
	t.Helper()
	top := t.TempDir()
	for _, d := range []string{"SPECS", "BUILD", "BUILDROOT", "tmp"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := filepath.Join(top, "SPECS", p.Name+".spec")
	write(t, spec, p.spec())
	// --nodeps: checking build dependencies opens the machine's rpm
	// database (the fixtures have none).
	run(t, "", "rpmbuild", "-bb", "--quiet", "--nodeps",
		"--define", "_topdir "+top, "--define", "_tmppath "+filepath.Join(top, "tmp"),
		"--define", "_rpmdir "+dir, "--define", "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm",
		"--define", "_binary_payload w2.gzdio", spec)
	return filepath.Join(dir, p.File())
}

// Repo builds pkgs into dir and indexes it with createrepo_c. It can be
// called again with more packages: the index is rebuilt from every .rpm
// in dir.
func Repo(t testing.TB, dir string, pkgs ...Pkg) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		Build(t, dir, p)
	}
	Index(t, dir)
}

// Index (re)writes dir's repodata.
func Index(t testing.TB, dir string) {
	t.Helper()
	run(t, "", "createrepo_c", "-q", "--no-database", dir)
}

// CopyRepo copies a repository directory (its .rpm files), for a test
// that adds to it, and indexes the copy.
func CopyRepo(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ms, _ := filepath.Glob(filepath.Join(from, "*.rpm"))
	for _, m := range ms {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(to, filepath.Base(m)), string(b))
	}
	Index(t, to)
}

// Host is a mount namespace standing for an RHEL-family host.
type Host struct {
	// PID is the process that holds the namespace.
	PID int
	// FilesRoot is a directory of the machine whose etc/yum.repos.d is
	// bind-mounted over the namespace's /etc/yum.repos.d: a type that
	// takes a root prefix (yum_repository) is given it, and dnf inside
	// sees what it writes. Never give a type /proc/PID/root: toque's
	// held-directory code reads that magic link as a plain symlink to
	// "/", and would write to the machine's own /etc.
	FilesRoot string
	// root is /proc/PID/root, which the kernel resolves into the
	// namespace: ReadFile and WriteFile use it with plain file calls.
	root string
	// Env puts the wrappers first on PATH: rpm and dnf run inside.
	Env map[string]string
	// Calls is the file the wrappers log every call to, one line each
	// ("rpm -q …", "dnf -C repoquery …").
	Calls string
}

// NewHost makes the namespace: overlays over /etc, /var, /run, /usr and
// root's home (so toque's default state, /var/lib/toque and /run/toque,
// is the namespace's too), an rpm database in /var/lib/rpm, a fake os-release (Rocky 9), a
// dnf release version, and the given repository directories as dnf's only
// repositories ("fixture0", "fixture1"…, gpgcheck off), whose metadata it
// caches (dnf makecache): the provider reads with -C.
func NewHost(t testing.TB, repos ...string) *Host {
	t.Helper()
	layers := t.TempDir()
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		home = "/root"
	}
	var mounts []string
	for i, d := range []string{"/etc", "/var", "/run", "/usr", home} {
		up, work := filepath.Join(layers, fmt.Sprintf("u%d", i)), filepath.Join(layers, fmt.Sprintf("w%d", i))
		for _, x := range []string{up, work} {
			if err := os.MkdirAll(x, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		mounts = append(mounts, fmt.Sprintf("mount -t overlay overlay -o lowerdir=%s,upperdir=%s,workdir=%s %s", d, up, work, d))
	}
	filesRoot := t.TempDir()
	reposd := filepath.Join(filesRoot, "etc/yum.repos.d")
	if err := os.MkdirAll(reposd, 0o755); err != nil {
		t.Fatal(err)
	}
	var repoFiles []string
	for i, r := range repos {
		repoFiles = append(repoFiles, fmt.Sprintf("printf '[fixture%d]\\nname=toque fixture %d\\nbaseurl=file://%s\\ngpgcheck=0\\n' > /etc/yum.repos.d/fixture%d.repo", i, i, r, i))
	}
	script := strings.Join(mounts, " && ") + ` || exit 1
set -e
mkdir -p /etc/rpm /etc/yum.repos.d /etc/dnf/vars /var/lib/rpm /var/lib/dnf
mount --bind ` + reposd + ` /etc/yum.repos.d
echo '%_dbpath /var/lib/rpm' > /etc/rpm/macros.dbpath
echo 9 > /etc/dnf/vars/releasever
rm -f /etc/os-release
printf 'NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.3"\n' > /etc/os-release
rpm --initdb
` + strings.Join(repoFiles, "\n") + `
echo ready
exec sleep 3600
`
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	})
	ready := make(chan error, 1)
	go func() {
		buf := make([]byte, 64)
		n, err := io.ReadAtLeast(out, buf, len("ready"))
		if err == nil && !strings.HasPrefix(string(buf[:n]), "ready") {
			err = fmt.Errorf("printed %q", buf[:n])
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("setting up the namespace: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("setting up the namespace: no answer in 30s\n%s", stderr.String())
	}
	h := &Host{PID: cmd.Process.Pid, FilesRoot: filesRoot, root: fmt.Sprintf("/proc/%d/root", cmd.Process.Pid)}
	wrap := t.TempDir()
	h.Calls = filepath.Join(wrap, "calls.log")
	for _, tool := range []string{"rpm", "dnf"} {
		real, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"%s $*\" >> %s\nexec nsenter -t %d -m -- %s \"$@\"\n", tool, h.Calls, h.PID, real)
		if err := os.WriteFile(filepath.Join(wrap, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.Env = map[string]string{"PATH": wrap + ":" + os.Getenv("PATH")}
	h.Run(t, "dnf", "-q", "makecache")
	os.Remove(h.Calls)
	return h
}

// Run runs a command inside the namespace and returns its output,
// failing the test when it fails.
func (h *Host) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	return run(t, "", "nsenter", append([]string{"-t", strconv.Itoa(h.PID), "-m", "--", name}, args...)...)
}

// Refresh makes dnf read the repositories again (dnf makecache
// --refresh): what moves a candidate.
func (h *Host) Refresh(t testing.TB) {
	t.Helper()
	h.Run(t, "dnf", "-q", "makecache", "--refresh")
}

// Install installs packages with dnf (NAME or NAME-VERSION).
func (h *Host) Install(t testing.TB, pkgs ...string) {
	t.Helper()
	h.Run(t, "dnf", append([]string{"-q", "-y", "install", "--"}, pkgs...)...)
}

// Status is the installed versions of pkg as dnf shows them ("2.0-1",
// several joined by spaces), "" when it is not installed.
func (h *Host) Status(t testing.TB, pkg string) string {
	t.Helper()
	cmd := exec.Command("nsenter", "-t", strconv.Itoa(h.PID), "-m", "--", "rpm", "-q", "--qf", `%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n`, "--", pkg)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, _ := cmd.Output()
	var vs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(l, " ") || l == "" {
			continue
		}
		vs = append(vs, strings.TrimPrefix(l, "0:"))
	}
	sort.Strings(vs)
	return strings.Join(vs, " ")
}

// ReadFile reads a file inside the namespace ("" when missing).
func (h *Host) ReadFile(path string) string {
	b, _ := os.ReadFile(h.root + path)
	return string(b)
}

// WriteFile writes a file inside the namespace.
func (h *Host) WriteFile(t testing.TB, path, content string) {
	t.Helper()
	write(t, h.root+path, content)
}

// CallLog returns the commands the wrappers ran since the last call, and
// forgets them.
func (h *Host) CallLog() []string {
	b, _ := os.ReadFile(h.Calls)
	os.Remove(h.Calls)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// HostDigests is the sha256 of each of the machine's package databases
// that exists: dpkg's status file, and the rpm databases (Debian's rpm
// keeps one under root's home; /var/lib/rpm and /usr/lib/sysimage/rpm
// on an rpm distribution), /etc/os-release (the namespace writes a fake
// one), the listing of dnf's and rpm's directories on the machine
// (/etc/yum.repos.d, /etc/rpm…), and a digest of every path, size and
// modification time under toque's default state (/var/lib/toque,
// /run/toque) and the rpm databases' directories (a read touches them).
// Tests take it before and after.
func HostDigests(t testing.TB) map[string]string {
	t.Helper()
	home, _ := os.UserHomeDir()
	out := map[string]string{}
	paths := []string{"/var/lib/dpkg/status"}
	for _, dir := range []string{filepath.Join(home, ".rpmdb"), "/var/lib/rpm", "/usr/lib/sysimage/rpm"} {
		for _, pattern := range []string{"rpmdb.sqlite", "Packages", "*.db"} {
			ms, _ := filepath.Glob(filepath.Join(dir, pattern))
			paths = append(paths, ms...)
		}
	}
	// What the types under test write, which must land in the namespace
	// or a test directory, never on the machine: their listing.
	for _, d := range []string{"/etc/yum.repos.d", "/etc/pki/rpm-gpg", "/var/cache/dnf", "/var/lib/dnf", "/etc/rpm", "/etc/dnf", "/etc/dnf/vars"} {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		out[d+"/"] = strings.Join(names, " ")
	}
	// toque's own state on the machine (the defaults, when a test forgot
	// TOQUE_STATE_DIR or TOQUE_HOST_LOCK), and the rpm databases'
	// directories, whose files a mere read by rpm or dnf touches (sqlite's
	// -shm file) though their content stays: every path, its size and
	// modification time.
	for _, d := range []string{"/var/lib/toque", "/run/toque", filepath.Join(home, ".rpmdb"), "/var/lib/rpm", "/usr/lib/sysimage/rpm"} {
		if sum := treeDigest(d); sum != "" {
			out[d+"/**"] = sum
		}
	}
	paths = append(paths, "/etc/os-release")
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[p] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// treeDigest is the sha256 of every path under dir with its size and
// modification time, "" when dir does not exist.
func treeDigest(dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := e.Info(); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	if b.Len() == 0 {
		return ""
	}
	h := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(h[:])
}

// KeepHostDigests checks, when the test ends, that none of what
// HostDigests covers changed.
func KeepHostDigests(t testing.TB) {
	t.Helper()
	before := HostDigests(t)
	t.Cleanup(func() {
		after := HostDigests(t)
		for p, d := range before {
			if after[p] != d {
				t.Errorf("the machine's %s changed during the test (sha256 %s, now %s; this test, or another process on the machine)", p, d, after[p])
			}
		}
		for p := range after {
			if _, ok := before[p]; !ok {
				t.Errorf("the machine has a new %s after the test (this test, or another process on the machine)", p)
			}
		}
	})
}

func run(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
