package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/internal/testutil"
)

// repo is a working clone pushing to a bare repository served over file://.
type repo struct {
	t    testing.TB
	work string
	bare string
	URL  string
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	base := t.TempDir()
	r := &repo{t: t, work: filepath.Join(base, "work"), bare: filepath.Join(base, "origin.git")}
	r.URL = "file://" + r.bare
	testutil.Git(t, base, "init", "--quiet", "--bare", "-b", "main", r.bare)
	testutil.Git(t, base, "init", "--quiet", "-b", "main", r.work)
	return r
}

// commit writes files (path → content; "" deletes), commits on the
// current branch, pushes it and returns the commit.
func (r *repo) commit(files map[string]string, msg string) string {
	r.t.Helper()
	for p, c := range files {
		full := filepath.Join(r.work, p)
		if c == "" {
			os.Remove(full)
			continue
		}
		writeFile(r.t, full, c)
	}
	testutil.Git(r.t, r.work, "add", "-A")
	testutil.Git(r.t, r.work, "commit", "--quiet", "--allow-empty", "-m", msg)
	branch := testutil.Git(r.t, r.work, "rev-parse", "--abbrev-ref", "HEAD")
	testutil.Git(r.t, r.work, "push", "--quiet", "--tags", r.bare, branch)
	return testutil.Git(r.t, r.work, "rev-parse", "HEAD")
}

func (r *repo) tag(name string) {
	r.t.Helper()
	testutil.Git(r.t, r.work, "tag", "-a", "-m", name, name)
	testutil.Git(r.t, r.work, "push", "--quiet", r.bare, "refs/tags/"+name)
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cookbookFiles is a minimal cookbook under prefix.
func cookbookFiles(prefix, name, version, recipe string) map[string]string {
	if recipe == "" {
		recipe = "file \"/tmp/" + name + "\" {\n  content = \"" + name + "\"\n}\n"
	}
	return map[string]string{
		prefix + "/metadata.hcl":        "name = \"" + name + "\"\nversion = \"" + version + "\"\n",
		prefix + "/recipes/default.hcl": recipe,
	}
}

// ws makes a workspace for dir with a cache shared by the test.
func ws(t testing.TB, dir, cache string) *Workspace {
	t.Helper()
	return NewWorkspace(dir, Options{CacheDir: cache, Logger: hclog.NewNullLogger()})
}

// install runs install and fails the test on errors.
func install(t testing.TB, w *Workspace, opts InstallOptions) *Lock {
	t.Helper()
	res, diags := w.Install(context.Background(), opts)
	if diags.HasErrors() {
		t.Fatalf("install in %s: %s", w.Dir, diagText(diags))
	}
	return res.Lock
}

// installErr runs install expecting errors and returns them.
func installErr(t testing.TB, w *Workspace, opts InstallOptions) hcl.Diagnostics {
	t.Helper()
	res, diags := w.Install(context.Background(), opts)
	if !diags.HasErrors() {
		t.Fatalf("install in %s succeeded (revision %s), want errors", w.Dir, res.Lock.RevisionID)
	}
	return errorsOf(diags)
}

func errorsOf(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d)
		}
	}
	return out
}

func diagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(d.Summary + ": " + d.Detail)
		if d.Subject != nil {
			b.WriteString(" @ " + d.Subject.String())
		}
		b.WriteString("\n")
	}
	return b.String()
}

func readLock(t testing.TB, dir string) *Lock {
	t.Helper()
	l, _, err := ReadLock(filepath.Join(dir, LockFileName))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// basePolicy lays out a policy named name with one cookbook cb at version.
func basePolicy(t testing.TB, dir, name, cb, version, extra string) {
	t.Helper()
	files := cookbookFiles("cookbooks/"+cb, cb, version, "")
	files["policy.hcl"] = "name = \"" + name + "\"\nrun_list = [\"" + cb + "\"]\ncookbook \"" + cb + "\" {\n  path = \"cookbooks/" + cb + "\"\n}\n" + extra
	testutil.WriteFiles(t, dir, files)
}
