package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toquehq/toque/internal/debtest"
	"github.com/toquehq/toque/internal/testenv"
)

// The package end-to-end tests run `toque plan` and `toque apply` — the
// production command lines of apt and dpkg, unchanged — inside a mount
// namespace (unshare -m) where /etc and /var are overlays whose upper
// layers live in the test's temporary directory. The machine's own
// package database is never written: every test checks the sha256 of
// /var/lib/dpkg/status before and after. The namespace's apt knows only a
// file: repository of fixture packages built by the test (the machine's
// own sources and lists are hidden in the overlay).

// pkgWorld is one test's namespace: its overlay layers and its fixture
// repository.
type pkgWorld struct {
	*env
	layers string // upper and work directories of the overlays
	repo   string
}

var pkgFixtures = []debtest.Pkg{
	{Name: "toque-fixture", Version: "1.0"},
	{Name: "toque-fixture", Version: "2.0"},
	{Name: "toque-dep", Version: "1.0"},
	{Name: "toque-app", Version: "1.0", Depends: "toque-dep"},
	{Name: "toque-conf", Version: "1.0", Conffile: "setting = packaged\n",
		Postinst: `mkdir -p /var/lib/toque-conf && echo configured >> /var/lib/toque-conf/postinst.log`},
	{Name: "toque-fail", Version: "1.0", Depends: "toque-dep", Postinst: `echo "toque-fail: postinst fails on purpose" >&2; exit 1`},
}

// requireNamespaceOverlay lets the test go on only as root, with apt and
// dpkg-dev, and when overlays can be mounted in a new mount namespace.
func requireNamespaceOverlay(t *testing.T) {
	t.Helper()
	debtest.Require(t)
	testenv.MustHave(t, testenv.Unshare, testenv.Overlay)
}

