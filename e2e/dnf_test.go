package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/rpmtest"
)

// The dnf end-to-end tests run `toque plan` and `toque apply` inside a
// mount namespace standing for a Rocky host (rpmtest.NewHost: overlays
// over /etc, /var, /usr and root's home, its own rpm database, a fake
// os-release, dnf's repositories bind-mounted from a test directory).
// toque picks dnf from that os-release and runs its production command
// lines unchanged; the machine's dpkg status and rpm databases are hashed
// before and after.

var rpmE2EFixtures = []rpmtest.Pkg{
	{Name: "toque-fixture", Version: "1.0"},
	{Name: "toque-fixture", Version: "2.0"},
	{Name: "toque-dep", Version: "1.0"},
	{Name: "toque-app", Version: "1.0", Requires: "toque-dep"},
}

// dnfWorld is one test's Rocky namespace and its fixture repository.
type dnfWorld struct {
	*env
	host *rpmtest.Host
	repo string
}

// newDnfWorld builds the fixtures and the namespace; with withRepo, the
// repository is configured and its metadata cached, as an administrator
// would have before toque runs.
func newDnfWorld(t *testing.T, withRepo bool) *dnfWorld {
	t.Helper()
	rpmtest.Require(t)
	rpmtest.KeepHostDigests(t)
	w := &dnfWorld{env: newEnv(t), repo: filepath.Join(t.TempDir(), "repo")}
	rpmtest.Repo(t, w.repo, rpmE2EFixtures...)
	var repos []string
	if withRepo {
		repos = append(repos, w.repo)
	}
	w.host = rpmtest.NewHost(t, repos...)
	return w
}

