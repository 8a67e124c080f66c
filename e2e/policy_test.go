package e2e

import (
	"bytes"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/policy"
)

// isolatedGit isolates git (ours and toque's) and gives toque a cache of
// its own.
func isolatedGit(t *testing.T) {
	t.Helper()
	home := testutil.IsolateGit(t)
	t.Setenv("TOQUE_CACHE_DIR", filepath.Join(home, "cache"))
}

// authLog is a loopback server that logs each request's Authorization
// header, then hands it to next.
type authLog struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newAuthLog(t *testing.T, tls bool, next http.Handler) *authLog {
	a := &authLog{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		a.mu.Unlock()
		next.ServeHTTP(w, r)
	})
	if tls {
		a.Server = httptest.NewTLSServer(h)
	} else {
		a.Server = httptest.NewServer(h)
	}
	t.Cleanup(a.Close)
	return a
}

func (a *authLog) log() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// TestE2EPolicyTokenStaysWithTheNamedServer runs install with
// TOQUE_POLICY_TOKEN against real loopback servers: the server policy.hcl
// names gets the token; a second server behind its redirect never does;
// an https server redirecting to http is not followed.
func TestE2EPolicyTokenStaysWithTheNamedServer(t *testing.T) {
	isolatedGit(t)
	e := newEnv(t)
	baseDir := filepath.Join(t.TempDir(), "base")
	testutil.WriteFiles(t, baseDir, map[string]string{
		"policy.hcl":                         "name = \"base\"\nrun_list = [\"base\"]\ncookbook \"base\" {\n  path = \"cookbooks/base\"\n}\n",
		"cookbooks/base/metadata.hcl":        "name = \"base\"\nversion = \"1.0.0\"\n",
		"cookbooks/base/recipes/default.hcl": "",
	})
	out := filepath.Join(t.TempDir(), "export")
	e.mustToque(0, nil, "-chdir="+baseDir, "install")
	e.mustToque(0, nil, "-chdir="+baseDir, "export", out)
	files := http.FileServer(http.Dir(out))
	token := []string{"TOQUE_POLICY_TOKEN=s3cret"}
	include := func(url string) {
		testutil.WriteFiles(t, e.dir, map[string]string{"policy.hcl": "name = \"app\"\ninclude_policy \"base\" {\n  remote = \"" + url + "/base.lock.json\"\n}\n"})
	}

	b := newAuthLog(t, false, files)
	a := newAuthLog(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, b.URL+r.URL.Path, http.StatusFound)
	}))
	include(a.URL)
	e.mustToque(0, token, "-chdir="+e.dir, "install")
	if got := a.log(); len(got) < 2 || got[0] != "/base.lock.json Bearer s3cret" {
		t.Errorf("the named server saw %q", got)
	}
	for _, l := range b.log() {
		if strings.Contains(l, "s3cret") {
			t.Errorf("the server behind the redirect saw the token: %q", b.log())
		}
	}
	if len(b.log()) == 0 {
		t.Error("the redirect was not followed")
	}

	// https redirecting to plain http: refused, and the token stays.
	c := newAuthLog(t, false, files)
	s := newAuthLog(t, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, c.URL+r.URL.Path, http.StatusFound)
	}))
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	include(s.URL)
	os.Remove(filepath.Join(e.dir, "policy.lock.json"))
	r := e.mustToque(1, append(token, "SSL_CERT_FILE="+ca), "-chdir="+e.dir, "install")
	if !strings.Contains(r.stderr, "refused a redirect from https to http") {
		t.Errorf("want the downgrade refused: %s", r)
	}
	if got := s.log(); len(got) != 1 || got[0] != "/base.lock.json Bearer s3cret" {
		t.Errorf("the https server saw %q", got)
	}
	if got := c.log(); len(got) != 0 {
		t.Errorf("the http server behind the redirect saw %q", got)
	}
}

