package packages

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/debtest"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

const testKey = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZfake\n-----END PGP PUBLIC KEY BLOCK-----"

// step runs typ's Load and Plan for r, and Converge when converge is set.
func runType(t *testing.T, typ resources.Type, r *resources.Resource, converge bool) (*resources.State, *resources.Step, error) {
	t.Helper()
	st, err := typ.Load(context.Background(), r.LoadView())
	if err != nil {
		return nil, nil, err
	}
	step, err := resources.PlanStep(typ, r, st)
	if err != nil || !converge {
		return st, step, err
	}
	return st, step, resources.ConvergeStep(context.Background(), typ, &resources.Env{Logger: hclog.NewNullLogger()}, r, st, step)
}

func normalized(t *testing.T, s *resources.Schema, name, action string, values map[string]cty.Value) *resources.Resource {
	t.Helper()
	vals := map[string]cty.Value{}
	for k, v := range values {
		p := s.Property(k)
		if p == nil {
			t.Fatalf("no property %s", k)
		}
		if p.Normalize != nil {
			nv, err := p.Normalize(v)
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			v = nv
		}
		if p.Validate != nil {
			if err := p.Validate(v); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
		}
		vals[k] = v
	}
	if np := s.NameProperty(); np != nil {
		if _, ok := vals[np.Name]; !ok {
			vals[np.Name] = cty.StringVal(name)
		}
	}
	return resources.NewResource(s, name, action, vals)
}

func TestAptRepositoryFile(t *testing.T) {
	root := t.TempDir()
	typ := newAptRepositoryType(root, func(context.Context) string { return filepath.Join(root, "cache") })
	list := filepath.Join(root, "etc/apt/sources.list.d/example.list")
	mk := func(action string, v map[string]cty.Value) *resources.Resource {
		return normalized(t, typ.schema, "example", action, v)
	}
	base := map[string]cty.Value{
		"uri": cty.StringVal("https://deb.example.com/debian"), "distribution": cty.StringVal("bookworm"),
		"components": cty.ListVal([]cty.Value{cty.StringVal("main")}), "key": cty.StringVal(testKey), "arch": cty.StringVal("amd64"),
	}
	r := mk("add", base)
	_, step, err := runType(t, typ, r, true)
	if err != nil || step.Kind != resources.Create {
		t.Fatalf("%v %+v", err, step)
	}
	if len(step.Provides) != 1 || step.Provides[0].Namespace != resources.NamespaceAptSource {
		t.Errorf("provides %+v: a repository it adds is what a package needs", step.Provides)
	}
	b, _ := os.ReadFile(list)
	want := listHeader + "deb [arch=amd64 signed-by=/etc/apt/keyrings/example.asc] https://deb.example.com/debian bookworm main\n"
	if string(b) != want {
		t.Fatalf("list:\n%s\nwant:\n%s", b, want)
	}
	if k, _ := os.ReadFile(filepath.Join(root, "etc/apt/keyrings/example.asc")); string(k) != testKey+"\n" {
		t.Fatalf("keyring %q", k)
	}
	if fi, _ := os.Stat(list); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	if _, step, _ = runType(t, typ, r, false); step.Kind != resources.NoOp {
		t.Fatalf("second plan: %s %s", step.Kind, step.Reason)
	}

	// One more component: an update that names it.
	more := map[string]cty.Value{}
	for k, v := range base {
		more[k] = v
	}
	more["components"] = cty.ListVal([]cty.Value{cty.StringVal("main"), cty.StringVal("contrib")})
	_, step, err = runType(t, typ, mk("add", more), true)
	if err != nil || step.Kind != resources.Update || len(step.Changes) != 1 || step.Changes[0].Property != "components" || !step.HasGroup("source") || step.HasGroup("key") {
		t.Fatalf("update: %v %+v", err, step)
	}
	// A hand edit is undone.
	os.WriteFile(list, []byte("deb https://deb.example.com/debian bookworm main contrib non-free\n"), 0o644)
	_, step, err = runType(t, typ, mk("add", more), true)
	if err != nil || step.Kind != resources.Update {
		t.Fatalf("after a hand edit: %v %+v", err, step)
	}
	if _, step, _ = runType(t, typ, mk("add", more), false); step.Kind != resources.NoOp {
		t.Fatalf("rewritten: %s %s", step.Kind, step.Reason)
	}
	_, step, err = runType(t, typ, mk("delete", more), true)
	if err != nil || step.Kind != resources.Delete {
		t.Fatalf("delete: %v %+v", err, step)
	}
	for _, p := range []string{list, filepath.Join(root, "etc/apt/keyrings/example.asc")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
}

func TestAptRepositoryKeyURL(t *testing.T) {
	key := testKey + "\n"
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); w.Write([]byte(key)) }))
	defer srv.Close()
	root := t.TempDir()
	typ := newAptRepositoryType(root, func(context.Context) string { return filepath.Join(root, "cache") })
	vals := func(sum string) map[string]cty.Value {
		v := map[string]cty.Value{"uri": cty.StringVal("https://deb.example.com/debian"), "distribution": cty.StringVal("stable"), "key": cty.StringVal(srv.URL + "/key.asc"),
			"allow_internal": cty.True} // the test's server is on loopback
		if sum != "" {
			v["checksum"] = cty.StringVal(sum)
		}
		return v
	}
	// The key download follows remote_file's rules: an internal address
	// only with allow_internal.
	internal := vals(resourcetest.SHA256(key))
	delete(internal, "allow_internal")
	_, _, err := runType(t, typ, normalized(t, typ.schema, "k", "add", internal), true)
	if err == nil || !strings.Contains(err.Error(), "goes to 127.0.0.1 (a loopback address)") || !strings.Contains(err.Error(), "allow_internal = true") {
		t.Fatalf("a key URL on loopback without allow_internal: %v", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the internal server was asked")
	}
	if _, _, err := runType(t, typ, normalized(t, typ.schema, "k", "add", vals("")), false); err == nil || !strings.Contains(err.Error(), "checksum must give the sha256") {
		t.Fatalf("a key URL without checksum: %v", err)
	}
	_, _, err = runType(t, typ, normalized(t, typ.schema, "k", "add", vals(resourcetest.SHA256("other"))), true)
	if err == nil || !strings.Contains(err.Error(), "not the checksum") {
		t.Fatalf("a key URL serving other bytes: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/apt/keyrings/k.asc")); !os.IsNotExist(err) {
		t.Fatal("a refused key was written")
	}
	r := normalized(t, typ.schema, "k", "add", vals(resourcetest.SHA256(key)))
	if _, _, err := runType(t, typ, r, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/apt/keyrings/k.asc")); string(b) != key {
		t.Fatalf("keyring %q", b)
	}
	if _, step, _ := runType(t, typ, r, false); step.Kind != resources.NoOp {
		t.Fatalf("second plan %s %s", step.Kind, step.Reason)
	}
}

