package packages

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/debtest"
	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
)

// The package tests run the real apt and dpkg against a throwaway root
// (debtest.NewRoot): fixture packages built with dpkg-deb, a file:
// repository indexed with dpkg-scanpackages, APT_CONFIG and DPKG_ADMINDIR
// in the children's environment. The machine's own package database is
// never touched; every test checks its digest.

var fixturePkgs = []debtest.Pkg{
	{Name: "toque-fixture", Version: "1.0"},
	{Name: "toque-fixture", Version: "2.0"},
	{Name: "toque-dep", Version: "1.0"},
	{Name: "toque-app", Version: "1.0", Depends: "toque-dep"},
	{Name: "toque-conf", Version: "1.0", Conffile: "setting = packaged-1\n",
		Postinst: `mkdir -p "${DPKG_ROOT}/var/lib/toque-conf" && echo "configured $2" >> "${DPKG_ROOT}/var/lib/toque-conf/postinst.log"`},
	{Name: "toque-conf", Version: "2.0", Conffile: "setting = packaged-2\n",
		Postinst: `mkdir -p "${DPKG_ROOT}/var/lib/toque-conf" && echo "configured $2" >> "${DPKG_ROOT}/var/lib/toque-conf/postinst.log"`},
	{Name: "toque-fail", Version: "1.0", Depends: "toque-dep", Postinst: `echo "toque-fail: postinst fails on purpose" >&2; exit 1`},
}

// pkgEnv is one test's world: a repository, a root, and the package type
// pointed at them.
type pkgEnv struct {
	t    *testing.T
	repo string
	root *debtest.Root
	typ  *packageType
	prov *aptProvider
	// calls logs every apt and dpkg command the type started (through
	// wrappers first on PATH), one line each: "dpkg-query", "apt-cache
	// policy", "apt-get -s".
	calls string
	// cache is the type's download cache, where it keeps .debs.
	cache string
}