// newPkgWorld makes the namespace's layers, hides the machine's apt
// sources and lists in them, and, when withRepo is set, configures the
// fixture repository and updates apt's lists, as an administrator would
// have before toque runs.
func newPkgWorld(t *testing.T, withRepo bool) *pkgWorld {
	t.Helper()
	requireNamespaceOverlay(t)
	host := debtest.HostStatusDigest(t)
	t.Cleanup(func() {
		if now := debtest.HostStatusDigest(t); now != host {
			t.Errorf("the machine's /var/lib/dpkg/status changed (sha256 %s, now %s): the test escaped its namespace", host, now)
		}
	})
	w := &pkgWorld{env: newEnv(t), layers: filepath.Join(t.TempDir(), "layers"), repo: filepath.Join(t.TempDir(), "repo")}
	for _, d := range []string{"etc-upper", "etc-work", "var-upper", "var-work"} {
		if err := os.MkdirAll(filepath.Join(w.layers, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Dir(w.repo), 0o755)
	debtest.Repo(t, w.repo, pkgFixtures...)
	setup := `rm -rf /etc/apt/sources.list.d /etc/apt/sources.list /var/lib/apt/lists /var/lib/apt/periodic
mkdir -p /etc/apt/sources.list.d /var/lib/apt/lists/partial`
	if withRepo {
		setup += fmt.Sprintf(`
echo 'deb [trusted=yes] file:%s ./' > /etc/apt/sources.list.d/toque-fixtures.list
apt-get -q update >/dev/null`, w.repo)
	}
	if r := w.ns("sh", "-c", setup); r.code != 0 {
		t.Fatalf("setting up the namespace: %s", r)
	}
	return w
}

// nsCmd is argv run inside the namespace.
func (w *pkgWorld) nsCmd(argv ...string) *exec.Cmd {
	script := fmt.Sprintf(`mount -t overlay overlay -o lowerdir=/etc,upperdir=%[1]s/etc-upper,workdir=%[1]s/etc-work /etc &&
mount -t overlay overlay -o lowerdir=/var,upperdir=%[1]s/var-upper,workdir=%[1]s/var-work /var && exec "$@"`, w.layers)
	return exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh"}, argv...)...)
}

// ns runs argv in the namespace.
func (w *pkgWorld) ns(argv ...string) result {
	w.t.Helper()
	return w.runCmd(w.nsCmd(argv...))
}

// toqueNS runs toque (-chdir to the recipes) in the namespace.
func (w *pkgWorld) toqueNS(want int, args ...string) result {
	w.t.Helper()
	r := w.ns(append([]string{toqueBin, "-chdir=" + w.dir}, args...)...)
	if want >= 0 && r.code != want {
		w.t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

// status is dpkg-query's version and state of pkg in the namespace.
func (w *pkgWorld) status(pkg string) string {
	w.t.Helper()
	r := w.ns("dpkg-query", "-W", "-f=${Version} ${db:Status-Status}", pkg)
	return strings.TrimSpace(r.stdout)
}

// addToRepo adds packages to the repository and updates the namespace's
// lists: the candidate moves.
func (w *pkgWorld) addToRepo(pkgs ...debtest.Pkg) {
	w.t.Helper()
	debtest.Repo(w.t, w.repo, pkgs...)
	if r := w.ns("apt-get", "-q", "update"); r.code != 0 {
		w.t.Fatalf("apt-get update: %s", r)
	}
}

func (w *pkgWorld) planFile() string { return filepath.Join(w.state, "..", "plan.out") }

func TestE2EPackageInstallThenNoChanges(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, true)
	w.recipe("main.hcl", `
package "toque-app" {}
`)
	r := w.toqueNS(0, "plan", "-out="+w.planFile())
	for _, want := range []string{`+ package "toque-app" {`, `+ version = "1.0"`, "# version: apt also installs toque-dep 1.0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	w.toqueNS(0, "apply", w.planFile())
	if got := w.status("toque-app"); got != "1.0 installed" {
		t.Fatalf("toque-app: %q", got)
	}
	if got := w.status("toque-dep"); got != "1.0 installed" {
		t.Fatalf("toque-dep: %q", got)
	}
	r = w.toqueNS(0, "plan", "-detailed-exitcode")
	if !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
}

func TestE2EPackagePinUpgradeRemovePurge(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, true)
	w.recipe("main.hcl", `
package "toque-fixture" {
  version = "1.0"
}
package "toque-conf" {}
`)
	w.toqueNS(0, "plan", "-out="+w.planFile())
	w.toqueNS(0, "apply", w.planFile())
	if got := w.status("toque-fixture"); got != "1.0 installed" {
		t.Fatalf("pinned: %q", got)
	}
	w.recipe("main.hcl", `
package "toque-fixture" {
  version = "2.0"
}
package "toque-conf" {
  action = "remove"
}
`)
	r := w.toqueNS(0, "plan", "-out="+w.planFile())
	if !strings.Contains(r.stdout, `~ version = "1.0" -> "2.0"`) || !strings.Contains(r.stdout, `- package "toque-conf"`) {
		t.Fatalf("plan:\n%s", r.stdout)
	}
	w.toqueNS(0, "apply", w.planFile())
	if got := w.status("toque-fixture"); got != "2.0 installed" {
		t.Fatalf("upgraded to the pin: %q", got)
	}
	if got := w.status("toque-conf"); got != "1.0 config-files" {
		t.Fatalf("removed: %q (its configuration stays: rc)", got)
	}
	w.toqueNS(0, "plan", "-detailed-exitcode") // remove of an rc package: nothing to do
	w.recipe("main.hcl", `
package "toque-conf" {
  action = "purge"
}
`)
	w.toqueNS(0, "plan", "-out="+w.planFile())
	w.toqueNS(0, "apply", w.planFile())
	if got := w.status("toque-conf"); got != "" {
		t.Fatalf("purged: %q", got)
	}
	if r := w.ns("test", "-e", "/etc/toque-conf.conf"); r.code == 0 {
		t.Error("purge left /etc/toque-conf.conf")
	}
}

func TestE2EPackageCandidateMovedMakesThePlanStale(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, true)
	w.recipe("main.hcl", `
package "toque-fixture" {}
`)
	r := w.toqueNS(0, "plan", "-out="+w.planFile())
	if !strings.Contains(r.stdout, `+ version = "2.0"`) {
		t.Fatalf("plan:\n%s", r.stdout)
	}
	w.addToRepo(debtest.Pkg{Name: "toque-fixture", Version: "3.0"})
	r = w.toqueNS(3, "apply", w.planFile())
	if !strings.Contains(r.stderr, "candidate:toque-fixture: 2.0 at plan time, now 3.0") {
		t.Fatalf("stale report:\n%s", r)
	}
	if got := w.status("toque-fixture"); got != "" {
		t.Fatalf("a stale plan installed something: %q", got)
	}
	// Another process installs it meanwhile: the plan is already done.
	r = w.toqueNS(0, "plan", "-out="+w.planFile())
	w.ns("apt-get", "-q", "-y", "install", "toque-fixture=3.0")
	r = w.toqueNS(0, "apply", w.planFile())
	if !strings.Contains(r.stdout, "0 failed") || w.status("toque-fixture") != "3.0 installed" {
		t.Fatalf("already done:\n%s", r)
	}
}

func TestE2EPackageNotAvailable(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, true)
	w.recipe("main.hcl", `
package "toque-nosuch" {}
`)
	r := w.toqueNS(1, "plan")
	for _, want := range []string{"main.hcl:2:1", "Missing a repository that offers package toque-nosuch", "searched: file:" + w.repo + " ./"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("error lacks %q:\n%s", want, r.stderr)
		}
	}
}

