package packages

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/internal/rpmtest"
	"github.com/toquehq/toque/resources"
)

// The dnf tests run the real rpm and dnf (Debian's packages) inside a
// mount namespace standing for a Rocky host (rpmtest.NewHost): overlays
// over /etc, /var, /usr and root's home, its own rpm database, fixture
// .rpm packages built with rpmbuild and served by a createrepo_c
// repository. Wrappers first on PATH run rpm and dnf inside it, so the
// provider's command lines are the production ones. Every test checks
// that the machine's dpkg status and rpm databases did not change.

// postLua records each run of the %post scriptlet: "configured N", N
// being how many versions of the package are installed after it.
const postLua = `posix.mkdir("/var/lib/toque-conf"); local f = io.open("/var/lib/toque-conf/post.log", "a"); f:write("configured " .. arg[2] .. "\n"); f:close()`

var rpmFixtures = []rpmtest.Pkg{
	{Name: "toque-fixture", Version: "1.0"},
	{Name: "toque-fixture", Version: "2.0"},
	{Name: "toque-dep", Version: "1.0"},
	{Name: "toque-app", Version: "1.0", Requires: "toque-dep"},
	{Name: "toque-conf", Version: "1.0", Config: "setting = packaged-1\n", PostLua: postLua},
	{Name: "toque-conf", Version: "2.0", Config: "setting = packaged-2\n", PostLua: postLua},
	{Name: "toque-epoch", Version: "0.5", Epoch: 2},
	{Name: "toque-fail", Version: "1.0", Fail: true},
}

// dnfEnv is one test's world: a namespace host and the package type
// whose provider runs its rpm and dnf.
type dnfEnv struct {
	*pkgEnv
	host *rpmtest.Host
	prov *dnfProvider
	// cacheDir is the package type's download cache.
	cacheDir string
}

// newDnfEnv makes a host reading the given repositories.
func newDnfEnv(t *testing.T, repos ...string) *dnfEnv {
	t.Helper()
	h := rpmtest.NewHost(t, repos...)
	prov := &dnfProvider{env: h.Env, readTimeout: time.Minute, lockPoll: 100 * time.Millisecond}
	typ := newPackageType(func() (PackageProvider, error) { return prov, nil })
	// A package cache of the test's own: what a plan fetches is the
	// test's to count.
	cache := filepath.Join(t.TempDir(), "cache")
	typ.cacheDir = func() string { return cache }
	return &dnfEnv{pkgEnv: &pkgEnv{t: t, typ: typ}, host: h, prov: prov, cacheDir: cache}
}

// callKinds is each logged call's first words, up to the verb.
func (e *dnfEnv) callKinds() []string {
	var out []string
	for _, c := range e.host.CallLog() {
		f := strings.Fields(c)
		if len(f) < 2 || f[0] != "rpm" && f[0] != "dnf" {
			continue // a line of a multi-line argument (rpm -qp's format)
		}
		switch {
		case f[0] == "rpm":
			out = append(out, "rpm "+f[1])
		case len(f) > 2 && f[1] == "-C":
			out = append(out, "dnf -C "+f[2])
		default:
			out = append(out, "dnf "+f[1])
		}
	}
	return out
}

// fixtureRepo builds the fixtures once for a test and its subtests.
func fixtureRepo(t *testing.T) string {
	t.Helper()
	rpmtest.Require(t)
	rpmtest.KeepHostDigests(t)
	repo := filepath.Join(t.TempDir(), "repo")
	rpmtest.Repo(t, repo, rpmFixtures...)
	return repo
}