func TestAptRepositoryBadInput(t *testing.T) {
	s := newAptRepositoryType("", nil).schema
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"uri", cty.StringVal("deb.example.com/debian"), "is not a URI with a scheme"},
		{"uri", cty.StringVal("https:///x"), "has no host"},
		{"repo_name", cty.StringVal("../x"), "use letters, digits"},
		{"signed_by", cty.StringVal("/usr/share/keyrings/x.gpg"), "must be a file directly in /etc/apt/keyrings"},
		{"key", cty.StringVal("not a key"), "ASCII-armored public key"},
		{"key", cty.StringVal("ftp://example.com/key"), "is not an http or https URL"},
		{"distribution", cty.StringVal("bookworm main"), "must be one word"},
	} {
		err := s.Property(c.prop).Validate(c.v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
}

// TestRepositoryUpdateAndPackage: a repository added, the lists updated,
// then the package it offers installed — with the real apt, in a
// throwaway root.
func TestRepositoryUpdateAndPackage(t *testing.T) {
	e := newPkgEnv(t)
	root := debtest.NewRoot(t) // no repository yet
	e.root = root
	for k, v := range root.Env {
		e.prov.env[k] = v
	}
	pkg := e.res("toque-fixture", "install", nil)
	_, step := e.mustPlan(pkg, resources.Create)
	if len(step.Needs) != 1 || !strings.Contains(step.Needs[0].Missing, "(searched: (none: no repository is configured))") {
		t.Fatalf("needs %+v", step.Needs)
	}

	repo := newAptRepositoryType(root.Dir, func(context.Context) string { return filepath.Join(t.TempDir(), "cache") })
	r := normalized(t, repo.schema, "fixtures", "add", map[string]cty.Value{"uri": cty.StringVal("file:" + e.repo), "distribution": cty.StringVal("./"), "trusted": cty.True})
	if _, _, err := runType(t, repo, r, true); err != nil {
		t.Fatal(err)
	}
	upd := newAptUpdateType(e.prov, root.Dir)
	u := normalized(t, upd.schema, "lists", "periodic", nil)
	_, step, err := runType(t, upd, u, true)
	if err != nil || step.Kind != resources.Run || !strings.Contains(step.Reason, "never") {
		t.Fatalf("first update: %v %+v", err, step)
	}
	if _, step, _ = runType(t, upd, u, false); step.Kind != resources.NoOp {
		t.Fatalf("periodic right after an update: %s %s", step.Kind, step.Reason)
	}
	upd.now = func() time.Time { return time.Now().Add(25 * time.Hour) }
	if _, step, _ = runType(t, upd, u, false); step.Kind != resources.Run {
		t.Fatalf("periodic a day later: %s %s", step.Kind, step.Reason)
	}
	_, step = e.mustPlan(pkg, resources.Create)
	if step.Changes[0].After.AsString() != "2.0" || len(step.Needs) != 0 {
		t.Fatalf("after the update: %+v", step)
	}
	e.mustApply(pkg)
	if got := root.Status(t, "toque-fixture"); got != "2.0 installed" {
		t.Fatalf("status %q", got)
	}
}
