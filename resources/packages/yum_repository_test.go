package packages

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/rpmtest"
	"github.com/toquehq/toque/resources"
)

// yumEnv is a namespace host with yum_repository and dnf_makecache
// pointed at it: files through /proc/PID/root, rpm through the wrappers.
type yumEnv struct {
	host *rpmtest.Host
	repo *yumRepositoryType
	mc   *dnfMakecacheType
	prov *dnfProvider
}

func newYumEnv(t *testing.T, repos ...string) *yumEnv {
	t.Helper()
	h := rpmtest.NewHost(t, repos...)
	prov := &dnfProvider{env: h.Env, readTimeout: time.Minute, lockPoll: 100 * time.Millisecond}
	return &yumEnv{host: h, prov: prov,
		repo: newYumRepositoryType(h.FilesRoot, prov, func(context.Context) string { return filepath.Join(t.TempDir(), "cache") }),
		mc:   newDnfMakecacheType(prov, h.FilesRoot)}
}

func TestYumRepository(t *testing.T) {
	fixtures := fixtureRepo(t)
	e := newYumEnv(t)
	// The key where RHEL keeps them, under the type's root.
	b, err := os.ReadFile("testdata/repo-key-rsa.asc")
	if err != nil {
		t.Fatal(err)
	}
	key := "/etc/pki/rpm-gpg/RPM-GPG-KEY-toque"
	if err := os.MkdirAll(filepath.Join(e.host.FilesRoot, "etc/pki/rpm-gpg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.host.FilesRoot, key), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := e.repo.schema
	vals := map[string]cty.Value{
		"baseurl":  str("file://" + fixtures),
		"gpgkey":   str("file://" + key),
		"gpgcheck": cty.False,
		"priority": cty.NumberIntVal(10),
		"exclude":  str("toque-fail kernel*"),
	}
	r := normalized(t, s, "toque-fixtures", "create", vals)
	_, step, err := runType(t, e.repo, r, true)
	if err != nil {
		t.Fatal(err)
	}
	if step.Kind != resources.Create || !step.HasGroup("key") || !step.HasGroup("file") {
		t.Fatalf("step %s %v: %s", step.Kind, step.Groups, step.Reason)
	}
	if ch := step.Change("gpgkey"); ch == nil || !strings.Contains(ch.Note, "imports gpg-pubkey-8ea660d5-6b0a0d78 into rpm's keyring") {
		t.Errorf("gpgkey change %+v", ch)
	}
	want := repoHeader + `[toque-fixtures]
name=toque-fixtures
baseurl=file://` + fixtures + `
enabled=1
gpgcheck=0
gpgkey=file://` + key + `
priority=10
exclude=toque-fail kernel*
`
	if got := e.host.ReadFile("/etc/yum.repos.d/toque-fixtures.repo"); got != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	if got := e.host.Run(t, "rpm", "-q", "gpg-pubkey"); strings.TrimSpace(got) != "gpg-pubkey-8ea660d5-6b0a0d78" {
		t.Errorf("rpm's keyring: %q", got)
	}
	// dnf reads it: the repository offers the fixtures once the cache is
	// refreshed (dnf_makecache), and the exclude hides toque-fail.
	_, step, err = runType(t, e.mc, resources.NewResource(e.mc.schema, "cache", "periodic", nil), true)
	if err != nil || step.Kind != resources.Run || !strings.Contains(step.Reason, "never refreshed") {
		t.Fatalf("dnf_makecache: %v %+v", err, step)
	}
	if out := e.host.Run(t, "dnf", "-C", "-q", "repoquery", "--qf", "%{name}", "toque-fixture", "toque-fail"); strings.TrimSpace(out) != "toque-fixture" {
		t.Errorf("repoquery after the makecache: %q", out)
	}
	_, step, _ = runType(t, e.mc, resources.NewResource(e.mc.schema, "cache", "periodic", nil), false)
	if step.Kind != resources.NoOp {
		t.Errorf("dnf_makecache right after one: %s (%s)", step.Kind, step.Reason)
	}
	// Nothing to do: the file is as written, the key imported.
	e.host.CallLog()
	_, step, err = runType(t, e.repo, r, false)
	if err != nil || step.Kind != resources.NoOp {
		t.Fatalf("second plan: %v %+v", err, step)
	}
	if calls := e.host.CallLog(); len(calls) != 1 || !strings.HasPrefix(calls[0], "rpm -q --qf") {
		t.Errorf("the reading ran %q: one rpm -q gpg-pubkey", calls)
	}
	// A field changes: the plan names it.
	vals["priority"] = cty.NumberIntVal(20)
	r = normalized(t, s, "toque-fixtures", "create", vals)
	_, step, err = runType(t, e.repo, r, true)
	if err != nil || step.Kind != resources.Update || len(step.Changes) != 1 || step.Changes[0].Property != "priority" || step.HasGroup("key") {
		t.Fatalf("priority: %v %+v", err, step)
	}
	// A file someone edited is rewritten.
	e.host.WriteFile(t, "/etc/yum.repos.d/toque-fixtures.repo", e.host.ReadFile("/etc/yum.repos.d/toque-fixtures.repo")+"# local note\n")
	_, step, err = runType(t, e.repo, r, true)
	if err != nil || step.Kind != resources.Update || !strings.Contains(step.Reason, "rewritten") {
		t.Fatalf("hand-edited: %v %+v", err, step)
	}
	// delete removes the file, and leaves the key.
	_, step, err = runType(t, e.repo, normalized(t, s, "toque-fixtures", "delete", nil), true)
	if err != nil || step.Kind != resources.Delete {
		t.Fatalf("delete: %v %+v", err, step)
	}
	if e.host.ReadFile("/etc/yum.repos.d/toque-fixtures.repo") != "" {
		t.Error("delete left the file")
	}
	_, step, _ = runType(t, e.repo, normalized(t, s, "toque-fixtures", "delete", nil), false)
	if step.Kind != resources.NoOp {
		t.Errorf("second delete: %s", step.Kind)
	}
}

func TestYumRepositoryBadInput(t *testing.T) {
	typ := newYumRepositoryType("", newDnfProvider(), nil)
	s := typ.schema
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"repositoryid", str("../etc/passwd"), "use letters, digits"},
		{"repositoryid", str("a\nb"), "use letters, digits"},
		{"repositoryid", str("-x"), "use letters, digits"},
		{"repositoryid", str("a..b"), "use letters, digits"},
		{"baseurl", str("not a url"), "holds a space"},
		{"baseurl", str("/srv/repo"), "is not a URL with a scheme"},
		{"baseurl", str("https://"), "has no host"},
		{"baseurl", str("file:///srv/../etc"), `holds ".."`},
		{"baseurl", str("https://example.com/a\n[evil]"), "line break"},
		{"baseurl", cty.ListValEmpty(cty.String), "must not be an empty list"},
		{"mirrorlist", str("gopher://example.com/x"), "is not a URL with a scheme"},
		{"gpgkey", str("ftp:/nohost"), "has no host"},
		{"description", str("a\ngpgcheck=0"), "one line"},
		{"exclude", str("-x"), "not a package name or glob"},
		{"exclude", str("a=b"), "not a package name or glob"},
		{"priority", cty.NumberIntVal(0), "from 1 to 99"},
		{"metadata_expire", str("soon"), "metadata_expire"},
		{"gpgkey_checksum", str("xyz"), "sha256"},
		{"sslcacert", str("relative/ca.pem"), "absolute"},
	} {
		p := s.Property(c.prop)
		var err error
		if p.Normalize != nil {
			var v cty.Value
			v, err = p.Normalize(c.v)
			if err == nil && p.Validate != nil {
				err = p.Validate(v)
			}
		} else {
			err = p.Validate(c.v)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
	// Plan's rules: a URL is needed; a key over plain http only with
	// gpgcheck = false written out; a downloaded key needs its checksum.
	for _, c := range []struct {
		vals map[string]cty.Value
		want string
	}{
		{map[string]cty.Value{}, "needs baseurl, mirrorlist or metalink"},
		{map[string]cty.Value{"baseurl": str("https://r.example.com/el9"), "gpgkey": str("http://r.example.com/key")}, "fetched over plain http"},
		{map[string]cty.Value{"baseurl": str("https://r.example.com/el9"), "gpgkey": str("http://r.example.com/key"), "gpgcheck": cty.True}, "fetched over plain http"},
		{map[string]cty.Value{"baseurl": str("https://r.example.com/el9"), "gpgkey": str("https://r.example.com/key")}, "gpgkey_checksum must give its sha256"},
	} {
		r := normalized(t, s, "r", "create", c.vals)
		_, err := typ.Plan("create", r, resources.Absent())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.vals, err, c.want)
		}
	}
	r := normalized(t, s, "r", "create", map[string]cty.Value{"baseurl": str("https://r.example.com/el9"), "gpgkey": str("http://r.example.com/key"), "gpgcheck": cty.False})
	if step, err := typ.Plan("create", r, resources.Absent()); err != nil || step.Kind != resources.Create {
		t.Errorf("http key with gpgcheck = false: %v", err)
	}
}