func TestDnfPackage(t *testing.T) {
	repo := fixtureRepo(t)

	t.Run("InstallThenNoOp", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		r := e.res("toque-fixture", "install", nil)
		_, step := e.mustPlan(r, resources.Create)
		if ch := step.Change("version"); ch == nil || ch.Before != cty.NilVal || ch.After.AsString() != "2.0-1" || ch.Note != "" {
			t.Fatalf("changes %+v: want version → the candidate 2.0-1, nothing else", step.Changes)
		}
		if step.Reason != "toque-fixture is not installed; the candidate is 2.0-1" {
			t.Errorf("reason %q", step.Reason)
		}
		// Not installed, no version: the simulation says the candidate
		// (no repoquery); then the .rpm it installs is fetched into
		// toque's cache and read, for what it brings.
		if got := strings.Join(e.callKinds(), ", "); got != "rpm -q, dnf -C --assumeno, dnf -y, rpm -qp" {
			t.Errorf("plan ran %s", got)
		}
		e.mustApply(r)
		if got := e.host.Status(t, "toque-fixture"); got != "2.0-1" {
			t.Fatalf("after apply: %q", got)
		}
		calls := e.host.CallLog()
		want := "dnf -y " + dnfMetadataNever + " --setopt=exit_on_lock=True install -- toque-fixture-2.0-1"
		found := false
		for _, c := range calls {
			found = found || c == want
		}
		if !found {
			t.Errorf("apply ran %q, want %q among them", calls, want)
		}
		_, step = e.mustPlan(r, resources.NoOp)
		if step.Reason != "toque-fixture 2.0-1 is installed" {
			t.Errorf("second plan: %q", step.Reason)
		}
		// Installed, no version: install needs no candidate.
		if got := strings.Join(e.callKinds(), ", "); got != "rpm -q" {
			t.Errorf("no-op plan ran %s", got)
		}
	})

	t.Run("PinUpgradeDowngrade", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		pinned := e.res("toque-fixture", "install", map[string]cty.Value{"version": str("1.0")})
		_, step := e.mustPlan(pinned, resources.Create)
		if step.Changes[0].After.AsString() != "1.0-1" {
			t.Fatalf("a pin without its release installs the release on offer: %+v", step.Changes)
		}
		e.mustApply(pinned)
		if got := e.host.Status(t, "toque-fixture"); got != "1.0-1" {
			t.Fatalf("pinned: %q", got)
		}
		e.mustPlan(pinned, resources.NoOp)
		e.mustPlan(e.res("toque-fixture", "install", map[string]cty.Value{"version": str("1.0-1")}), resources.NoOp)
		e.mustPlan(e.res("toque-fixture", "install", nil), resources.NoOp)
		up := e.res("toque-fixture", "upgrade", nil)
		_, step = e.mustPlan(up, resources.Update)
		if c := step.Changes[0]; c.Before.AsString() != "1.0-1" || c.After.AsString() != "2.0-1" {
			t.Fatalf("upgrade: %+v", c)
		}
		e.mustApply(up)
		if got := e.host.Status(t, "toque-fixture"); got != "2.0-1" {
			t.Fatalf("upgraded: %q", got)
		}
		e.mustPlan(up, resources.NoOp)
		_, step = e.mustPlan(pinned, resources.Update)
		if !strings.Contains(step.Reason, "toque-fixture 2.0-1 is installed; version 1.0-1 is pinned (a downgrade)") {
			t.Errorf("downgrade reason %q", step.Reason)
		}
		e.mustApply(pinned)
		if got := e.host.Status(t, "toque-fixture"); got != "1.0-1" {
			t.Fatalf("downgraded: %q", got)
		}
		// An epoch: shown, and compared before the version.
		ep := e.res("toque-epoch", "install", nil)
		_, step = e.mustPlan(ep, resources.Create)
		if step.Changes[0].After.AsString() != "2:0.5-1" {
			t.Fatalf("epoch: %+v", step.Changes)
		}
		e.mustApply(ep)
		e.mustPlan(e.res("toque-epoch", "install", map[string]cty.Value{"version": str("0.5")}), resources.NoOp)
		e.mustPlan(e.res("toque-epoch", "upgrade", nil), resources.NoOp)
		// A version nobody offers.
		_, _, err := e.plan(e.res("toque-fixture", "install", map[string]cty.Value{"version": str("3.0")}))
		if err == nil || err.Error() != "version 3.0 of toque-fixture is not available from the configured repositories (they offer: 2.0-1, 1.0-1)" {
			t.Fatalf("a version nobody offers: %v", err)
		}
	})

	t.Run("DependenciesRemoveAndPurge", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		app := e.res("toque-app", "install", nil)
		_, step := e.mustPlan(app, resources.Create)
		if n := step.Changes[0].Note; n != "dnf also installs toque-dep 1.0-1" {
			t.Fatalf("note %q: the plan must say what dnf pulls in", n)
		}
		e.mustApply(app)
		if e.host.Status(t, "toque-dep") != "1.0-1" {
			t.Fatal("dependency not installed")
		}
		rm := e.res("toque-dep", "remove", nil)
		_, step = e.mustPlan(rm, resources.Delete)
		if step.Reason != "toque-dep 1.0-1 is installed; dnf also removes toque-app 1.0-1" {
			t.Fatalf("removal reason %q", step.Reason)
		}
		e.mustApply(rm)
		if a, d := e.host.Status(t, "toque-app"), e.host.Status(t, "toque-dep"); a != "" || d != "" {
			t.Fatalf("after remove: toque-app %q, toque-dep %q", a, d)
		}
		e.mustPlan(rm, resources.NoOp)
		// purge is remove: a changed configuration file is kept as .rpmsave.
		e.host.Install(t, "toque-conf-1.0")
		e.host.WriteFile(t, "/etc/toque-conf.conf", "setting = mine\n")
		purge := e.res("toque-conf", "purge", nil)
		_, step = e.mustPlan(purge, resources.Delete)
		if !strings.Contains(step.Reason, "purge is remove") {
			t.Errorf("purge reason %q: it must say that purge is remove with dnf", step.Reason)
		}
		e.mustApply(purge)
		if got := e.host.Status(t, "toque-conf"); got != "" {
			t.Fatalf("purged: %q", got)
		}
		if got := e.host.ReadFile("/etc/toque-conf.conf.rpmsave"); got != "setting = mine\n" {
			t.Errorf(".rpmsave %q", got)
		}
		e.mustPlan(purge, resources.NoOp)
	})

	t.Run("ConfigFileAndScriptlet", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		e.mustApply(e.res("toque-conf", "install", map[string]cty.Value{"version": str("1.0")}))
		if got := e.host.ReadFile("/var/lib/toque-conf/post.log"); got != "configured 1\n" {
			t.Fatalf("%%post: %q", got)
		}
		e.host.WriteFile(t, "/etc/toque-conf.conf", "setting = mine\n")
		e.mustApply(e.res("toque-conf", "upgrade", nil))
		if got := e.host.Status(t, "toque-conf"); got != "2.0-1" {
			t.Fatalf("upgraded: %q", got)
		}
		// %config(noreplace): the administrator's file stays, the
		// package's is beside it.
		if got, new := e.host.ReadFile("/etc/toque-conf.conf"), e.host.ReadFile("/etc/toque-conf.conf.rpmnew"); got != "setting = mine\n" || new != "setting = packaged-2\n" {
			t.Errorf("config %q, .rpmnew %q", got, new)
		}
		if got := e.host.ReadFile("/var/lib/toque-conf/post.log"); got != "configured 1\nconfigured 2\n" {
			t.Errorf("%%post: %q", got)
		}
	})

	t.Run("ListInOneTransaction", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		r := e.res("tools", "install", map[string]cty.Value{
			"package_name": cty.ListVal([]cty.Value{str("toque-fixture"), str("toque-dep")}),
			"version":      cty.ListVal([]cty.Value{str("1.0"), cty.NullVal(cty.String)}),
		})
		_, step := e.mustPlan(r, resources.Create)
		if after := step.Changes[0].After; after.LengthInt() != 2 || after.Index(cty.NumberIntVal(0)).AsString() != "1.0-1" {
			t.Fatalf("changes %+v", step.Changes)
		}
		e.host.CallLog()
		e.mustApply(r)
		var installs []string
		for _, c := range e.host.CallLog() {
			if strings.HasPrefix(c, "dnf -y") {
				installs = append(installs, c)
			}
		}
		if len(installs) != 1 || !strings.HasSuffix(installs[0], "install -- toque-fixture-1.0-1 toque-dep-1.0-1") {
			t.Fatalf("dnf calls %q, want one install of both", installs)
		}
		e.mustPlan(r, resources.NoOp)
	})

	t.Run("FromSource", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		file := filepath.Join(repo, "toque-fixture-1.0-1.noarch.rpm")
		r := e.res("toque-fixture", "install", map[string]cty.Value{"source": str(file)})
		_, step := e.mustPlan(r, resources.Create)
		if step.Changes[0].After.AsString() != "1.0-1" {
			t.Fatalf("changes %+v", step.Changes)
		}
		e.mustApply(r)
		if got := e.host.Status(t, "toque-fixture"); got != "1.0-1" {
			t.Fatalf("status %q", got)
		}
		e.mustPlan(r, resources.NoOp)
		_, _, err := e.plan(e.res("toque-fixture", "install", map[string]cty.Value{"source": str(strings.TrimSuffix(file, ".rpm") + ".deb")}))
		if err == nil || !strings.Contains(err.Error(), "only from a path ending in .rpm") {
			t.Errorf("a .deb for dnf: %v", err)
		}
	})

	t.Run("CandidateMoved", func(t *testing.T) {
		moving := filepath.Join(t.TempDir(), "repo")
		rpmtest.CopyRepo(t, repo, moving)
		e := newDnfEnv(t, moving)
		r := e.res("toque-fixture", "install", nil)
		planned, step := e.mustPlan(r, resources.Create)
		if step.Changes[0].After.AsString() != "2.0-1" {
			t.Fatalf("plan %+v", step.Changes)
		}
		// A new version appears; the cache is not refreshed: the reading
		// is the same (reads never refresh dnf's metadata).
		rpmtest.Repo(t, moving, rpmtest.Pkg{Name: "toque-fixture", Version: "3.0"})
		again, _ := e.mustPlan(r, resources.Create)
		if again.Extra[xCandidate+"toque-fixture"] != "2.0-1" {
			t.Fatalf("a plan refreshed dnf's metadata: candidate %q", again.Extra[xCandidate+"toque-fixture"])
		}
		// Once it is refreshed, the reading differs in the candidate and
		// in what dnf would do: pre-flight reports the plan stale.
		e.host.Refresh(t)
		now, err := e.typ.Load(context.Background(), r.LoadView())
		if err != nil {
			t.Fatal(err)
		}
		if now.Extra[xCandidate+"toque-fixture"] != "3.0-1" || planned.Extra[xApt] == now.Extra[xApt] {
			t.Fatalf("reading after the refresh: %+v (at plan: %+v)", now.Extra, planned.Extra)
		}
	})

	t.Run("MissingFromEveryRepository", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		_, step := e.mustPlan(e.res("toque-nosuch", "install", nil), resources.Create)
		if len(step.Needs) != 1 || !step.Needs[0].AtApply || step.Needs[0].Value != "dnf" {
			t.Fatalf("step %+v", step)
		}
		msg := step.Needs[0].Missing
		if !strings.Contains(msg, "package toque-nosuch is not available from any configured repository (searched: fixture0 file://"+repo+")") ||
			!strings.Contains(msg, "(yum_repository)") || !strings.Contains(msg, "dnf_makecache") {
			t.Fatalf("message %q must name the repositories searched and dnf's types", msg)
		}
		if AptUpdateType().(resources.NeedMeeter).Meets(resources.NewResource(AptUpdateType().Schema(), "lists", "update", nil), step.Needs[0]) {
			t.Error("apt_update meets a dnf package's need")
		}
		if !DnfMakecacheType().(resources.NeedMeeter).Meets(resources.NewResource(DnfMakecacheType().Schema(), "cache", "update", nil), step.Needs[0]) {
			t.Error("dnf_makecache does not meet a dnf package's need")
		}
	})

	t.Run("LockHeld", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		holder := exec.Command("sleep", "60")
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		var release sync.Once
		stop := func() { release.Do(func() { holder.Process.Kill(); holder.Wait() }) }
		defer stop()
		pid := strconv.Itoa(holder.Process.Pid)
		e.host.WriteFile(t, "/var/lib/dnf/rpmdb_lock.pid", pid)
		r := e.res("toque-fixture", "install", map[string]cty.Value{"lock_timeout": cty.NumberIntVal(1)})
		start := time.Now()
		err := e.apply(r)
		var le *LockError
		if !errors.As(err, &le) {
			t.Fatalf("apply with the lock held: %v", err)
		}
		want := "the dnf lock /var/lib/dnf/rpmdb_lock.pid is held by process " + pid + " (sleep): toque waited 1s (lock_timeout) and changed nothing"
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q, want %q", err, want)
		}
		if d := time.Since(start); d < time.Second || d > 30*time.Second {
			t.Errorf("waited %s", d)
		}
		if got := e.host.Status(t, "toque-fixture"); got != "" {
			t.Fatalf("installed with the lock held: %q", got)
		}
		// Released while toque waits (the holder exits and is reaped: dnf
		// takes a lock whose process is gone): it goes on.
		go func() { time.Sleep(time.Second); stop() }()
		e.mustApply(e.res("toque-fixture", "install", map[string]cty.Value{"lock_timeout": cty.NumberIntVal(30)}))
		if got := e.host.Status(t, "toque-fixture"); got != "2.0-1" {
			t.Fatalf("after the lock was released: %q", got)
		}
	})

	t.Run("FailingScriptlet", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		// rpm installs a package whose %post fails, and dnf exits 0: the
		// package is installed, as the plan says; toque warns.
		r := e.res("toque-fail", "install", nil)
		st, step := e.mustPlan(r, resources.Create)
		var logs strings.Builder
		env := &resources.Env{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})}
		if err := resources.ConvergeStep(context.Background(), e.typ, env, r, st, step); err != nil {
			t.Fatalf("apply: %v", err)
		}
		if got := e.host.Status(t, "toque-fail"); got != "1.0-1" {
			t.Fatalf("status %q", got)
		}
		if !strings.Contains(logs.String(), "a package scriptlet failed") || !strings.Contains(logs.String(), "toque-fail") {
			t.Errorf("no warning about the failed scriptlet:\n%s", logs.String())
		}
	})

	t.Run("SeveralActions", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		e.host.Install(t, "toque-fixture-1.0")
		for _, c := range []struct {
			actions []string
			kinds   []resources.Kind
		}{
			// rpm keeps nothing of a removed package: purge has nothing left.
			{[]string{"remove", "purge"}, []resources.Kind{resources.Delete, resources.NoOp}},
			{[]string{"install", "upgrade"}, []resources.Kind{resources.NoOp, resources.Update}},
			{[]string{"upgrade", "upgrade"}, []resources.Kind{resources.Update, resources.NoOp}},
			{[]string{"upgrade", "remove"}, []resources.Kind{resources.Update, resources.Delete}},
		} {
			st, _, err := e.plan(e.res("toque-fixture", c.actions[0], nil).WithLater(c.actions[1:]))
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range c.actions {
				r := e.res("toque-fixture", a, nil)
				step, err := resources.PlanStep(e.typ, r, st)
				if err != nil {
					t.Fatalf("%v, %s: %v", c.actions, a, err)
				}
				if step.Kind != c.kinds[i] {
					t.Fatalf("%v, %s: %s (%s), want %s", c.actions, a, step.Kind, step.Reason, c.kinds[i])
				}
				if st, err = resources.Predict(e.typ, r, st, step); err != nil {
					t.Fatal(err)
				}
			}
		}
	})

	t.Run("WhatItBrings", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		r := e.res("toque-conf", "install", nil)
		st, step := e.mustPlan(r, resources.Create)
		var fetch string
		for _, c := range e.host.CallLog() {
			if strings.HasPrefix(c, "dnf -y") {
				fetch = c
			}
		}
		for _, want := range []string{"--downloadonly", "--disablerepo=* --enablerepo=fixture0 ", "--nogpgcheck", "exit_on_lock=True", "-- toque-conf-2.0-1.noarch"} {
			if !strings.Contains(fetch, want) {
				t.Errorf("the fetch lacks %q: %s", want, fetch)
			}
		}
		if got := e.host.Status(t, "toque-conf"); got != "" {
			t.Fatalf("the plan installed: %q", got)
		}
		if !strings.HasPrefix(st.Extra[xDeb+"toque-conf"], "2.0-1 noarch sha256:") {
			t.Errorf("the plan pins the .rpm: %q", st.Extra[xDeb+"toque-conf"])
		}
		byPath := map[string]resources.Need{}
		for _, n := range step.Provides {
			if n.Namespace == resources.NamespacePath {
				byPath[n.Value] = n
			}
		}
		conf := byPath["/etc/toque-conf.conf"]
		if conf.What != "configuration file" || string(conf.Prediction.Content) != "setting = packaged-2\n" ||
			conf.Prediction.Fact("mode") != "0644" || conf.Prediction.Fact("owner") != "root" || conf.Prediction.Fact("conffile") != "yes" ||
			!strings.Contains(conf.Prediction.By, "package[toque-conf] (toque-conf 2.0-1)") {
			t.Errorf("/etc/toque-conf.conf: %+v %+v", conf, conf.Prediction)
		}
		if d := byPath["/usr/share/toque-conf"]; d.What != "directory" || d.Prediction.Fact("mode") != "0755" {
			t.Errorf("/usr/share/toque-conf: %+v", d)
		}
		if f := byPath["/usr/share/toque-conf/version"]; f.What != "file" || f.Prediction.Fact("size") != "6" || len(f.Prediction.Fact("sha256")) != 64 {
			t.Errorf("/usr/share/toque-conf/version: %+v %+v", f, f.Prediction)
		}
		// Neither a %config file nor a unit: kept by size and digest, its
		// content read from the cached .rpm on demand, checked against
		// the digest.
		version := byPath["/usr/share/toque-conf/version"].Prediction
		if version.Content != nil || version.ReadContent == nil {
			t.Errorf("the version file's prediction: content %q, on demand %v", version.Content, version.ReadContent != nil)
		} else if b, err := version.ReadContent(); err != nil || string(b) != "2.0-1\n" {
			t.Errorf("the version file read on demand: %q, %v", b, err)
		}
		blob := filepath.Join(e.cacheDir, "sha256", strings.TrimPrefix(strings.Fields(st.Extra[xDeb+"toque-conf"])[2], "sha256:"))
		orig, err := os.ReadFile(blob)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(blob, []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := version.ReadContent(); err == nil {
			t.Errorf("the version file read from a cached .rpm that was replaced: %q", b)
		}
		if err := os.WriteFile(blob, orig, 0o600); err != nil {
			t.Fatal(err)
		}
		// A warm cache reads no archive again.
		e.host.CallLog()
		e.mustPlan(r, resources.Create)
		if got := strings.Join(e.callKinds(), ", "); got != "rpm -q, dnf -C --assumeno" {
			t.Errorf("second plan ran %s", got)
		}
		e.mustApply(r)
		if got := e.host.ReadFile("/etc/toque-conf.conf"); got != "setting = packaged-2\n" {
			t.Errorf("installed %q", got)
		}
	})

	t.Run("WhatItBringsFromARepositoryTheOptionsEnable", func(t *testing.T) {
		// fixture1 is cached, then disabled: only the recipe's options
		// enable it, and the fetch at plan must take it from there too.
		other := filepath.Join(t.TempDir(), "other")
		rpmtest.Repo(t, other, rpmtest.Pkg{Name: "toque-other", Version: "1.0", Config: "other = 1\n"})
		e := newDnfEnv(t, repo, other)
		e.host.WriteFile(t, "/etc/yum.repos.d/fixture1.repo", "[fixture1]\nname=other\nbaseurl=file://"+other+"\ngpgcheck=0\nenabled=0\n")
		r := e.res("toque-other", "install", map[string]cty.Value{"options": str("--enablerepo fixture1")})
		_, step := e.mustPlan(r, resources.Create)
		found := false
		for _, n := range step.Provides {
			found = found || n.Value == "/etc/toque-other.conf"
		}
		if !found {
			t.Errorf("the plan does not provide /etc/toque-other.conf: %+v", step.Provides)
		}
		e.mustApply(r)
		if got := e.host.Status(t, "toque-other"); got != "1.0-1" {
			t.Errorf("installed %q", got)
		}
	})

	t.Run("ReadsInOneBatch", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		e.host.Install(t, "toque-fixture-2.0", "toque-dep")
		var rs []*resources.Resource
		for _, n := range []string{"toque-fixture", "toque-dep", "toque-app", "toque-conf"} {
			rs = append(rs, e.res(n, "install", nil).LoadView())
		}
		e.host.CallLog()
		states, err := e.typ.LoadAll(context.Background(), rs)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(e.callKinds(), ", "); got != "rpm -q, dnf -C --assumeno, dnf -C --assumeno, dnf -y, rpm -qp, rpm -qp" {
			t.Fatalf("commands %s (two simulations, which say the candidates: toque-app and toque-conf have work; one fetch of their two .rpms, each read)", got)
		}
		if states[0].Extra[xState+"toque-fixture"] != "installed" || states[2].Extra[xApt] != "installs toque-app 1.0-1; installs toque-dep 1.0-1" && states[2].Extra[xApt] != "installs toque-app 1.0-1" {
			t.Errorf("states %+v %+v", states[0], states[2])
		}
		// All installed: the database once; upgrade reads the
		// repositories once too.
		rs = rs[:2]
		e.host.CallLog()
		if _, err := e.typ.LoadAll(context.Background(), rs); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(e.callKinds(), ", "); got != "rpm -q" {
			t.Fatalf("commands %s", got)
		}
		rs = []*resources.Resource{e.res("toque-fixture", "upgrade", nil).LoadView(), e.res("toque-dep", "upgrade", nil).LoadView()}
		if _, err := e.typ.LoadAll(context.Background(), rs); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(e.callKinds(), ", "); got != "rpm -q, dnf -C repoquery" {
			t.Fatalf("upgrade: commands %s", got)
		}
	})

	t.Run("ProviderProperty", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		// The host's provider is apt; the resource names dnf.
		typ := newPackageType(func() (PackageProvider, error) { return newAptProvider(), nil })
		typ.named = func(name string) (PackageProvider, error) {
			if name == "dnf" {
				return e.prov, nil
			}
			return nil, fmt.Errorf("no %s here", name)
		}
		e.typ = typ
		r := e.res("toque-fixture", "install", map[string]cty.Value{"provider": str("dnf")})
		e.mustApply(r)
		if got := e.host.Status(t, "toque-fixture"); got != "2.0-1" {
			t.Fatalf("status %q", got)
		}
	})

	t.Run("BadInputForDnf", func(t *testing.T) {
		e := newDnfEnv(t, repo)
		for _, c := range []struct {
			values map[string]cty.Value
			want   string
		}{
			{map[string]cty.Value{"options": str("-q")}, `"-q" is not an option toque passes to dnf`},
			{map[string]cty.Value{"options": str("--downloadonly")}, `"--downloadonly" is not an option toque passes to dnf`},
			{map[string]cty.Value{"options": str("--installroot=/tmp/x")}, `"--installroot=/tmp/x" is not an option`},
			{map[string]cty.Value{"options": str("--setopt=tsflags=test")}, "--setopt=tsflags=test: toque passes only"},
			{map[string]cty.Value{"options": str("--enablerepo")}, `"--enablerepo" needs a value`},
			{map[string]cty.Value{"overwrite_config_files": cty.True}, "overwrite_config_files is dpkg's"},
			{map[string]cty.Value{"package_name": str("toque-fixture:amd64")}, "NAME:ARCH is apt's form"},
			{map[string]cty.Value{"version": str("1.0-1-2")}, "dnf: version"},
		} {
			vals := map[string]cty.Value{}
			for k, v := range c.values {
				vals[k] = v
			}
			_, _, err := e.plan(e.res("toque-fixture", "install", vals))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: %v, want %q", c.values, err, c.want)
			}
		}
		// Allowed: they change only what dnf resolves.
		e.mustPlan(e.res("toque-fixture", "install", map[string]cty.Value{"options": str("--setopt=install_weak_deps=False --enablerepo fixture0 --nobest")}), resources.Create)
		if got := e.host.Status(t, "toque-fixture"); got != "" {
			t.Fatalf("a plan installed: %q", got)
		}
	})

}