// toqueNS runs toque (-chdir to the recipes) in the namespace.
func (w *dnfWorld) toqueNS(want int, args ...string) result {
	w.t.Helper()
	argv := append([]string{"-t", strconv.Itoa(w.host.PID), "-m", "--", toqueBin, "-chdir=" + w.dir}, args...)
	r := w.runCmd(exec.Command("nsenter", argv...))
	if want >= 0 && r.code != want {
		w.t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

func (w *dnfWorld) planFile() string { return filepath.Join(w.state, "..", "plan.out") }

func TestE2EDnfInstallUpgradeRemove(t *testing.T) {
	t.Parallel()
	w := newDnfWorld(t, true)
	w.recipe("main.hcl", `
package "toque-app" {}
package "toque-fixture" {
  version = "1.0"
}
`)
	r := w.toqueNS(0, "plan", "-out="+w.planFile())
	for _, want := range []string{`+ package "toque-app" {`, `+ version = "1.0-1"`, "# version: dnf also installs toque-dep 1.0-1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	w.toqueNS(0, "apply", w.planFile())
	if a, d, f := w.host.Status(t, "toque-app"), w.host.Status(t, "toque-dep"), w.host.Status(t, "toque-fixture"); a != "1.0-1" || d != "1.0-1" || f != "1.0-1" {
		t.Fatalf("after apply: toque-app %q, toque-dep %q, toque-fixture %q", a, d, f)
	}
	if r := w.toqueNS(0, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
	w.recipe("main.hcl", `
package "toque-fixture" {
  action = "upgrade"
}
package "toque-dep" {
  action = "purge"
}
`)
	r = w.toqueNS(0, "plan", "-out="+w.planFile())
	for _, want := range []string{`~ version = "1.0-1" -> "2.0-1"`, `- package "toque-dep"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	w.toqueNS(0, "apply", w.planFile())
	if f, d, a := w.host.Status(t, "toque-fixture"), w.host.Status(t, "toque-dep"), w.host.Status(t, "toque-app"); f != "2.0-1" || d != "" || a != "" {
		t.Fatalf("after the second apply: toque-fixture %q, toque-dep %q, toque-app %q (removed with its dependency)", f, d, a)
	}
}

func TestE2EDnfCandidateMovedMakesThePlanStale(t *testing.T) {
	t.Parallel()
	w := newDnfWorld(t, true)
	w.recipe("main.hcl", `
package "toque-fixture" {}
`)
	r := w.toqueNS(0, "plan", "-out="+w.planFile())
	if !strings.Contains(r.stdout, `+ version = "2.0-1"`) {
		t.Fatalf("plan:\n%s", r.stdout)
	}
	rpmtest.Repo(t, w.repo, rpmtest.Pkg{Name: "toque-fixture", Version: "3.0"})
	w.host.Refresh(t)
	r = w.toqueNS(3, "apply", w.planFile())
	if !strings.Contains(r.stderr, "candidate:toque-fixture: 2.0-1 at plan time, now 3.0-1") {
		t.Fatalf("stale report:\n%s", r)
	}
	if got := w.host.Status(t, "toque-fixture"); got != "" {
		t.Fatalf("a stale plan installed something: %q", got)
	}
}

func TestE2EDnfNotAvailable(t *testing.T) {
	t.Parallel()
	w := newDnfWorld(t, true)
	w.recipe("main.hcl", `
package "toque-nosuch" {}
`)
	r := w.toqueNS(1, "plan")
	for _, want := range []string{"main.hcl:2:1", "Missing a repository that offers package toque-nosuch", "searched: fixture0 file://" + w.repo, "yum_repository", "dnf_makecache"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("error lacks %q:\n%s", want, r.stderr)
		}
	}
}

// TestE2EDnfRepositoryAddedInTheSamePlan: yum_repository writes the
// repository, notifies dnf_makecache immediately, and the package it
// offers is planned with its version known at apply and installed in the
// same apply.
func TestE2EDnfRepositoryAddedInTheSamePlan(t *testing.T) {
	t.Parallel()
	w := newDnfWorld(t, false)
	w.recipe("main.hcl", fmt.Sprintf(`
yum_repository "toque-fixtures" {
  baseurl  = "file://%s"
  gpgcheck = false
  notifies "update" {
    resource = "dnf_makecache[cache]"
    timing   = "immediately"
  }
}

dnf_makecache "cache" {
  action = "nothing"
}

package "toque-app" {}
`, w.repo))
	r := w.toqueNS(0, "plan", "-out="+w.planFile())
	for _, want := range []string{
		`+ yum_repository "toque-fixtures" {`,
		"#     waits for dnf_makecache[cache] (action update, notified by yum_repository[toque-fixtures])",
		`+ version = (known at apply)`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	r = w.toqueNS(0, "apply", w.planFile())
	if got := w.host.Status(t, "toque-app"); got != "1.0-1" {
		t.Fatalf("toque-app: %q\n%s", got, r)
	}
	if got := w.host.ReadFile("/etc/yum.repos.d/toque-fixtures.repo"); !strings.Contains(got, "baseurl=file://"+w.repo+"\n") {
		t.Errorf("repository file:\n%s", got)
	}
	if r := w.toqueNS(0, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
}

// TestE2EDnfBadInput: what a recipe gets wrong for the RHEL family is an
// error at its file, line and column, and the namespace's host is not
// touched.
func TestE2EDnfBadInput(t *testing.T) {
	t.Parallel()
	w := newDnfWorld(t, true)
	for _, c := range []struct {
		src  string
		want []string
	}{
		{`package "toque-fixture" {
  provider = "yum"
}`, []string{"main.hcl:2:", `toque has no such package provider`}},
		{`package "pkg" {
  package_name = "--installroot=/tmp"
}`, []string{"main.hcl:2:", "is not allowed"}},
		{`package "toque-fixture" {
  version = "1.0*"
}`, []string{"main.hcl:2:", "is not allowed"}},
		{`yum_repository "r" {
  baseurl = "not a url"
}`, []string{"main.hcl:2:", "holds a space"}},
		{`yum_repository "r" {
  baseurl = "https://r.example.com/el9"
  gpgkey  = "http://r.example.com/RPM-GPG-KEY"
}`, []string{"main.hcl:1:", "fetched over plain http"}},
		{`yum_repository "../r" {
  baseurl = "https://r.example.com/el9"
}`, []string{"main.hcl:1:", "repositoryid"}},
		{`yum_repository "r" {
  baseurl     = "https://r.example.com/el9"
  description = "x\ngpgcheck=0"
}`, []string{"main.hcl:3:", "one line"}},
	} {
		w.recipe("main.hcl", c.src)
		r := w.toqueNS(1, "plan")
		for _, want := range c.want {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s\nerror lacks %q:\n%s", c.src, want, r.stderr)
			}
		}
	}
	if got := w.host.ReadFile("/etc/yum.repos.d/r.repo"); got != "" {
		t.Errorf("a refused plan wrote %q", got)
	}
}

// exampleBothFamilies copies examples/both-families into the recipes
// directory and writes the attributes a test host needs: the fixture
// package instead of nginx, its configuration under /etc/toque-web, no
// service (no systemd runs in the namespace).
func exampleBothFamilies(t *testing.T, e *env, attrs string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "both-families", "web.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	e.recipe("web.hcl", string(b))
	file := filepath.Join(filepath.Dir(e.dir), "test.attrs")
	if err := os.WriteFile(file, []byte(attrs), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestE2EExampleBothFamilies: the example's one recipe installs and
// configures the web server on a Rocky host (dnf, yum_repository,
// dnf_makecache) and on a Debian host (apt, apt_repository, apt_update),
// each from a repository it adds in the same apply; the second plan has
// no changes on either.
func TestE2EExampleBothFamilies(t *testing.T) {
	t.Parallel()
	t.Run("rocky", func(t *testing.T) {
		w := newDnfWorld(t, false)
		attrs := exampleBothFamilies(t, w.env, fmt.Sprintf(`web = {
  families = {
    rhel = { package = "toque-app", conf_dir = "/etc/toque-web" }
  }
  dnf_baseurl    = "file://%s"
  manage_service = false
}
`, w.repo))
		r := w.toqueNS(0, "plan", "-attr-file="+attrs, "-out="+w.planFile())
		for _, want := range []string{`+ yum_repository "web"`, `+ package "web"`, "waits for dnf_makecache[web][0]", `+ file "site"`} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("plan lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "apt_") {
			t.Errorf("apt's types on a Rocky host:\n%s", r.stdout)
		}
		w.toqueNS(0, "apply", w.planFile())
		if got := w.host.Status(t, "toque-app"); got != "1.0-1" {
			t.Fatalf("toque-app %q", got)
		}
		if got := w.host.ReadFile("/etc/toque-web/toque-site.conf"); !strings.Contains(got, "on rocky 9.3.") {
			t.Errorf("site configuration:\n%s", got)
		}
		if r := w.toqueNS(0, "plan", "-attr-file="+attrs, "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
			t.Errorf("second plan:\n%s", r.stdout)
		}
	})
	t.Run("debian", func(t *testing.T) {
		w := newPkgWorld(t, false)
		attrs := exampleBothFamilies(t, w.env, fmt.Sprintf(`web = {
  families = {
    debian = { package = "toque-app", conf_dir = "/etc/toque-web" }
  }
  apt_uri        = "file:%s"
  manage_service = false
}
`, w.repo))
		r := w.toqueNS(0, "plan", "-attr-file="+attrs, "-out="+w.planFile())
		for _, want := range []string{`+ apt_repository "web"`, `+ package "web"`, "waits for apt_update[web][0]"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("plan lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "yum_repository") || strings.Contains(r.stdout, "dnf_") {
			t.Errorf("dnf's types on a Debian host:\n%s", r.stdout)
		}
		w.toqueNS(0, "apply", w.planFile())
		if got := w.status("toque-app"); got != "1.0 installed" {
			t.Fatalf("toque-app %q", got)
		}
		if r := w.toqueNS(0, "plan", "-attr-file="+attrs, "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
			t.Errorf("second plan:\n%s", r.stdout)
		}
	})
}

// TestE2EDnfWhatAPackageBrings: the plan reads the .rpm a package
// installs, so a file in a directory the package ships is planned in the
// same plan (without it: "Missing directory"), and its configuration file
// is predicted with its content: the plan shows the diff against the
// file the package ships.
func TestE2EDnfWhatAPackageBrings(t *testing.T) {
	t.Parallel()
	w := newDnfWorld(t, false)
	rpmtest.Repo(t, w.repo, rpmtest.Pkg{Name: "toque-conf", Version: "1.0", Config: "setting = packaged\n"})
	w.host.WriteFile(t, "/etc/yum.repos.d/fixture.repo", fmt.Sprintf("[fixture]\nname=fixture\nbaseurl=file://%s\ngpgcheck=0\n", w.repo))
	w.host.Refresh(t)
	w.recipe("main.hcl", `
package "toque-conf" {}

file "/usr/share/toque-conf/extra" {
  content = "extra\n"
}

file "/etc/toque-conf.conf" {
  content = "setting = mine\n"
}
`)
	r := w.toqueNS(0, "plan", "-out="+w.planFile())
	for _, want := range []string{`+ package "toque-conf"`, `+ file "/usr/share/toque-conf/extra"`, "-setting = packaged", "+setting = mine"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	w.toqueNS(0, "apply", w.planFile())
	if got := w.host.ReadFile("/etc/toque-conf.conf"); got != "setting = mine\n" {
		t.Errorf("/etc/toque-conf.conf: %q", got)
	}
	if r := w.toqueNS(0, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
}
