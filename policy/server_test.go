package policy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// exportBase installs a base policy at version and exports it to out as
// group prod's policy.
func exportBase(t *testing.T, root, out, version string) string {
	t.Helper()
	dir := filepath.Join(root, "base")
	basePolicy(t, dir, "base", "base", version, "default_attributes = { base = { v = \""+version+"\" } }\n")
	w := ws(t, dir, filepath.Join(root, "cache-base"))
	l := install(t, w, InstallOptions{})
	res, err := w.Export(context.Background(), out, "prod")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"policies/base/revisions/" + l.RevisionID, "policy_groups/prod/policies/base", "base.lock.json", "cookbook_artifacts/base/" + l.CookbookLocks["base"].Identifier} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("export lacks %s (wrote %v)", f, res.Files)
		}
	}
	return l.RevisionID
}

func TestServerInclude(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "export")
	rev1 := exportBase(t, root, out, "0.1.0")
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()

	parent := func(t *testing.T, src string) (*Workspace, string) {
		dir := t.TempDir()
		basePolicy(t, dir, "app", "app", "1.0.0", "include_policy \"base\" {\n"+src+"\n}\n")
		return ws(t, dir, filepath.Join(dir, ".cache")), dir
	}

	t.Run("policy group, pinned until update", func(t *testing.T) {
		w, dir := parent(t, `server = "`+srv.URL+`"
policy_group = "prod"`)
		l := install(t, w, InstallOptions{})
		inc := l.IncludedPolicyLocks[0]
		if inc.RevisionID != rev1 || inc.SourceOptions.PolicyRevisionID != rev1 {
			t.Fatalf("included %+v", inc)
		}
		if cl := l.CookbookLocks["base"]; cl.SourceOptions.URL != srv.URL || !strings.HasPrefix(cl.SourceOptions.Artifact, "cookbook_artifacts/base/") {
			t.Fatalf("base cookbook source %+v", cl.SourceOptions)
		}
		// The cookbook is fetched from the server's artifacts.
		if _, in, diags := w.LoadLock(context.Background()); diags.HasErrors() || len(in.Cookbooks) != 2 {
			t.Fatalf("load: %s %+v", diagText(diags), in.Cookbooks)
		}
		// The group moves on; install keeps the pinned revision, update follows.
		rev2 := exportBase(t, root, out, "0.2.0")
		l = install(t, ws(t, dir, filepath.Join(dir, ".cache")), InstallOptions{})
		if got := l.IncludedPolicyLocks[0].RevisionID; got != rev1 {
			t.Fatalf("install moved the group pin to %s", got)
		}
		l = install(t, ws(t, dir, filepath.Join(dir, ".cache")), InstallOptions{Update: true})
		if got := l.IncludedPolicyLocks[0].RevisionID; got != rev2 {
			t.Fatalf("update pinned %s, want %s", got, rev2)
		}
		if _, _, diags := ws(t, dir, filepath.Join(dir, ".cache")).LoadLock(context.Background()); diags.HasErrors() {
			t.Fatal(diagText(diags))
		}
	})

	t.Run("revision id", func(t *testing.T) {
		w, _ := parent(t, `server = "`+srv.URL+`"
policy_revision_id = "`+rev1+`"
policy_name = "base"`)
		if l := install(t, w, InstallOptions{}); l.IncludedPolicyLocks[0].RevisionID != rev1 {
			t.Fatalf("got %s", l.IncludedPolicyLocks[0].RevisionID)
		}
	})

	t.Run("remote lock URL", func(t *testing.T) {
		w, _ := parent(t, `remote = "`+srv.URL+`/base.lock.json"`)
		l := install(t, w, InstallOptions{})
		if !strings.HasPrefix(l.IncludedPolicyLocks[0].SourceOptions.SHA256, "sha256:") {
			t.Fatalf("no digest pin: %+v", l.IncludedPolicyLocks[0].SourceOptions)
		}
		if _, _, diags := w.LoadLock(context.Background()); diags.HasErrors() {
			t.Fatal(diagText(diags))
		}
	})

	for _, tc := range []struct {
		name, src, summary string
		detail             []string
	}{
		{"unknown group", `server = "` + srv.URL + `"
policy_group = "staging"`, "Cannot fetch an included policy", []string{`policy "base" in policy group "staging"`, "404"}},
		{"unknown revision", `server = "` + srv.URL + `"
policy_revision_id = "0123456789abcdef"`, "Cannot fetch an included policy", []string{`policy "base" at revision 0123456789abcdef`, "404"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := parent(t, tc.src)
			assertDiags(t, installErr(t, w, InstallOptions{}), []string{tc.summary}, tc.detail)
		})
	}

	t.Run("unauthorized", func(t *testing.T) {
		files := http.FileServer(http.Dir(out))
		authed := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				http.Error(rw, "no", http.StatusUnauthorized)
				return
			}
			files.ServeHTTP(rw, r)
		}))
		defer authed.Close()
		w, dir := parent(t, `server = "`+authed.URL+`"
policy_group = "prod"`)
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Cannot fetch an included policy"},
			[]string{`policy "base" in policy group "prod"`, "401", TokenEnv})
		w = NewWorkspace(dir, Options{CacheDir: filepath.Join(dir, ".cache"), Token: "s3cret", Logger: hclog.NewNullLogger()})
		install(t, w, InstallOptions{})
	})

	t.Run("TLS certificates are verified", func(t *testing.T) {
		tls := httptest.NewTLSServer(http.FileServer(http.Dir(out)))
		defer tls.Close()
		w, dir := parent(t, `server = "`+tls.URL+`"
policy_group = "prod"`)
		diags := installErr(t, w, InstallOptions{})
		if !strings.Contains(diagText(diags), "certificate") {
			t.Fatalf("want a certificate error, got %s", diagText(diags))
		}
		w = NewWorkspace(dir, Options{CacheDir: filepath.Join(dir, ".cache"), HTTPClient: tls.Client(), Logger: hclog.NewNullLogger()})
		install(t, w, InstallOptions{})
	})
}
