// Package debtest builds what toque's package tests run the real apt and
// dpkg against: fixture .deb packages made with dpkg-deb, a local file:
// repository indexed with dpkg-scanpackages, and a throwaway root that
// apt and dpkg are pointed at through APT_CONFIG and DPKG_ADMINDIR, so
// that nothing of the machine's own package database is read or written.
// Only tests import it. apt is given its root through APT_CONFIG, not
// -o Dir=…, because apt reads the host's /etc/apt/apt.conf.d (and runs its
// hooks) before it applies -o options; dpkg is always given --log, without
// which dpkg --root still appends to the host's /var/log/dpkg.log.
package debtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

// Pkg describes one fixture package.
type Pkg struct {
	Name, Version string
	Depends       string
	// Conffile, when set, is installed as /etc/NAME.conf, marked as a
	// configuration file, with this content.
	Conffile string
	// Postinst, when set, is the body of a /bin/sh postinst script. It runs
	// on the host with DPKG_ROOT set (dpkg --force-script-chrootless), so
	// it must write only under "${DPKG_ROOT}".
	Postinst string
	// Files are more files the package ships, by path without the
	// leading slash ("etc/web/web.conf"), with their content; Dirs more
	// (empty) directories; Conffiles more configuration files (absolute
	// paths, each among Files). A file under lib/systemd/system is a
	// unit.
	Files     map[string]string
	Dirs      []string
	Conffiles []string
}

// File is the .deb's file name.
func (p Pkg) File() string { return fmt.Sprintf("%s_%s_all.deb", p.Name, p.Version) }

// Require lets the test go on only as root (dpkg installs packages only
// as root, even into a throwaway root) with apt, dpkg and dpkg-dev's
// dpkg-scanpackages installed (scripts/test-deps installs dpkg-dev); it
// skips otherwise, or fails in a strict tier that promises them
// (internal/testenv).
func Require(t testing.TB) {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.DpkgDev)
}

// Build makes p's .deb in dir and returns its path.
func Build(t testing.TB, dir string, p Pkg) string {
	t.Helper()
	tree := filepath.Join(t.TempDir(), p.Name+"-"+p.Version)
	control := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: toque tests <tests@example.invalid>\n", p.Name, p.Version)
	if p.Depends != "" {
		control += "Depends: " + p.Depends + "\n"
	}
	control += "Description: toque test fixture\n"
	files := map[string]string{
		"DEBIAN/control":                   control,
		"usr/share/" + p.Name + "/version": p.Version + "\n",
	}
	var conffiles []string
	if p.Conffile != "" {
		files["etc/"+p.Name+".conf"] = p.Conffile
		conffiles = append(conffiles, "/etc/"+p.Name+".conf")
	}
	for name, content := range p.Files {
		files[name] = content
	}
	conffiles = append(conffiles, p.Conffiles...)
	if len(conffiles) > 0 {
		files["DEBIAN/conffiles"] = strings.Join(conffiles, "\n") + "\n"
	}
	for name, content := range files {
		write(t, filepath.Join(tree, name), content, 0o644)
	}
	for _, d := range p.Dirs {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if p.Postinst != "" {
		write(t, filepath.Join(tree, "DEBIAN/postinst"), "#!/bin/sh\nset -e\n"+p.Postinst+"\n", 0o755)
	}
	out := filepath.Join(dir, p.File())
	run(t, "", nil, "dpkg-deb", "--build", "--root-owner-group", "-Zgzip", tree, out)
	return out
}

// Repo builds pkgs into dir and indexes them as a flat repository
// (`deb [trusted=yes] file:DIR ./`). It can be called again with more
// packages: the index is rebuilt from every .deb in dir.
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

// Index (re)writes dir's Packages and Packages.gz.
func Index(t testing.TB, dir string) {
	t.Helper()
	out := run(t, dir, nil, "dpkg-scanpackages", "--multiversion", ".", "/dev/null")
	write(t, filepath.Join(dir, "Packages"), out, 0o644)
	os.Remove(filepath.Join(dir, "Packages.gz"))
	run(t, dir, nil, "gzip", "-k", "Packages")
}

// Root is a throwaway root apt and dpkg work in.
type Root struct {
	Dir string
	// Env points apt (APT_CONFIG) and dpkg-query (DPKG_ADMINDIR) at Dir.
	Env map[string]string
}

// NewRoot makes an empty root whose apt reads the given repositories
// (directories made with Repo) and nothing of the host's configuration:
// APT_CONFIG is read before /etc/apt/apt.conf.d, and Dir::Etc::parts then
// resolves inside the root. dpkg, run by apt, gets --root, --log and
// --force-script-chrootless (so maintainer scripts run with DPKG_ROOT).
func NewRoot(t testing.TB, repos ...string) *Root {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"etc/apt/apt.conf.d", "etc/apt/sources.list.d", "etc/apt/preferences.d", "etc/apt/keyrings",
		"var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/lib/dpkg/info", "var/lib/dpkg/updates",
		"var/lib/dpkg/triggers", "var/log", "var/lib/apt/periodic"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "var/lib/dpkg/status"), "", 0o644)
	conf := fmt.Sprintf(`Dir "%[1]s/";
Dir::Bin::dpkg "/usr/bin/dpkg";
Dir::State::status "%[1]s/var/lib/dpkg/status";
DPkg::Options { "--root=%[1]s"; "--force-script-chrootless"; "--log=%[1]s/var/log/dpkg.log"; };
APT::Sandbox::User "root";
Acquire::Languages "none";
`, dir)
	write(t, filepath.Join(dir, "apt.conf"), conf, 0o644)
	var lines []string
	for _, r := range repos {
		lines = append(lines, fmt.Sprintf("deb [trusted=yes] file:%s ./", r))
	}
	write(t, filepath.Join(dir, "etc/apt/sources.list"), strings.Join(lines, "\n")+"\n", 0o644)
	root := &Root{Dir: dir, Env: map[string]string{
		"APT_CONFIG":    filepath.Join(dir, "apt.conf"),
		"DPKG_ADMINDIR": filepath.Join(dir, "var/lib/dpkg"),
	}}
	root.Update(t)
	return root
}

// Update runs apt-get update in the root.
func (r *Root) Update(t testing.TB) {
	t.Helper()
	r.Run(t, "apt-get", "-q", "update")
}

// Run runs a command with the root's environment and returns its output,
// failing the test when it fails.
func (r *Root) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	return run(t, "", r.Env, name, args...)
}

// Install installs packages into the root with apt-get (name or
// name=version).
func (r *Root) Install(t testing.TB, pkgs ...string) {
	t.Helper()
	r.Run(t, "apt-get", append([]string{"-q", "-y", "--allow-downgrades", "install"}, pkgs...)...)
}

// Status is dpkg-query's Version and db:Status-Status of pkg in the root,
// "" when the database does not know it.
func (r *Root) Status(t testing.TB, pkg string) string {
	t.Helper()
	cmd := exec.Command("dpkg-query", "-W", "-f=${Version} ${db:Status-Status}", pkg)
	cmd.Env = environ(r.Env)
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

// HostStatusDigest is the sha256 of the machine's own dpkg status file:
// tests take it before and after to prove they left the host's package
// database alone.
func HostStatusDigest(t testing.TB) string {
	t.Helper()
	f, err := os.Open("/var/lib/dpkg/status")
	if err != nil {
		return "none: " + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func environ(extra map[string]string) []string {
	env := os.Environ()
	env = append(env, "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

func run(t testing.TB, dir string, extra map[string]string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = environ(extra)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

func write(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