func TestParseDnfOutput(t *testing.T) {
	got := parseDnfTransaction(`Last metadata expiration check: 0:00:07 ago on Fri Nov 27 22:53:54 2026.
Dependencies resolved.
===============================================================================================================
 Package                                                                           Arch    Version
                                                                                                 Repo      Size
===============================================================================================================
Installing:
 toque-an-extremely-long-package-name-for-the-wrapping-of-dnf-transaction-tables   noarch  1.0-1 fixture  6.4 k
 toque-wrapped-name-that-is-longer-than-a-whole-line-of-eighty-columns-of-the-terminal
                                                                                   noarch  2:1.0-1 fixture 6 k
Upgrading:
 toque-fixture          noarch          2.0-1            fixture          6.1 k
Installing dependencies:
 toque-dep              noarch          1.0-1            fixture          6.0 k
Removing dependent packages:
 toque-app              noarch          1.0-1            @fixture             4
Obsoleting:
 old-thing              noarch          0.1-1            @System              0
     replacing  old-thing.noarch 0.1-1

Transaction Summary
===============================================================================================================
Install  3 Packages
`)
	var ws []string
	for _, c := range got {
		ws = append(ws, c.Words())
	}
	want := "installs toque-an-extremely-long-package-name-for-the-wrapping-of-dnf-transaction-tables 1.0-1; installs toque-wrapped-name-that-is-longer-than-a-whole-line-of-eighty-columns-of-the-terminal 2:1.0-1; changes toque-fixture ? → 2.0-1; installs toque-dep 1.0-1; removes toque-app 1.0-1; removes old-thing 0.1-1"
	if strings.Join(ws, "; ") != want {
		t.Errorf("parsed\n%s\nwant\n%s", strings.Join(ws, "; "), want)
	}
	// What the plan fetches: the architecture and the repository of each.
	if c := got[1]; c.Arch != "noarch" || c.Repo != "fixture" {
		t.Errorf("wrapped row: %+v", c)
	}
	if c := got[3]; c.Arch != "noarch" || c.Repo != "fixture" {
		t.Errorf("dependency row: %+v", c)
	}
	infos := map[string]*PackageInfo{"a": {Name: "a"}, "k": {Name: "k"}}
	parseRPMQuery("a\t0\t1.0\t1\tnoarch\npackage b is not installed\nk\t0\t5.14\t2.el9\tx86_64\nk\t0\t5.14\t10.el9\tx86_64\nk\t0\t5.14\t3.el9\tx86_64\n", infos)
	if infos["a"].Installed != "1.0-1" || infos["k"].Installed != "5.14-10.el9" || infos["k"].State != PkgInstalled {
		t.Errorf("rpm -q: %+v %+v", infos["a"], infos["k"])
	}
	byName := map[string][]*PackageInfo{"a": {infos["a"]}}
	parseRepoquery("a\t0\t1.0\t1\tnoarch\tbase\na\t1\t0.1\t1\tnoarch\tupdates\na\t0\t2.0\t1\tsrc\tsrc\na\t0\t1.0\t1\tnoarch\tother\n", byName)
	if infos["a"].Candidate != "1:0.1-1" || strings.Join(infos["a"].Versions, ",") != "1:0.1-1,1.0-1" {
		t.Errorf("repoquery: %+v", infos["a"])
	}
}

