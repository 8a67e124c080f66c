package packages

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/internal/debtest"
	"github.com/toquehq/toque/resources"
)

// debPkgs ship what a real package does: a configuration file, its
// directory, a unit with ExecReload, a debhelper-style postinst.
var debPkgs = []debtest.Pkg{
	{Name: "toque-srv-common", Version: "1.0",
		Files:     map[string]string{"etc/toque-srv/srv.conf": "listen = 80\n", "usr/share/toque-srv/README": "hi\n"},
		Dirs:      []string{"etc/toque-srv/conf.d"},
		Conffiles: []string{"/etc/toque-srv/srv.conf"}},
	{Name: "toque-srv", Version: "1.0", Depends: "toque-srv-common",
		Files:    map[string]string{"lib/systemd/system/toque-srv.service": "[Service]\nExecStart=/bin/true\nExecReload=/bin/true\n[Install]\nWantedBy=multi-user.target\n"},
		Postinst: "# deb-systemd-helper enable 'toque-srv.service'\n# deb-systemd-invoke $_dh_action 'toque-srv.service'\ntrue"},
}

// TestPackagePlanReadsDebs: the plan of an install pins each .deb apt
// would unpack by sha256, fetched into toque's cache (not apt's), and
// provides what they ship — paths with their modes and owners, the
// conffile with its content, the unit with its facts — for later
// resources; apply installs those files.
func TestPackagePlanReadsDebs(t *testing.T) {
	e := newPkgEnv(t)
	debtest.Repo(t, e.repo, debPkgs...)
	e.root.Update(t)
	r := e.res("toque-srv", "install", nil)
	st, step := e.mustPlan(r, resources.Create)
	for _, name := range []string{"toque-srv", "toque-srv-common"} {
		sum, err := fileSHA256(filepath.Join(e.repo, name+"_1.0_all.deb"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := st.Extra[xDeb+name], "1.0 all sha256:"+sum; got != want {
			t.Errorf("%s: the reading records %q, want %q", name, got, want)
		}
		if _, err := os.Stat(filepath.Join(e.cache, "sha256", sum)); err != nil {
			t.Errorf("%s is not in toque's cache: %v", name, err)
		}
	}
	if debs, _ := filepath.Glob(filepath.Join(e.root.Dir, "var/cache/apt/archives/*.deb")); len(debs) > 0 {
		t.Errorf("apt's own cache holds %v: the plan must fetch into toque's", debs)
	}
	got := map[string]*resources.Need{}
	for i := range step.Provides {
		got[step.Provides[i].Namespace+" "+step.Provides[i].Value] = &step.Provides[i]
	}
	conf := got["path /etc/toque-srv/srv.conf"]
	if conf == nil || conf.Prediction.Fact("conffile") != "yes" || string(conf.Prediction.Content) != "listen = 80\n" ||
		conf.Prediction.Fact("mode") != "0644" || conf.Prediction.Fact("owner") != "root" || conf.Prediction.By != "package[toque-srv] (toque-srv-common 1.0)" {
		t.Errorf("the conffile's prediction: %+v", conf)
	}
	if d := got["path /etc/toque-srv/conf.d"]; d == nil || d.Prediction.Fact("kind") != "directory" {
		t.Errorf("the directory's prediction: %+v", d)
	}
	if u := got["unit toque-srv.service"]; u == nil || u.Prediction.Fact("can_reload") != "yes" || u.Prediction.Fact("install") != "yes" ||
		u.Prediction.Fact("scripts") != "its postinst enables and starts it" {
		t.Errorf("the unit's prediction: %+v", u)
	}
	// A file that is neither a conffile nor a unit is kept by size and
	// digest; its content is read from the cached .deb when a resource
	// asks (one over it), checked against the digest.
	readme := got["path /usr/share/toque-srv/README"].Prediction
	if readme.Content != nil || readme.ReadContent == nil {
		t.Errorf("the README's prediction: content %q, on demand %v", readme.Content, readme.ReadContent != nil)
	} else if b, err := readme.ReadContent(); err != nil || string(b) != "hi\n" {
		t.Errorf("the README read on demand: %q, %v", b, err)
	}
	blob := filepath.Join(e.cache, "sha256", fileSHA(t, filepath.Join(e.repo, "toque-srv-common_1.0_all.deb")))
	orig, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blob, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := readme.ReadContent(); err == nil {
		t.Errorf("the README read from a cached .deb that was replaced: %q", b)
	}
	if err := os.WriteFile(blob, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	e.callLog()
	e.mustApply(r)
	for _, c := range e.callLog() {
		if strings.HasPrefix(c, "apt-get") && !strings.Contains(c, " -s ") && !strings.HasPrefix(c, "apt-get download --print-uris") &&
			!strings.Contains(c, "--no-download install toque-srv=1.0") {
			t.Errorf("apply ran %q: it must install the plan's .debs with --no-download, fetching nothing", c)
		}
	}
	if got := e.status("toque-srv-common"); got != "1.0 installed" {
		t.Errorf("after apply: %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(e.root.Dir, "etc/toque-srv/srv.conf")); err != nil || string(b) != "listen = 80\n" {
		t.Errorf("the conffile after apply: %q, %v", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(e.cache, "debs", "stage-*")); len(left) > 0 {
		t.Errorf("apply left its staging directories: %v", left)
	}
}

func fileSHA(t *testing.T, p string) string {
	t.Helper()
	sum, err := fileSHA256(p)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestPackageDebFaults: a .deb that cannot be fetched, or read, or whose
// configuration file is beyond the plan's limits, a cache another user
// can write, and a cached .deb changed before apply are errors naming
// the package (and its URL and apt's reason); the root is untouched.
func TestPackageDebFaults(t *testing.T) {
	plan := func(e *pkgEnv, name string) error {
		_, _, err := e.plan(e.res(name, "install", nil))
		return err
	}
	t.Run("missing from the mirror", func(t *testing.T) {
		e := newPkgEnv(t)
		debtest.Repo(t, e.repo, debtest.Pkg{Name: "toque-gone", Version: "1.0"})
		e.root.Update(t)
		os.Remove(filepath.Join(e.repo, "toque-gone_1.0_all.deb"))
		err := plan(e, "toque-gone")
		if err == nil || !strings.Contains(err.Error(), "apt could not fetch toque-gone 1.0 (file:"+e.repo+"/./toque-gone_1.0_all.deb)") ||
			!strings.Contains(err.Error(), "File not found") {
			t.Errorf("plan: %v", err)
		}
		if got := e.status("toque-gone"); got != "" {
			t.Errorf("the root changed: %q", got)
		}
	})
	t.Run("checksum mismatch", func(t *testing.T) {
		e := newPkgEnv(t)
		debtest.Repo(t, e.repo, debtest.Pkg{Name: "toque-swapped", Version: "1.0"})
		e.root.Update(t)
		other := debtest.Build(t, t.TempDir(), debtest.Pkg{Name: "toque-swapped", Version: "1.0", Depends: "toque-dep"})
		b, _ := os.ReadFile(other)
		os.WriteFile(filepath.Join(e.repo, "toque-swapped_1.0_all.deb"), b, 0o644)
		err := plan(e, "toque-swapped")
		if err == nil || !strings.Contains(err.Error(), "apt could not fetch toque-swapped 1.0") ||
			!(strings.Contains(err.Error(), "Hash Sum mismatch") || strings.Contains(err.Error(), "unexpected size")) {
			t.Errorf("plan: %v", err)
		}
	})
	t.Run("not an archive", func(t *testing.T) {
		e := newPkgEnv(t)
		debtest.Repo(t, e.repo, debtest.Pkg{Name: "toque-junk", Version: "1.0"})
		// A Packages entry whose file is no .deb (its index is right).
		deb := filepath.Join(e.repo, "toque-junk_1.0_all.deb")
		os.WriteFile(deb, []byte("!<arch>\nnot a package at all\n"), 0o644)
		writeJunkIndex(t, e.repo, deb)
		e.root.Update(t)
		err := plan(e, "toque-junk")
		if err == nil || !strings.Contains(err.Error(), "toque-junk 1.0") || !strings.Contains(err.Error(), "is not a valid package archive") {
			t.Errorf("plan: %v", err)
		}
	})
	t.Run("conffile beyond the limits", func(t *testing.T) {
		e := newPkgEnv(t)
		big := strings.Repeat("x", maxKeptContent+1)
		debtest.Repo(t, e.repo, debtest.Pkg{Name: "toque-big", Version: "1.0", Conffile: big})
		e.root.Update(t)
		err := plan(e, "toque-big")
		if err == nil || !strings.Contains(err.Error(), "toque-big 1.0") || !strings.Contains(err.Error(), "the configuration file /etc/toque-big.conf is 1048577 bytes, more than a plan keeps") {
			t.Errorf("plan: %v", err)
		}
	})
	t.Run("cache others can write", func(t *testing.T) {
		e := newPkgEnv(t)
		os.MkdirAll(e.cache, 0o700)
		os.Chmod(e.cache, 0o777)
		err := plan(e, "toque-fixture")
		if err == nil || !strings.Contains(err.Error(), "toque's package cache: download cache: "+e.cache+" may be written by other users") {
			t.Errorf("plan: %v", err)
		}
	})
	t.Run("cached deb changed before apply", func(t *testing.T) {
		e := newPkgEnv(t)
		r := e.res("toque-fixture", "install", nil)
		st, _ := e.mustPlan(r, resources.Create)
		sum := strings.TrimPrefix(strings.Fields(st.Extra[xDeb+"toque-fixture"])[2], "sha256:")
		blob := filepath.Join(e.cache, "sha256", sum)
		os.Chmod(blob, 0o600)
		f, err := os.OpenFile(blob, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("tampered"))
		f.Close()
		// The re-read right before converging sees the blob, not its bytes:
		// staging checks them.
		step, err := resources.PlanStep(e.typ, r, st)
		if err != nil {
			t.Fatal(err)
		}
		err = resources.ConvergeStep(context.Background(), e.typ, &resources.Env{Logger: hclog.NewNullLogger()}, r, st, step)
		if err == nil || !strings.Contains(err.Error(), "staging toque-fixture 2.0: the cached file has sha256") {
			t.Errorf("apply: %v", err)
		}
		if got := e.status("toque-fixture"); got != "" {
			t.Errorf("the root changed: %q", got)
		}
	})
}

// writeJunkIndex indexes deb, which is no package, by hand: dpkg-scanpackages
// would refuse it.
func writeJunkIndex(t *testing.T, repo, deb string) {
	t.Helper()
	sum, err := fileSHA256(deb)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(deb)
	idx := "Package: toque-junk\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.invalid>\nFilename: ./" + filepath.Base(deb) +
		"\nSize: " + strconv.FormatInt(fi.Size(), 10) + "\nSHA256: " + sum + "\nDescription: junk\n\n"
	os.WriteFile(filepath.Join(repo, "Packages"), []byte(idx), 0o644)
	os.Remove(filepath.Join(repo, "Packages.gz"))
}

// A preinst's dpkg-divert lines: the paths they divert, not the divert
// targets, nor what --remove undoes.
func TestScriptDiversions(t *testing.T) {
	script := "#!/bin/sh\nset -e\nif [ \"$1\" = install ]; then\n\tdpkg-divert --package postgresql-common --rename --divert /usr/bin/pg_config.libpq-dev --add /usr/bin/pg_config\nfi\n" +
		"dpkg-divert --remove --rename /usr/bin/old\ndpkg-divert --add \"$f\"\n"
	if got := scriptDiversions(script); !slices.Equal(got, []string{"/usr/bin/pg_config"}) {
		t.Errorf("diversions %q", got)
	}
}
