package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testutil"
)

// installRes runs install and fails the test on errors.
func installRes(t *testing.T, w *Workspace, opts InstallOptions) *InstallResult {
	t.Helper()
	res, diags := w.Install(t.Context(), opts)
	if diags.HasErrors() {
		t.Fatalf("install in %s: %s", w.Dir, diagText(diags))
	}
	return res
}

func describeChanges(c *LockChanges) string {
	var out []string
	if c.RunList != nil {
		out = append(out, "run list "+strings.Join(c.RunList.Old, ",")+" → "+strings.Join(c.RunList.New, ","))
	}
	for _, cb := range c.Cookbooks {
		s := string(cb.Kind) + " cookbook " + cb.Name
		if cb.Kind == Changed {
			s += " " + cb.Old.Version + "→" + cb.New.Version
		}
		out = append(out, s)
	}
	for _, inc := range c.Includes {
		s := string(inc.Kind) + " include " + inc.Name
		if inc.Kind == Changed {
			s += " " + short(inc.Old.SourceOptions.Sha) + "→" + short(inc.New.SourceOptions.Sha)
		}
		out = append(out, s)
	}
	for _, a := range c.Attributes {
		out = append(out, string(a.Kind)+" "+a.Level+" "+strings.Join(a.Path, ".")+" "+canonical(a.Old)+"→"+canonical(a.New))
	}
	return strings.Join(out, "; ")
}

func TestInstallReportsWhatMoved(t *testing.T) {
	testutil.IsolateGit(t)
	r := newRepo(t)
	cache := filepath.Join(t.TempDir(), "cache")
	c1, rev1 := publishBase(t, r, cache, "1.0.0")
	dir := t.TempDir()
	gitParent(t, dir, "git = \""+r.URL+"\"\npath = \"policies/base/policy.lock.json\"\nref = \"main\"")
	w := ws(t, dir, cache)
	// A workspace fetches a repository once: each install gets its own.
	installRes := func(t *testing.T, _ *Workspace, opts InstallOptions) *InstallResult {
		t.Helper()
		return installRes(t, ws(t, dir, cache), opts)
	}

	res := installRes(t, w, InstallOptions{})
	if !res.Written || res.Changes.OldRevision != "" || res.Changes.NewRevision != res.Lock.RevisionID {
		t.Fatalf("first install: written %v, changes %+v", res.Written, res.Changes)
	}
	if got := describeChanges(res.Changes); got != `run list  → recipe[base::default],recipe[app::default]; added cookbook app; added cookbook base; added include base; added default base.version null→"1.0.0"` {
		t.Errorf("first install: %s", got)
	}

	// Nothing moved: the file is not written again.
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(w.LockPath(), past, past)
	res = installRes(t, w, InstallOptions{})
	if res.Written || !res.Changes.Empty() {
		t.Fatalf("second install: written %v, changes %s", res.Written, describeChanges(res.Changes))
	}
	if fi, _ := os.Stat(w.LockPath()); !fi.ModTime().Equal(past) {
		t.Errorf("an install that moved nothing rewrote the lock (mtime %s)", fi.ModTime())
	}
	// update with nothing new upstream: no changes either.
	if res = installRes(t, w, InstallOptions{Update: true}); res.Written || !res.Changes.Empty() {
		t.Fatalf("update with nothing new: written %v, changes %s", res.Written, describeChanges(res.Changes))
	}

	// The branch moves on: install keeps the pin, update moves it.
	c2, rev2 := publishBase(t, r, cache, "1.1.0")
	if res = installRes(t, w, InstallOptions{}); res.Written {
		t.Fatalf("install moved a pin: %s", describeChanges(res.Changes))
	}
	res = installRes(t, w, InstallOptions{Update: true})
	if !res.Written || res.Changes.OldRevision == res.Changes.NewRevision {
		t.Fatalf("update: written %v, %+v", res.Written, res.Changes)
	}
	want := `changed cookbook base 1.0.0→1.1.0; changed include base ` + short(c1) + `→` + short(c2) + `; changed default base.version "1.0.0"→"1.1.0"`
	if got := describeChanges(res.Changes); got != want {
		t.Errorf("update:\n got %s\nwant %s", got, want)
	}
	if inc := res.Changes.Includes[0]; inc.Old.RevisionID != rev1 || inc.New.RevisionID != rev2 {
		t.Errorf("include revisions %s → %s, want %s → %s", inc.Old.RevisionID, inc.New.RevisionID, rev1, rev2)
	}

	// Attributes added and removed, cookbook removed.
	writeFile(t, filepath.Join(dir, PolicyFileName), "name = \"app\"\nrun_list = []\noverride_attributes = { app = { port = 80 } }\ninclude_policy \"base\" {\n  git = \""+r.URL+"\"\n  path = \"policies/base/policy.lock.json\"\n  ref = \"main\"\n}\n")
	res = installRes(t, w, InstallOptions{})
	want = `run list recipe[base::default],recipe[app::default] → recipe[base::default]; removed cookbook app; added override app.port null→80`
	if got := describeChanges(res.Changes); got != want {
		t.Errorf("edit:\n got %s\nwant %s", got, want)
	}

	// Only an input moved (a comment in policy.hcl): written, no changes.
	b := mustRead(t, filepath.Join(dir, PolicyFileName))
	writeFile(t, filepath.Join(dir, PolicyFileName), string(b)+"# a comment\n")
	if res = installRes(t, w, InstallOptions{}); !res.Written || !res.Changes.Empty() {
		t.Fatalf("comment: written %v, changes %s", res.Written, describeChanges(res.Changes))
	}
}