func TestChoosePackageProvider(t *testing.T) {
	for _, c := range []struct {
		lineage []string
		want    string
	}{
		{[]string{"debian"}, "apt"},
		{[]string{"linuxmint", "ubuntu", "debian"}, "apt"},
		{[]string{"rocky", "rhel", "centos", "fedora"}, "dnf"},
		{[]string{"almalinux", "rhel", "centos", "fedora"}, "dnf"},
		{[]string{"rhel", "fedora"}, "dnf"},
		{[]string{"centos", "rhel", "fedora"}, "dnf"},
		{[]string{"fedora"}, "dnf"},
		{[]string{"amzn", "fedora"}, "dnf"},
		{[]string{"ol", "fedora"}, "dnf"},
	} {
		p, err := choosePackageProvider(c.lineage)
		if err != nil || p.Name() != c.want {
			t.Errorf("%v: %v, %v; want %s", c.lineage, p, err, c.want)
		}
	}
	_, err := choosePackageProvider([]string{"alpine"})
	if err == nil || !strings.Contains(err.Error(), "os-release says ID=alpine") || !strings.Contains(err.Error(), "dnf and rpm") {
		t.Errorf("alpine: %v", err)
	}
}

// TestProviderMissingOnHost: a provider whose programs the host lacks is
// refused at plan (the property's HostCheck, which the planner turns into
// a diagnostic at the attribute), before anything runs.
func TestProviderMissingOnHost(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := checkProviderOnHost(str("dnf"))
	if err == nil || err.Error() != `provider "dnf" needs dnf and rpm, which this host does not have (not in PATH): install it, or leave provider unset to use the host's own package manager` {
		t.Errorf("dnf: %v", err)
	}
	if err := checkProviderOnHost(str("apt")); err == nil || !strings.Contains(err.Error(), "needs apt-get and apt-cache and dpkg-query") {
		t.Errorf("apt: %v", err)
	}
	if err := validateProviderName(str("yum")); err == nil || !strings.Contains(err.Error(), "it has apt and dnf") {
		t.Errorf("yum: %v", err)
	}
}