// TestE2EPolicyPinsWhatItRuns: in a chef-repo layout, an included lock's
// ../cookbooks/common is accepted; a cookbook directory that is a link is
// pinned by its content, so a change behind it makes plan refuse the
// lock; a lock naming a cookbook ../../evil is refused.
func TestE2EPolicyPinsWhatItRuns(t *testing.T) {
	isolatedGit(t)
	e := newEnv(t)
	top := t.TempDir()
	repo := filepath.Join(top, "chef-repo")
	testutil.WriteFiles(t, repo, map[string]string{
		"cookbooks/common/metadata.hcl":        "name = \"common\"\nversion = \"1.0.0\"\n",
		"cookbooks/common/recipes/default.hcl": "file \"" + e.root + "/common\" {\n  content = \"common\\n\"\n}\n",
		"base/policy.hcl":                      "name = \"base\"\nrun_list = [\"common\"]\ncookbook \"common\" {\n  path = \"../cookbooks/common\"\n}\n",
		"app/policy.hcl":                       "name = \"app\"\nrun_list = [\"app\"]\ncookbook \"app\" {\n  path = \"cookbooks/app\"\n}\ninclude_policy \"base\" {\n  path = \"../base\"\n}\n",
	})
	testutil.WriteFiles(t, top, map[string]string{
		"shared/app/metadata.hcl":        "name = \"app\"\nversion = \"1.0.0\"\n",
		"shared/app/recipes/default.hcl": "file \"" + e.root + "/app\" {\n  content = \"v1\\n\"\n}\n",
	})
	testutil.Git(t, repo, "init", "--quiet", "-b", "main")
	os.MkdirAll(filepath.Join(repo, "app", "cookbooks"), 0o755)
	if err := os.Symlink(filepath.Join(top, "shared", "app"), filepath.Join(repo, "app", "cookbooks", "app")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(repo, "app")
	e.mustToque(0, nil, "-chdir="+filepath.Join(repo, "base"), "install")
	e.mustToque(0, nil, "-chdir="+app, "install")
	e.mustToque(0, nil, "-chdir="+app, "plan", "-out=plan.out")
	e.mustToque(0, nil, "-chdir="+app, "apply", "plan.out")
	if e.read("common") != "common\n" || e.read("app") != "v1\n" {
		t.Fatal("apply did not run both cookbooks")
	}

	// A change behind the link: the lock is stale.
	testutil.WriteFiles(t, top, map[string]string{"shared/app/recipes/default.hcl": "file \"" + e.root + "/app\" {\n  content = \"v2\\n\"\n}\n"})
	r := e.mustToque(1, nil, "-chdir="+app, "plan")
	if !strings.Contains(r.stderr, "The policy lock is stale") || !strings.Contains(r.stderr, "Cookbook app was edited since the lock was written: run toque update app") {
		t.Fatalf("plan after a change behind the link: %s", r)
	}
	r = e.mustToque(0, nil, "-chdir="+app, "install")
	if !strings.Contains(r.stdout, "~ cookbook app 1.0.0") {
		t.Errorf("install does not show the cookbook moving: %s", r)
	}

	// An included lock naming a cookbook ../../evil, consistent with its
	// revision id: refused in one line, and the good lock is left alone.
	lockPath := filepath.Join(repo, "base", "policy.lock.json")
	l, _, err := policy.ReadLock(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	l.CookbookLocks["../../evil"] = l.CookbookLocks["common"]
	l.RevisionID = l.ComputeRevisionID()
	b, _ := l.Marshal()
	if err := os.WriteFile(lockPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(app, "policy.lock.json"))
	r = e.mustToque(1, nil, "-chdir="+app, "install")
	if !strings.Contains(r.stderr, `the cookbook "../../evil", which is not a`) {
		t.Errorf("want the evil name refused: %s", r)
	}
	if after, _ := os.ReadFile(filepath.Join(app, "policy.lock.json")); !bytes.Equal(before, after) {
		t.Error("a refused install changed the lock")
	}
}
