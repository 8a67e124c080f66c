package policy

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// benchPolicy lays out a policy with 20 git includes (one cookbook each,
// all from one repository) and 30 local cookbooks: 50 cookbooks in all.
// It installs once, so the cache is warm.
func benchPolicy(b *testing.B) (*Workspace, string) {
	b.Helper()
	testutil.IsolateGit(b)
	r := newRepo(b)
	cache := filepath.Join(b.TempDir(), "cache")
	for i := 0; i < 20; i++ {
		dir := filepath.Join(r.work, "policies", fmt.Sprintf("p%02d", i))
		cb := fmt.Sprintf("inc%02d", i)
		basePolicy(b, dir, fmt.Sprintf("p%02d", i), cb, "1.0.0", fmt.Sprintf("default_attributes = { %s = { n = %d } }\n", cb, i))
		install(b, ws(b, dir, cache), InstallOptions{})
	}
	r.commit(nil, "policies")

	dir := b.TempDir()
	var src strings.Builder
	src.WriteString("name = \"big\"\nrun_list = [")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&src, "\"own%02d\", ", i)
	}
	src.WriteString("]\n")
	for i := 0; i < 30; i++ {
		cb := fmt.Sprintf("own%02d", i)
		testutil.WriteFiles(b, dir, cookbookFiles("cookbooks/"+cb, cb, "1.0.0", ""))
		writeFile(b, filepath.Join(dir, "cookbooks", cb, "templates", "big.tpl"), strings.Repeat("line\n", 200))
		fmt.Fprintf(&src, "cookbook %q {\n  path = \"cookbooks/%s\"\n}\n", cb, cb)
	}
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&src, "include_policy \"p%02d\" {\n  git  = %q\n  path = \"policies/p%02d/policy.lock.json\"\n  ref  = \"main\"\n}\n", i, r.URL, i)
	}
	writeFile(b, filepath.Join(dir, "policy.hcl"), src.String())
	l := install(b, ws(b, dir, cache), InstallOptions{})
	if len(l.CookbookLocks) != 50 || len(l.IncludedPolicyLocks) != 20 {
		b.Fatalf("%d cookbooks, %d includes", len(l.CookbookLocks), len(l.IncludedPolicyLocks))
	}
	return ws(b, dir, cache), dir
}

// BenchmarkInstallWarm: install of a policy with 20 git includes and 50
// cookbooks, every pin recorded and the cache warm.
func BenchmarkInstallWarm(b *testing.B) {
	w, _ := benchPolicy(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w2 := NewWorkspace(w.Dir, w.opts)
		if _, diags := w2.Install(context.Background(), InstallOptions{}); diags.HasErrors() {
			b.Fatal(diagText(diags))
		}
	}
}

// BenchmarkStaleLockDetection: the time plan takes to refuse the lock of
// that policy after one local cookbook changed.
func BenchmarkStaleLockDetection(b *testing.B) {
	w, dir := benchPolicy(b)
	writeFile(b, filepath.Join(dir, "cookbooks", "own29", "recipes", "new.hcl"), "# changed\n")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _, diags := NewWorkspace(w.Dir, w.opts).LoadLock(context.Background())
		if len(diags) != 1 || diags[0].Summary != "The policy lock is stale" {
			b.Fatal(diagText(diags))
		}
	}
}
