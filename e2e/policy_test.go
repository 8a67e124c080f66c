package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// isolatedGit isolates git (ours and toque's) and gives toque a cache of
// its own.
func isolatedGit(t *testing.T) {
	t.Helper()
	home := testutil.IsolateGit(t)
	t.Setenv("TOQUE_CACHE_DIR", filepath.Join(home, "cache"))
}

func TestE2EPolicyIncludeFromGit(t *testing.T) {
	isolatedGit(t)
	e := newEnv(t)
	base := t.TempDir()
	bare, work := filepath.Join(base, "policies.git"), filepath.Join(base, "work")
	testutil.Git(t, base, "init", "--quiet", "--bare", "-b", "main", bare)
	testutil.Git(t, base, "init", "--quiet", "-b", "main", work)

	// The core team's base policy, locked and pushed.
	testutil.WriteFiles(t, work, map[string]string{
		"base/policy.hcl": `name = "base"
run_list = ["base"]
cookbook "base" {
  path = "cookbooks/base"
}
default_attributes = { base = { motd = "managed by toque" } }
`,
		"base/cookbooks/base/metadata.hcl":        "name = \"base\"\nversion = \"0.1.0\"\n",
		"base/cookbooks/base/attributes/root.hcl": "default \"paths\" {\n  root = \"" + e.root + "\"\n}\n",
		"base/cookbooks/base/templates/motd.tpl":  "${motd}\n",
		"base/cookbooks/base/recipes/default.hcl": `template "motd" {
  path      = "${node.paths.root}/motd"
  source    = "motd.tpl" # from the cookbook's templates/, fetched from git
  variables = { motd = node.base.motd }
  mode      = "0644"
}
`,
	})
	r := e.toque(nil, "-chdir="+filepath.Join(work, "base"), "install")
	if r.code != 0 {
		t.Fatalf("base install: %s", r)
	}
	testutil.Git(t, work, "add", "-A")
	testutil.Git(t, work, "commit", "--quiet", "-m", "base")
	testutil.Git(t, work, "push", "--quiet", bare, "main")
	commit := testutil.Git(t, work, "rev-parse", "HEAD")

	// The app team's policy includes it from git.
	testutil.WriteFiles(t, e.dir, map[string]string{
		"policy.hcl": `name = "app"
run_list = ["app::default"]
cookbook "app" {
  path = "cookbooks/app"
}
default_attributes = { app = { name = "shop" } }
include_policy "base" {
  git  = "file://` + bare + `"
  path = "base/policy.lock.json"
  ref  = "main"
}
`,
		"cookbooks/app/metadata.hcl":          "name = \"app\"\nversion = \"1.0.0\"\n",
		"cookbooks/app/recipes/default.hcl":   "template \"app\" {\n  path   = \"${node.paths.root}/app.txt\"\n  source = \"app.txt.tpl\"\n}\n",
		"cookbooks/app/templates/app.txt.tpl": "${node.app.name}: ${node.base.motd}\n",
	})

	r = e.must(1, "plan")
	if !strings.Contains(r.stderr, "No policy lock") || !strings.Contains(r.stderr, "toque install") {
		t.Fatalf("plan without a lock: %s", r)
	}
	r = e.must(0, "install")
	if !strings.Contains(r.stdout, "include base: policy base revision") || !strings.Contains(r.stdout, commit) {
		t.Fatalf("install output: %s", r)
	}
	var lock struct {
		RevisionID string   `json:"revision_id"`
		RunList    []string `json:"run_list"`
	}
	b, err := os.ReadFile(filepath.Join(e.dir, "policy.lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	if strings.Join(lock.RunList, ",") != "recipe[base::default],recipe[app::default]" {
		t.Fatalf("run list %v", lock.RunList)
	}

	e.must(0, "validate")
	r = e.must(2, "plan", "-detailed-exitcode", "-out=plan.out")
	if !strings.Contains(r.stdout, "Plan: 2 to create") {
		t.Fatalf("plan: %s", r)
	}
	// The plan names the policy and its lock, and the git include's
	// cookbook by name, not by this host's cache path.
	if !strings.Contains(r.stdout, "(policy app, lock revision "+lock.RevisionID[:10]+")") {
		t.Errorf("the plan does not name the policy and its lock:\n%s", r.stdout)
	}
	md := e.must(0, "show", "-markdown", "plan.out").stdout
	if !strings.Contains(md, "Policy `app`, lock revision `"+lock.RevisionID+"`") || !strings.Contains(md, "cookbook base: recipes/default.hcl") || strings.Contains(md, e.state) {
		t.Errorf("the Markdown plan:\n%s", md)
	}
	r = e.must(0, "show", "-json", "plan.out")
	var shown struct {
		LockRevision string `json:"lock_revision"`
		Attributes   []struct {
			Path   string `json:"path"`
			Source string `json:"source"`
		} `json:"attributes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.LockRevision != lock.RevisionID {
		t.Errorf("plan lock_revision %q, want %q", shown.LockRevision, lock.RevisionID)
	}
	sources := map[string]string{}
	for _, a := range shown.Attributes {
		sources[a.Path] = a.Source
	}
	if !strings.HasPrefix(sources["base.motd"], `include_policy "base" (revision `) || !strings.HasSuffix(sources["app.name"], "policy.hcl:6") ||
		sources["paths.root"] != "cookbook base: attributes/root.hcl:2" {
		t.Errorf("attribute provenance %v", sources)
	}
	e.must(0, "apply", "plan.out")
	if got := e.read("motd"); got != "managed by toque\n" {
		t.Errorf("motd %q", got)
	}
	if got := e.read("app.txt"); got != "shop: managed by toque\n" {
		t.Errorf("app.txt %q", got)
	}
	e.must(0, "plan", "-detailed-exitcode")

	// A local cookbook changed since install: plan refuses the stale lock.
	testutil.WriteFiles(t, e.dir, map[string]string{"cookbooks/app/recipes/extra.hcl": "# new\n"})
	r = e.must(1, "plan")
	if !strings.Contains(r.stderr, "The policy lock is stale") || !strings.Contains(r.stderr, `the cookbook "app" (cookbooks/app) changed`) || !strings.Contains(r.stderr, "toque install") {
		t.Fatalf("stale plan: %s", r)
	}
	e.must(0, "install")
	e.must(0, "plan", "-detailed-exitcode")
}