func newPkgEnv(t *testing.T) *pkgEnv {
	t.Helper()
	debtest.Require(t)
	host := debtest.HostStatusDigest(t)
	t.Cleanup(func() {
		if now := debtest.HostStatusDigest(t); now != host {
			t.Errorf("the machine's dpkg status file changed during the test (sha256 %s, now %s)", host, now)
		}
	})
	e := &pkgEnv{t: t, repo: filepath.Join(t.TempDir(), "repo")}
	debtest.Repo(t, e.repo, fixturePkgs...)
	e.root = debtest.NewRoot(t, e.repo)
	// Wrappers that log each call, then run the real tool: the tests
	// count processes.
	wrap := t.TempDir()
	e.calls = filepath.Join(wrap, "calls.log")
	for _, tool := range []string{"dpkg-query", "apt-cache", "apt-get", "dpkg-deb"} {
		real := "/usr/bin/" + tool
		script := "#!/bin/sh\nprintf '%s\\n' \"" + tool + " $*\" >> " + e.calls + "\nexec " + real + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(wrap, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"PATH": wrap + ":" + os.Getenv("PATH")}
	for k, v := range e.root.Env {
		env[k] = v
	}
	e.prov = &aptProvider{env: env, readTimeout: time.Minute}
	e.typ = newPackageType(func() (PackageProvider, error) { return e.prov, nil })
	e.cache = filepath.Join(t.TempDir(), "cache")
	e.typ.cacheDir = func() string { return e.cache }
	return e
}

// res makes a package resource with action and values.
func (e *pkgEnv) res(name, action string, values map[string]cty.Value) *resources.Resource {
	e.t.Helper()
	vals := map[string]cty.Value{}
	for k, v := range values {
		if p := e.typ.schema.Property(k); p != nil && p.Normalize != nil {
			nv, err := p.Normalize(v)
			if err != nil {
				e.t.Fatalf("%s: %v", k, err)
			}
			v = nv
		}
		vals[k] = v
	}
	if _, ok := vals["package_name"]; !ok {
		vals["package_name"] = cty.StringVal(name)
	}
	return resources.NewResource(e.typ.schema, name, action, vals)
}

// plan reads r as the planner does (LoadAll, then Plan).
func (e *pkgEnv) plan(r *resources.Resource) (*resources.State, *resources.Step, error) {
	e.t.Helper()
	states, err := e.typ.LoadAll(context.Background(), []*resources.Resource{r.LoadView()})
	if err != nil {
		return nil, nil, err
	}
	st := states[0]
	if st == nil {
		if st, err = e.typ.Load(context.Background(), r.LoadView()); err != nil {
			return nil, nil, err
		}
	}
	step, err := resources.PlanStep(e.typ, r, st)
	return st, step, err
}

// mustPlan is plan, failing on an error and checking the kind.
func (e *pkgEnv) mustPlan(r *resources.Resource, kind resources.Kind) (*resources.State, *resources.Step) {
	e.t.Helper()
	st, step, err := e.plan(r)
	if err != nil {
		e.t.Fatalf("plan %s %s: %v", r.Action, r.Name, err)
	}
	if step.Kind != kind {
		e.t.Fatalf("plan %s %s: %s (%s), want %s", r.Action, r.Name, step.Kind, step.Reason, kind)
	}
	return st, step
}

// apply reads r again and converges it, as apply does right before a
// resource.
func (e *pkgEnv) apply(r *resources.Resource) error {
	e.t.Helper()
	st, err := e.typ.Load(context.Background(), r.LoadView())
	if err != nil {
		return err
	}
	step, err := resources.PlanStep(e.typ, r, st)
	if err != nil {
		return err
	}
	return resources.ConvergeStep(context.Background(), e.typ, &resources.Env{Logger: hclog.NewNullLogger()}, r, st, step)
}

func (e *pkgEnv) mustApply(r *resources.Resource) {
	e.t.Helper()
	if err := e.apply(r); err != nil {
		e.t.Fatalf("apply %s %s: %v", r.Action, r.Name, err)
	}
}

func (e *pkgEnv) status(pkg string) string { return e.root.Status(e.t, pkg) }

// callLog returns the commands started since the last call, and forgets
// them.
func (e *pkgEnv) callLog() []string {
	b, _ := os.ReadFile(e.calls)
	os.Remove(e.calls)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func str(s string) cty.Value { return cty.StringVal(s) }

func TestPackageInstallThenNoOp(t *testing.T) {
	e := newPkgEnv(t)
	r := e.res("toque-fixture", "install", nil)
	_, step := e.mustPlan(r, resources.Create)
	ch := step.Change("version")
	if ch == nil || ch.Before != cty.NilVal || ch.After.AsString() != "2.0" || ch.Note != "" {
		t.Fatalf("changes %+v: want version → the candidate 2.0, with nothing else pulled in", step.Changes)
	}
	if step.Reason != "toque-fixture is not installed; the candidate is 2.0" {
		t.Errorf("reason %q", step.Reason)
	}
	e.mustApply(r)
	if got := e.status("toque-fixture"); got != "2.0 installed" {
		t.Fatalf("after apply: %q", got)
	}
	_, step = e.mustPlan(r, resources.NoOp)
	if step.Reason != "toque-fixture 2.0 is installed" {
		t.Errorf("second plan: %q", step.Reason)
	}
}

func TestPackagePinAndUpgrade(t *testing.T) {
	e := newPkgEnv(t)
	pinned := e.res("toque-fixture", "install", map[string]cty.Value{"version": str("1.0")})
	_, step := e.mustPlan(pinned, resources.Create)
	if step.Changes[0].After.AsString() != "1.0" {
		t.Fatalf("pinned install: %+v", step.Changes)
	}
	e.mustApply(pinned)
	e.mustPlan(pinned, resources.NoOp)
	// install without a version leaves an installed package alone…
	e.mustPlan(e.res("toque-fixture", "install", nil), resources.NoOp)
	// …upgrade moves it to the candidate…
	up := e.res("toque-fixture", "upgrade", nil)
	_, step = e.mustPlan(up, resources.Update)
	if c := step.Changes[0]; c.Before.AsString() != "1.0" || c.After.AsString() != "2.0" {
		t.Fatalf("upgrade: %+v", c)
	}
	// …and so does a new pin, which can also go back (a downgrade).
	e.mustApply(e.res("toque-fixture", "upgrade", map[string]cty.Value{"version": str("2.0")}))
	if got := e.status("toque-fixture"); got != "2.0 installed" {
		t.Fatalf("after upgrade to the pin: %q", got)
	}
	e.mustPlan(up, resources.NoOp)
	_, step = e.mustPlan(pinned, resources.Update)
	if !strings.Contains(step.Reason, "(a downgrade)") {
		t.Errorf("downgrade reason %q", step.Reason)
	}
	e.mustApply(pinned)
	if got := e.status("toque-fixture"); got != "1.0 installed" {
		t.Fatalf("after the downgrade: %q", got)
	}
}

func TestPackageDependenciesAndRemoval(t *testing.T) {
	e := newPkgEnv(t)
	app := e.res("toque-app", "install", nil)
	_, step := e.mustPlan(app, resources.Create)
	if n := step.Changes[0].Note; n != "apt also installs toque-dep 1.0" {
		t.Fatalf("note %q: the plan must say what apt pulls in", n)
	}
	e.mustApply(app)
	if e.status("toque-dep") != "1.0 installed" {
		t.Fatal("dependency not installed")
	}
	// Removing the dependency removes what depends on it: the plan says so.
	rm := e.res("toque-dep", "remove", nil)
	_, step = e.mustPlan(rm, resources.Delete)
	if step.Reason != "toque-dep 1.0 is installed; apt also removes toque-app 1.0" {
		t.Fatalf("removal reason %q", step.Reason)
	}
	e.mustApply(rm)
	if e.status("toque-app") != "" && !strings.HasSuffix(e.status("toque-app"), "not-installed") {
		t.Fatalf("toque-app: %q", e.status("toque-app"))
	}
	e.mustPlan(rm, resources.NoOp)
}

func TestPackageConffilesAndPurge(t *testing.T) {
	e := newPkgEnv(t)
	conf := filepath.Join(e.root.Dir, "etc/toque-conf.conf")
	e.mustApply(e.res("toque-conf", "install", map[string]cty.Value{"version": str("1.0")}))
	if b, _ := os.ReadFile(filepath.Join(e.root.Dir, "var/lib/toque-conf/postinst.log")); !strings.Contains(string(b), "configured") {
		t.Fatalf("postinst did not run: %q", b)
	}
	// The administrator changes the configuration; an upgrade keeps it
	// (--force-confdef --force-confold) and dpkg never asks.
	if err := os.WriteFile(conf, []byte("setting = mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustApply(e.res("toque-conf", "upgrade", nil))
	if got := e.status("toque-conf"); got != "2.0 installed" {
		t.Fatalf("upgrade: %q", got)
	}
	if b, _ := os.ReadFile(conf); string(b) != "setting = mine\n" {
		t.Fatalf("the changed configuration file was replaced: %q", b)
	}
	if b, _ := os.ReadFile(conf + ".dpkg-dist"); string(b) != "setting = packaged-2\n" {
		t.Errorf("the package's new version should be beside it as .dpkg-dist: %q", b)
	}
	// Removed, its configuration stays: the state is config-files (rc),
	// which dpkg-query reports with a version and exit 0.
	rm := e.res("toque-conf", "remove", nil)
	e.mustApply(rm)
	if got := e.status("toque-conf"); got != "2.0 config-files" {
		t.Fatalf("after remove: %q", got)
	}
	_, step := e.mustPlan(rm, resources.NoOp)
	if step.Reason != "toque-conf is removed; its configuration files remain (purge removes them)" {
		t.Errorf("remove of rc: %q", step.Reason)
	}
	_, step = e.mustPlan(e.res("toque-conf", "install", nil), resources.Create)
	if step.Reason != "toque-conf is removed, its configuration files remain; apt installs 2.0" {
		t.Errorf("install of rc: %q", step.Reason)
	}
	purge := e.res("toque-conf", "purge", nil)
	_, step = e.mustPlan(purge, resources.Delete)
	if step.Reason != "toque-conf is removed, its configuration files remain" {
		t.Errorf("purge reason %q", step.Reason)
	}
	e.mustApply(purge)
	if _, err := os.Stat(conf); !os.IsNotExist(err) {
		t.Errorf("purge left %s (%v)", conf, err)
	}
	e.mustPlan(purge, resources.NoOp)
}

func TestPackageOverwriteConfigFiles(t *testing.T) {
	e := newPkgEnv(t)
	conf := filepath.Join(e.root.Dir, "etc/toque-conf.conf")
	e.mustApply(e.res("toque-conf", "install", map[string]cty.Value{"version": str("1.0")}))
	os.WriteFile(conf, []byte("setting = mine\n"), 0o644)
	e.mustApply(e.res("toque-conf", "upgrade", map[string]cty.Value{"overwrite_config_files": cty.True}))
	if b, _ := os.ReadFile(conf); string(b) != "setting = packaged-2\n" {
		t.Fatalf("overwrite_config_files kept the old file: %q", b)
	}
}

func TestPackageNotAvailable(t *testing.T) {
	e := newPkgEnv(t)
	_, step := e.mustPlan(e.res("toque-nosuch", "install", nil), resources.Create)
	// Its version is known at apply, once an earlier apt_update reads a
	// repository that offers it (Need.AtApply).
	if len(step.Needs) != 1 || !step.Needs[0].AtApply || step.Needs[0].Property != "version" || step.Needs[0].Namespace != resources.NamespaceAptSource ||
		len(step.Changes) != 1 || step.Changes[0].Property != "version" || step.Changes[0].After.IsKnown() {
		t.Fatalf("step %+v", step)
	}
	msg := step.Needs[0].Missing
	if !strings.Contains(msg, "package toque-nosuch is not available from any configured repository (searched: file:"+e.repo+" ./)") ||
		!strings.Contains(msg, "in one apply") {
		t.Fatalf("message %q must name the repositories searched, and say how to install it in one apply", msg)
	}
	upd := AptUpdateType().(resources.NeedMeeter)
	for action, meets := range map[string]bool{"update": true, "periodic": true, "nothing": false} {
		if got := upd.Meets(resources.NewResource(upd.Schema(), "lists", action, nil), step.Needs[0]); got != meets {
			t.Errorf("apt_update %s meets it: %v", action, got)
		}
	}
	// Known from what the repositories offer, not from what is installed.
	typ := PackageType().(resources.Awaiter)
	for fact, from := range map[string]bool{"candidate:toque-nosuch": true, "searched": true, "apt": true, "state:toque-nosuch": false, "held:toque-nosuch": false} {
		if typ.KnownFrom("version", fact) != from {
			t.Errorf("version known from %s: %v", fact, !from)
		}
	}
	// A list with versions pinned is not deferred.
	_, step = e.mustPlan(e.res("toque-nosuch", "install", map[string]cty.Value{
		"package_name": cty.ListVal([]cty.Value{str("toque-nosuch"), str("toque-fixture")}),
		"version":      cty.ListVal([]cty.Value{cty.NullVal(cty.String), str("1.0")}),
	}), resources.Create)
	if len(step.Needs) != 1 || step.Needs[0].AtApply || !strings.Contains(step.Needs[0].Missing, "in an earlier apply") {
		t.Fatalf("pinned: needs %+v", step.Needs)
	}
	_, _, err := e.plan(e.res("toque-fixture", "install", map[string]cty.Value{"version": str("3.0")}))
	if err == nil || err.Error() != "version 3.0 of toque-fixture is not available from the configured repositories (they offer: 2.0, 1.0)" {
		t.Fatalf("a version nobody offers: %v", err)
	}
}

func TestPackageHeld(t *testing.T) {
	e := newPkgEnv(t)
	e.root.Install(t, "toque-fixture=1.0")
	hold := runIn(t, e.root.Env, "sh", "-c", "echo 'toque-fixture hold' | dpkg --admindir=\"$DPKG_ADMINDIR\" --set-selections")
	_ = hold
	_, step := e.mustPlan(e.res("toque-fixture", "upgrade", nil), resources.NoOp)
	if step.Reason != "toque-fixture is held at 1.0 (held): upgrade leaves it, as apt upgrade does" {
		t.Errorf("upgrade of a held package: %q", step.Reason)
	}
	for _, r := range []*resources.Resource{
		e.res("toque-fixture", "install", map[string]cty.Value{"version": str("2.0")}),
		e.res("toque-fixture", "remove", nil),
	} {
		_, _, err := e.plan(r)
		if err == nil || !strings.Contains(err.Error(), "toque-fixture is held at 1.0 (apt-mark hold): apt refuses to change a held package") {
			t.Errorf("%s of a held package: %v", r.Action, err)
		}
	}
}

func TestPackageFromSource(t *testing.T) {
	e := newPkgEnv(t)
	local := debtest.Build(t, t.TempDir(), debtest.Pkg{Name: "toque-local", Version: "0.5", Depends: "toque-dep"})
	r := e.res("toque-local", "install", map[string]cty.Value{"source": str(local)})
	_, step := e.mustPlan(r, resources.Create)
	if c := step.Changes[0]; c.After.AsString() != "0.5" || c.Note != "apt also installs toque-dep 1.0" {
		t.Fatalf("change %+v", c)
	}
	e.mustApply(r)
	if e.status("toque-local") != "0.5 installed" {
		t.Fatalf("status %q", e.status("toque-local"))
	}
	e.mustPlan(r, resources.NoOp)
	for _, c := range []struct {
		name   string
		values map[string]cty.Value
		want   string
	}{
		{"toque-local", map[string]cty.Value{"source": str(local), "version": str("0.6")}, `version "0.6" conflicts with source ` + local + `, which is version 0.5 of toque-local`},
		{"toque-other", map[string]cty.Value{"source": str(local)}, "is package toque-local, not toque-other"},
	} {
		_, _, err := e.plan(e.res(c.name, "install", c.values))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.values, err, c.want)
		}
	}
}

func TestPackageListInOneCall(t *testing.T) {
	e := newPkgEnv(t)
	r := e.res("fixtures", "install", map[string]cty.Value{
		"package_name": cty.TupleVal([]cty.Value{str("toque-fixture"), str("toque-dep")}),
		"version":      cty.TupleVal([]cty.Value{str("1.0"), cty.NullVal(cty.String)}),
	})
	_, step := e.mustPlan(r, resources.Create)
	if got := step.Changes[0].After; !got.RawEquals(cty.ListVal([]cty.Value{str("1.0"), str("1.0")})) {
		t.Fatalf("after %#v", got)
	}
	e.callLog()
	e.mustApply(r)
	var gets []string
	for _, c := range e.callLog() {
		if strings.HasPrefix(c, "apt-get") && !strings.Contains(c, " -s ") && !strings.HasPrefix(c, "apt-get download") {
			gets = append(gets, c)
		}
	}
	if len(gets) != 1 || !strings.HasSuffix(gets[0], "--no-download install toque-fixture=1.0 toque-dep=1.0") {
		t.Fatalf("apt-get calls %q, want one installing both exact versions", gets)
	}
	e.mustPlan(r, resources.NoOp)
}

// TestPackageReadsInOneBatch: planning many packages starts one
// dpkg-query, an apt-get -s only for a resource with work (whose answer,
// for packages not installed, names their candidates: no apt-cache
// policy, which is only for what an action may upgrade, never for what is
// installed or removed), and, for the .debs those installs unpack, with a
// cold cache one apt-get download --print-uris, one apt-get download and
// a dpkg-deb per member of each .deb; with a warm one nothing more.
func TestPackageReadsInOneBatch(t *testing.T) {
	e := newPkgEnv(t)
	e.root.Install(t, "toque-fixture=2.0", "toque-dep")
	var rs []*resources.Resource
	for _, n := range []string{"toque-fixture", "toque-dep", "toque-app", "toque-conf"} {
		rs = append(rs, e.res(n, "install", nil).LoadView())
	}
	kindsOf := func(calls []string) string {
		var kinds []string
		for _, c := range calls {
			f := strings.Fields(c)
			kinds = append(kinds, f[0]+" "+f[1])
		}
		return strings.Join(kinds, ",")
	}
	e.callLog()
	states, err := e.typ.LoadAll(context.Background(), rs)
	if err != nil {
		t.Fatal(err)
	}
	calls := e.callLog()
	want := "dpkg-query -W,apt-get -q,apt-get -q,apt-get download,apt-get download," +
		"dpkg-deb --ctrl-tarfile,dpkg-deb --fsys-tarfile,dpkg-deb --ctrl-tarfile,dpkg-deb --fsys-tarfile"
	if kindsOf(calls) != want {
		t.Fatalf("commands %q, want %s (two simulations: toque-app and toque-conf have work; their .debs fetched and read once)", calls, want)
	}
	if states[2].Extra[xCandidate+"toque-app"] != "1.0" || states[3].Extra[xCandidate+"toque-conf"] != "2.0" {
		t.Errorf("candidates from the simulations: %q, %q", states[2].Extra[xCandidate+"toque-app"], states[3].Extra[xCandidate+"toque-conf"])
	}
	if _, err := e.typ.LoadAll(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	if got, want := kindsOf(e.callLog()), "dpkg-query -W,apt-get -q,apt-get -q"; got != want {
		t.Errorf("with the .debs cached: %s, want %s", got, want)
	}
	// An upgrade asks apt-cache policy, for that package alone.
	e.callLog()
	if _, err := e.typ.LoadAll(context.Background(), []*resources.Resource{e.res("toque-fixture", "upgrade", nil).LoadView(), rs[1]}); err != nil {
		t.Fatal(err)
	}
	if calls := e.callLog(); len(calls) != 2 || calls[1] != "apt-cache policy toque-fixture" {
		t.Errorf("upgrade: commands %q, want dpkg-query and apt-cache policy toque-fixture", calls)
	}
	if states[0].Extra[xState+"toque-fixture"] != "installed" || states[2].Extra[xApt] != "installs toque-app 1.0" {
		t.Errorf("states %+v %+v", states[0], states[2])
	}
	// Removal needs nothing of the repositories: the database alone.
	var rm []*resources.Resource
	for _, n := range []string{"toque-fixture", "toque-app"} {
		rm = append(rm, e.res(n, "remove", nil).LoadView())
	}
	if _, err := e.typ.LoadAll(context.Background(), rm); err != nil {
		t.Fatal(err)
	}
	if calls := e.callLog(); len(calls) != 2 || !strings.HasPrefix(calls[0], "dpkg-query -W") || !strings.HasPrefix(calls[1], "apt-get -q -y") || !strings.Contains(calls[1], " -s remove toque-fixture") {
		t.Fatalf("commands %q, want one dpkg-query and the simulation of the one removal", calls)
	}
}

func TestPackageLockHeld(t *testing.T) {
	e := newPkgEnv(t)
	lock := filepath.Join(e.root.Dir, "var/lib/dpkg/lock-frontend")
	pid := holdLock(t, lock)
	r := e.res("toque-fixture", "install", map[string]cty.Value{"lock_timeout": cty.NumberIntVal(1)})
	start := time.Now()
	err := e.apply(r)
	if err == nil {
		t.Fatal("apply succeeded with the lock held")
	}
	want := "the dpkg lock " + lock + " is held by process " + strconv.Itoa(pid) + " (perl)"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "waited 1s (lock_timeout) and changed nothing") {
		t.Fatalf("error %v, want it to name the lock's holder (%s)", err, want)
	}
	if d := time.Since(start); d < time.Second || d > 30*time.Second {
		t.Errorf("waited %s", d)
	}
	if got := e.status("toque-fixture"); got != "" {
		t.Errorf("status %q", got)
	}
}

// holdLock starts a process (perl, Essential on Debian) that holds an
// fcntl write lock on path, as dpkg and apt lock, until the test ends,
// and returns its pid.
func holdLock(t *testing.T, path string) int {
	t.Helper()
	testenv.MustHave(t, testenv.Perl)
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := osexec.Command("perl", "-MFcntl", "-e", `open(my $f, ">>", $ARGV[0]) or die $!;
my $l = pack("s s x4 q q l x4", F_WRLCK, 0, 0, 0, 0); fcntl($f, F_SETLK, $l) or die "lock: $!";
open(my $r, ">", $ARGV[1]) or die $!; close $r; sleep 60`, path, ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			return cmd.Process.Pid
		}
		if i > 500 {
			t.Fatal("the lock holder did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPackageFailsHalfway(t *testing.T) {
	e := newPkgEnv(t)
	err := e.apply(e.res("toque-fail", "install", nil))
	if err == nil {
		t.Fatal("a failing postinst must fail the resource")
	}
	msg := err.Error()
	for _, want := range []string{
		"toque-fail: postinst fails on purpose", // apt's (dpkg's) own output
		"Changed before it failed: toque-dep: not installed, now installed 1.0; toque-fail: not installed, now half-installed 1.0.",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	// dpkg says half-configured; the reading says so, not "installed".
	if got := e.status("toque-fail"); got != "1.0 half-configured" {
		t.Fatalf("status %q", got)
	}
	st, _, _ := e.plan(e.res("toque-fail", "install", nil))
	if st.Exists || st.Extra[xState+"toque-fail"] != "broken 1.0" {
		t.Errorf("reading of a half-configured package: %+v", st)
	}
}

func TestPackageBadInput(t *testing.T) {
	typ := newPackageType(nil)
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"version", str("1.0; rm -rf /"), "has embedded spaces"},
		{"version", str("1.0$x"), `"$" is not allowed`},
		{"version", str("latest"), "does not start with a digit"},
		{"package_name", str("-o"), "is not allowed"},
		{"package_name", str("nginx*"), "is not allowed"},
		{"package_name", str("a/../b"), "is not allowed"},
		{"package_name", str("foo..bar"), `".." is not allowed`},
		{"package_name", str("--installroot=/tmp"), "is not allowed"},
		{"package_name", str("foo\nbar"), "is not allowed"},
		{"package_name", str("foo[1]"), "is not allowed"},
		{"version", str("1.0..2"), `".." is not allowed`},
		{"version", str("1.0-1\n"), "has embedded spaces"},
		{"version", str("1.0*"), "is not allowed"},
		{"provider", str("yum"), `no such package provider`},
		{"package_name", cty.TupleVal([]cty.Value{str("a1"), str("a1")}), `lists "a1" twice`},
		{"options", str("--no-install-recommends nginx"), `"nginx" is not an option`},
		{"options", str("-s"), "would make apply do nothing"},
	} {
		p := typ.schema.Property(c.prop)
		var err error
		if p.Normalize != nil {
			_, err = p.Normalize(c.v)
		} else {
			err = p.Validate(c.v)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
	if _, err := typ.schema.Property("options").Normalize(str("-o APT::Install-Recommends=0 --no-install-suggests")); err != nil {
		t.Errorf("options: %v", err)
	}
}

func TestParseAptOutput(t *testing.T) {
	infos := map[string]*PackageInfo{"a1": {Name: "a1"}, "b1": {Name: "b1"}, "c1": {Name: "c1"}}
	parseDpkgQuery("a1\ta1\tall\t1.0\thold\tinstalled\nb1:amd64\tb1\tamd64\t2.0\tinstall\thalf-configured\nc1\tc1\tall\t3.0\tdeinstall\tconfig-files\n", infos)
	if a := infos["a1"]; a.State != PkgInstalled || !a.Held || a.Installed != "1.0" {
		t.Errorf("a1 %+v", a)
	}
	if b := infos["b1"]; b.State != PkgBroken || b.Installed != "2.0" {
		t.Errorf("b1 %+v", b)
	}
	if c := infos["c1"]; c.State != PkgConfigFiles {
		t.Errorf("c1 %+v", c)
	}
	parsePolicy(`a1:
  Installed: 1.0
  Candidate: 2.0
  Version table:
     2.0 500
        500 http://deb.example.org/debian bookworm/main amd64 Packages
 *** 1.0 100
        100 /var/lib/dpkg/status
b1:
  Installed: (none)
  Candidate: (none)
  Version table:
`, infos)
	if a := infos["a1"]; a.Candidate != "2.0" || strings.Join(a.Versions, ",") != "2.0" {
		t.Errorf("a1 %+v: 1.0 is only installed, not offered", a)
	}
	if b := infos["b1"]; b.Candidate != "" || len(b.Versions) != 0 {
		t.Errorf("b1 %+v", b)
	}
}

func runIn(t *testing.T, env map[string]string, name string, args ...string) string {
	t.Helper()
	r := &debtest.Root{Env: env}
	return r.Run(t, name, args...)
}

// TestLockHolderFromTheKernel: when apt gives up without naming the
// holder (it names it only while it waits), toque asks the kernel.
func TestLockHolderFromTheKernel(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "lock-frontend")
	pid := holdLock(t, lock)
	e := lockErrorOf("E: Unable to acquire the dpkg frontend lock ("+lock+"), is another process using it?", time.Second)
	want := "the dpkg lock " + lock + " is held by process " + strconv.Itoa(pid) + " (perl): toque waited 1s"
	if !strings.Contains(e.Error(), want) {
		t.Fatalf("%v, want %q", e, want)
	}
}

// TestPackageSeveralActions: each action is planned from the state the
// one before leaves (Predict), as for action = ["remove", "purge"].
func TestPackageSeveralActions(t *testing.T) {
	e := newPkgEnv(t)
	e.root.Install(t, "toque-conf=1.0")
	cases := []struct {
		actions []string
		kinds   []resources.Kind
	}{
		{[]string{"remove", "purge"}, []resources.Kind{resources.Delete, resources.Delete}},
		{[]string{"install", "upgrade"}, []resources.Kind{resources.NoOp, resources.Update}},
		{[]string{"upgrade", "upgrade"}, []resources.Kind{resources.Update, resources.NoOp}},
		{[]string{"upgrade", "remove"}, []resources.Kind{resources.Update, resources.Delete}},
		{[]string{"purge", "remove"}, []resources.Kind{resources.Delete, resources.NoOp}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.actions, "+"), func(t *testing.T) {
			st, _, err := e.plan(e.res("toque-conf", c.actions[0], nil).WithLater(c.actions[1:]))
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range c.actions {
				r := e.res("toque-conf", a, nil)
				step, err := resources.PlanStep(e.typ, r, st)
				if err != nil {
					t.Fatalf("%s: %v", a, err)
				}
				if step.Kind != c.kinds[i] {
					t.Fatalf("%s: %s (%s), want %s", a, step.Kind, step.Reason, c.kinds[i])
				}
				if st, err = resources.Predict(e.typ, r, st, step); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