// data "packages" on the RHEL family: rpm's database in the namespace,
// every installed package (an install-only package in two versions reads
// as its newest) or the named ones.
func TestDnfPackagesData(t *testing.T) {
	repo := fixtureRepo(t)
	e := newDnfEnv(t, repo)
	e.host.Install(t, "toque-fixture-1.0", "toque-epoch", "toque-app")
	// A second version beside the first, as dnf keeps a kernel's.
	e.host.Run(t, "rpm", "-i", "--justdb", "--nodeps", "--replacefiles", filepath.Join(repo, rpmtest.Pkg{Name: "toque-fixture", Version: "2.0"}.File()))
	d := &packagesData{provider: e.prov}
	v, err := d.Read(context.Background(), &resources.DataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ctyjson.Marshal(v, v.Type())
	want := `{"toque-app":{"arch":"noarch","held":false,"name":"toque-app","version":"1.0-1"},"toque-dep":{"arch":"noarch","held":false,"name":"toque-dep","version":"1.0-1"},` +
		`"toque-epoch":{"arch":"noarch","held":false,"name":"toque-epoch","version":"2:0.5-1"},"toque-fixture":{"arch":"noarch","held":false,"name":"toque-fixture","version":"2.0-1"}}`
	if string(b) != want {
		t.Errorf("answer\n%s\nwant\n%s", b, want)
	}
	names := cty.ListVal([]cty.Value{cty.StringVal("toque-app"), cty.StringVal("toque-conf"), cty.StringVal("toque-fixture-1.0")})
	v, err = d.Read(context.Background(), &resources.DataRequest{Args: map[string]cty.Value{"names": names}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := ctyjson.Marshal(v, v.Type()); string(b) != `{"toque-app":{"arch":"noarch","held":false,"name":"toque-app","version":"1.0-1"}}` {
		t.Errorf("names (only installed ones, by the name asked): %s", b)
	}
}