// TestE2EPackageRepositoryAddedInTheSamePlan: a package only a repository
// the same plan adds offers is planned with its version known at apply,
// and installed in one apply: the apt_update the repository notifies
// immediately reads its lists, and the package is read and planned again
// right before it converges. The next plan has nothing to do.
func TestE2EPackageRepositoryAddedInTheSamePlan(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, false)
	w.recipe("main.hcl", fmt.Sprintf(`
apt_repository "fixtures" {
  uri          = "file:%s"
  distribution = "./"
  trusted      = true
  notifies "update" {
    resource = "apt_update[lists]"
    timing   = "immediately"
  }
}

apt_update "lists" {
  action = "nothing"
}

package "toque-app" {}
`, w.repo))
	r := w.toqueNS(0, "plan", "-out="+w.planFile())
	for _, want := range []string{
		"# package[toque-app] will be created",
		"#   version is known at apply: it needs a repository that offers package toque-app",
		"#     waits for apt_update[lists] (action update, notified by apt_repository[fixtures])",
		`+ version = (known at apply)`,
		"1 with values known at apply",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	var view struct {
		Resources []struct {
			Address string `json:"address"`
			Changes []struct {
				Property     string `json:"property"`
				After        string `json:"after"`
				KnownAtApply bool   `json:"known_at_apply"`
			} `json:"changes"`
			Awaits []struct {
				Property string   `json:"property"`
				After    []string `json:"after"`
			} `json:"awaits"`
		} `json:"resources"`
	}
	js := w.toqueNS(0, "show", "-json", w.planFile())
	if err := json.Unmarshal([]byte(js.stdout), &view); err != nil {
		t.Fatalf("show -json: %v\n%s", err, js.stdout)
	}
	found := false
	for _, res := range view.Resources {
		if res.Address != "package[toque-app]" {
			continue
		}
		found = len(res.Changes) == 1 && res.Changes[0].Property == "version" && res.Changes[0].KnownAtApply && res.Changes[0].After == "(known at apply)" &&
			len(res.Awaits) == 1 && res.Awaits[0].Property == "version" && len(res.Awaits[0].After) == 1
	}
	if !found {
		t.Errorf("show -json does not mark the version unknown:\n%s", js.stdout)
	}
	if md := w.toqueNS(0, "show", "-markdown", w.planFile()); !strings.Contains(md.stdout, "`version` = `(known at apply)`") {
		t.Errorf("show -markdown:\n%s", md.stdout)
	}

	r = w.toqueNS(0, "apply", w.planFile())
	if !strings.Contains(r.stdout, "package[toque-app]: Creation complete") || !strings.Contains(r.stdout, "decided at apply: read version once the resources before it ran") {
		t.Errorf("apply:\n%s", r)
	}
	if got := w.status("toque-app"); got != "1.0 installed" {
		t.Fatalf("toque-app: %q\n%s", got, r)
	}
	if got := w.status("toque-dep"); got != "1.0 installed" {
		t.Fatalf("toque-dep, its dependency: %q", got)
	}
	r = w.toqueNS(0, "plan", "-detailed-exitcode")
	if !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
}

// TestE2EPackageStillMissingAtApply: a package deferred to apply that the
// repository the plan adds does not offer either fails, with what it
// needs and where apt searched; what came before it is applied, and the
// plan says how to install a package from a new repository in one apply
// when nothing updates the lists before it.
func TestE2EPackageStillMissingAtApply(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, false)
	repo := fmt.Sprintf(`
apt_repository "fixtures" {
  uri          = "file:%s"
  distribution = "./"
  trusted      = true
}
`, w.repo)
	w.recipe("main.hcl", repo+`
package "toque-fixture" {}
`)
	r := w.toqueNS(1, "plan")
	for _, want := range []string{"Missing a repository that offers package toque-fixture", "(searched: (none: no repository is configured))", "update apt's lists before package[toque-fixture] in the plan"} {
		if !strings.Contains(strings.Join(strings.Fields(r.stderr), " "), want) {
			t.Errorf("error lacks %q:\n%s", want, r.stderr)
		}
	}
	w.recipe("main.hcl", repo+`
apt_update "lists" {
  action = "update"
}

package "toque-nosuch" {}
`)
	w.toqueNS(0, "plan", "-out="+w.planFile())
	r = w.toqueNS(-1, "apply", w.planFile())
	if r.code == 0 {
		t.Fatalf("apply succeeded:\n%s", r)
	}
	out := strings.Join(strings.Fields(r.stdout+r.stderr), " ")
	for _, want := range []string{"package[toque-nosuch]: failed", "package[toque-nosuch]: package toque-nosuch is still not available from any configured repository now that the earlier resources of this apply have updated apt's lists (searched: file:" + w.repo + " ./)"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply lacks %q:\n%s", want, r)
		}
	}
	if r := w.ns("test", "-f", "/etc/apt/sources.list.d/fixtures.list"); r.code != 0 {
		t.Error("the repository before the failed package was not added")
	}
}

func TestE2EPackageLockHeld(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, true)
	w.recipe("main.hcl", `
package "toque-fixture" {
  lock_timeout = 1
}
`)
	w.toqueNS(0, "plan", "-out="+w.planFile())
	// Another process holds the dpkg lock, inside the namespace: perl
	// (Essential on Debian) takes apt's fcntl lock on lock-frontend.
	ready := filepath.Join(t.TempDir(), "locked")
	script := `perl -MFcntl -e 'open(my $f, ">>", "/var/lib/dpkg/lock-frontend") or die $!;
my $l = pack("s s x4 q q l x4", F_WRLCK, 0, 0, 0, 0); fcntl($f, F_SETLK, $l) or die "lock: $!";
open(my $r, ">", $ARGV[0]) or die $!; close $r; sleep 60' "$1" </dev/null >/dev/null &
holder=$!
n=0
while [ ! -e "$1" ]; do
  n=$((n+1)); [ $n -lt 200 ] || { echo "the lock holder did not start" >&2; exit 99; }
  sleep 0.05
done
echo "holder=$holder"
"$2" -chdir="$3" apply "$4"; code=$?
kill $holder
exit $code`
	r := w.ns("sh", "-c", script, "sh", ready, toqueBin, w.dir, w.planFile())
	holder := ""
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "holder=") {
			holder = strings.TrimPrefix(l, "holder=")
		}
	}
	want := "the dpkg lock /var/lib/dpkg/lock-frontend is held by process " + holder + " (perl)"
	if r.code != 1 || holder == "" || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "waited 1s (lock_timeout) and changed nothing") {
		t.Fatalf("want exit 1 and %q in:\n%s", want, r)
	}
	if got := w.status("toque-fixture"); got != "" {
		t.Fatalf("status %q", got)
	}
	// Once the lock is free, the same plan applies.
	w.toqueNS(0, "apply", w.planFile())
	if got := w.status("toque-fixture"); got != "2.0 installed" {
		t.Fatalf("status %q", got)
	}
}

func TestE2EPackageAptFailsHalfway(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, true)
	w.recipe("main.hcl", `
package "toque-fail" {}
`)
	w.toqueNS(0, "plan", "-out="+w.planFile())
	r := w.toqueNS(1, "apply", w.planFile())
	for _, want := range []string{"toque-fail: postinst fails on purpose", "Changed before it failed: toque-dep: not installed, now installed 1.0; toque-fail: not installed, now half-installed 1.0."} {
		if !strings.Contains(r.stderr+r.stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, r)
		}
	}
	// The report says so too, and the plan is not finished: applying it
	// again retries (and fails again), never "already applied".
	reports, _ := filepath.Glob(filepath.Join(w.state, "reports", "2*.json"))
	if len(reports) != 1 {
		t.Fatalf("reports %v", reports)
	}
	b, _ := os.ReadFile(reports[0])
	var rep struct {
		PlanFinished bool `json:"plan_finished"`
		Resources    []struct {
			Outcome string `json:"outcome"`
			Error   string `json:"error"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.PlanFinished || len(rep.Resources) != 1 || rep.Resources[0].Outcome != "failed" || !strings.Contains(rep.Resources[0].Error, "Changed before it failed") {
		t.Fatalf("report %s", b)
	}
	if r := w.toqueNS(-1, "apply", w.planFile()); r.code == 6 || r.code == 0 {
		t.Fatalf("applying the failed plan again: %s", r)
	}
}

func TestE2EPackagesBadInput(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, true)
	cases := []struct {
		name, src, want string
	}{
		{"unknown action", `package "toque-fixture" { action = "reinstall" }`, `main.hcl:1:36`},
		{"version apt rejects", `package "toque-fixture" { version = "1.0; rm" }`, `main.hcl:1:37`},
		{"checksum not 64 hex digits", `remote_file "/tmp/x" {
  source   = "https://example.com/x"
  checksum = "abc"
}`, `main.hcl:3:14`},
		{"not an http URL", `remote_file "/tmp/x" { source = "ftp://example.com/x" }`, `main.hcl:1:33`},
		{"repository uri without a scheme", `apt_repository "x" {
  uri          = "deb.example.com/debian"
  distribution = "stable"
}`, `main.hcl:2:18`},
		{"source and version in conflict", `package "toque-local" {
  source  = "DEB"
  version = "9.9"
}`, `main.hcl:1:1`},
	}
	local := debtest.Build(t, t.TempDir(), debtest.Pkg{Name: "toque-local", Version: "1.0"})
	os.Chmod(filepath.Dir(local), 0o755)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.recipe("main.hcl", strings.ReplaceAll(c.src, "DEB", local)+"\n")
			r := w.toqueNS(1, "plan", "-out="+w.planFile())
			if !strings.Contains(r.stderr, c.want) {
				t.Fatalf("want %s in:\n%s", c.want, r)
			}
			if _, err := os.Stat(w.planFile()); err == nil {
				if r := w.toqueNS(1, "apply", w.planFile()); !strings.Contains(r.stderr, "errored") {
					t.Errorf("an errored plan must never apply:\n%s", r)
				}
			}
		})
	}
}

// TestE2ERemoteFile runs the built binary, not toque in-process: Go
// loads the system's CAs once per process, and a download in this test
// process would fix them before a test that trusts its own CA through
// SSL_CERT_FILE.
func TestE2ERemoteFile(t *testing.T) {
	t.Parallel()
	// The binary, not command.Run: remote_file keeps its downloads under
	// the state directory of the process's environment
	// (resources.DefaultCacheDir), which an in-process run does not set.
	e := newEnv(t)
	var mu sync.Mutex
	body, etag := "hello\n", `"1"`
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		requests++
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	secret := strings.Replace(srv.URL, "http://", "http://alice:s3cr3t@", 1)
	e.write("motd", "old\n", 0o644)
	e.recipe("main.hcl", fmt.Sprintf(`
remote_file "ROOT/motd" {
  source         = "%s/motd"
  headers        = { Authorization = "Bearer t0k3n" }
  allow_internal = true
}
remote_file "ROOT/public" {
  source         = "%s/public"
  allow_internal = true
}
`, secret, srv.URL))
	plan := filepath.Join(e.state, "..", "plan.out")
	r := e.mustBin(0, "plan", "-out="+plan)
	for _, want := range []string{"+hello", "downloaded with credentials (in source or headers): the content is not shown", `+ checksum`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	js := e.mustBin(0, "show", "-json", plan)
	for _, out := range []string{r.stdout, r.stderr, js.stdout} {
		for _, secret := range []string{"s3cr3t", "alice", "t0k3n"} {
			if strings.Contains(out, secret) {
				t.Fatalf("%q shown:\n%s", secret, out)
			}
		}
	}
	e.mustBin(0, "apply", plan)
	if e.read("motd") != "hello\n" || e.read("public") != "hello\n" {
		t.Fatalf("content %q %q", e.read("motd"), e.read("public"))
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return requests
	}
	before := count()
	e.mustBin(0, "plan", "-detailed-exitcode")
	if n := count() - before; n != 2 {
		t.Errorf("%d requests for the second plan: want one conditional GET each", n)
	}
	// The source changes between plan and apply: stale.
	e.mustBin(0, "plan", "-out="+plan)
	mu.Lock()
	body, etag = "changed\n", `"2"`
	mu.Unlock()
	r = e.bin("apply", plan)
	if r.code != 3 || !strings.Contains(r.stderr, "source_sha256") {
		t.Fatalf("stale: %s", r)
	}
	if e.read("public") != "hello\n" {
		t.Fatal("a stale plan changed the file")
	}
}

// TestE2EPackagesExample runs examples/packages as its README says, in the
// namespace: build the repository, apply (repository, update), apply
// (the package), then nothing to do.
func TestE2EPackagesExample(t *testing.T) {
	t.Parallel()
	w := newPkgWorld(t, false)
	repo := filepath.Join(t.TempDir(), "example-repo")
	os.Chmod(filepath.Dir(repo), 0o755)
	cmd := exec.Command("../examples/packages/build-repo.sh", repo)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build-repo.sh: %v\n%s", err, out)
	}
	dir, _ := filepath.Abs("../examples/packages/recipes")
	w.dir = dir
	plan := w.planFile()
	run := func(args ...string) result {
		t.Helper()
		c := w.nsCmd(append([]string{"env", "TOQUE_EXAMPLE_REPO=" + repo, toqueBin, "-chdir=" + dir}, args...)...)
		r := w.runCmd(c)
		if r.code != 0 {
			t.Fatalf("toque %s: %s", strings.Join(args, " "), r)
		}
		return r
	}
	r := run("plan", "-out="+plan)
	for _, want := range []string{`+ apt_repository "toque-example"`, `+ package "toque-hello"`, "+ version = (known at apply)"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	run("apply", plan)
	if got := w.ns("cat", "/usr/share/toque-hello/hello.txt"); got.stdout != "Hello from a package toque installed.\n" {
		t.Fatalf("hello.txt: %s", got)
	}
	if r := run("plan"); !strings.Contains(r.stdout, "No changes.") {
		t.Fatalf("second plan:\n%s", r.stdout)
	}
}
