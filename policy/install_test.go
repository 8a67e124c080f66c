package policy

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/internal/testutil"
)

// assertDiags checks the error summaries, in order, and that each detail
// holds the given fragments.
func assertDiags(t *testing.T, diags hcl.Diagnostics, want []string, fragments ...[]string) {
	t.Helper()
	diags = errorsOf(diags)
	if len(diags) != len(want) {
		t.Fatalf("want %d errors %q, got:\n%s", len(want), want, diagText(diags))
	}
	for i, d := range diags {
		if d.Summary != want[i] {
			t.Errorf("error %d: summary %q, want %q", i, d.Summary, want[i])
		}
		if i < len(fragments) {
			for _, f := range fragments[i] {
				if !strings.Contains(d.Detail, f) {
					t.Errorf("error %d (%s): detail lacks %q:\n%s", i, d.Summary, f, d.Detail)
				}
			}
		}
	}
}

func TestInstallPathIncludeAndDeterminism(t *testing.T) {
	root := t.TempDir()
	cache := filepath.Join(root, "cache")
	base := filepath.Join(root, "base")
	basePolicy(t, base, "base", "base", "0.1.0", "default_attributes = { base = { a = 1, list = [1, 2] } }\noverride_attributes = { o = { x = true } }\n")
	baseLock := install(t, ws(t, base, cache), InstallOptions{})

	app := filepath.Join(root, "app")
	basePolicy(t, app, "app", "app", "1.0.0", `
default_attributes = { app = { port = 8080 } }
include_policy "base" {
  path        = "../base"
  revision_id = "`+baseLock.RevisionID[:12]+`"
}
`)
	w := ws(t, app, cache)
	l := install(t, w, InstallOptions{})
	if got := strings.Join(l.RunList, ","); got != "recipe[base::default],recipe[app::default]" {
		t.Errorf("run list %s", got)
	}
	if l.RevisionID != l.ComputeRevisionID() || len(l.RevisionID) != 64 {
		t.Errorf("revision id %s", l.RevisionID)
	}
	first, err := os.ReadFile(w.LockPath())
	if err != nil {
		t.Fatal(err)
	}
	install(t, ws(t, app, cache), InstallOptions{})
	second, _ := os.ReadFile(w.LockPath())
	if !bytes.Equal(first, second) {
		t.Fatalf("a second install changed the lock:\n%s\n---\n%s", first, second)
	}
	// The cookbook of the included lock resolves relative to that lock.
	if got := l.CookbookLocks["base"].SourceOptions.Path; got != "../base/cookbooks/base" {
		t.Errorf("base cookbook path %q", got)
	}

	t.Run("stale lock", func(t *testing.T) {
		if ch := w.StaleInputs(l); len(ch) != 0 {
			t.Fatalf("fresh lock reported stale: %v", ch)
		}
		writeFile(t, filepath.Join(base, "cookbooks/base/recipes/extra.hcl"), "# more\n")
		defer os.Remove(filepath.Join(base, "cookbooks/base/recipes/extra.hcl"))
		policyHCL := filepath.Join(app, "policy.hcl")
		orig, _ := os.ReadFile(policyHCL)
		writeFile(t, policyHCL, string(orig)+"\n# edited\n")
		defer os.WriteFile(policyHCL, orig, 0o644)
		_, _, diags := ws(t, app, cache).LoadLock(context.Background())
		assertDiags(t, diags, []string{"The policy lock is stale"}, []string{"policy.hcl changed", `the cookbook "base" (../base/cookbooks/base) changed`, "toque install"})
	})

	t.Run("revision expectation", func(t *testing.T) {
		writeFile(t, filepath.Join(app, "policy.hcl"), strings.Replace(string(mustRead(t, filepath.Join(app, "policy.hcl"))), baseLock.RevisionID[:12], "0123456789ab", 1))
		diags := installErr(t, ws(t, app, cache), InstallOptions{})
		assertDiags(t, diags, []string{"Unexpected included revision"}, []string{"0123456789ab", baseLock.RevisionID})
		// The failed install left the good lock alone.
		if now, _ := os.ReadFile(w.LockPath()); !bytes.Equal(now, first) {
			t.Error("a failed install rewrote the lock")
		}
	})
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// includeSetup makes locks a and b (each with its own cookbook and the
// given extra policy text) and a parent that includes both.
func includeSetup(t *testing.T, aExtra, bExtra, parentExtra string) *Workspace {
	t.Helper()
	root := t.TempDir()
	cache := filepath.Join(root, "cache")
	basePolicy(t, filepath.Join(root, "a"), "a", "ca", "1.0.0", aExtra)
	install(t, ws(t, filepath.Join(root, "a"), cache), InstallOptions{})
	basePolicy(t, filepath.Join(root, "b"), "b", "cb", "1.0.0", bExtra)
	install(t, ws(t, filepath.Join(root, "b"), cache), InstallOptions{})
	parent := filepath.Join(root, "p")
	basePolicy(t, parent, "p", "cp", "1.0.0", "include_policy \"a\" {\n  path = \"../a\"\n}\ninclude_policy \"b\" {\n  path = \"../b\"\n}\n"+parentExtra)
	return ws(t, parent, cache)
}

// sharedCookbook adds cookbook "shared" at version to a policy's text.
func sharedCookbook(t *testing.T, root, dir, version string) string {
	t.Helper()
	testutil.WriteFiles(t, filepath.Join(root, dir), cookbookFiles("cookbooks/shared", "shared", version, ""))
	return "cookbook \"shared\" {\n  path = \"cookbooks/shared\"\n}\n"
}

func TestConflicts(t *testing.T) {
	t.Run("same cookbook and values merge", func(t *testing.T) {
		root := t.TempDir()
		a := sharedCookbook(t, root, "a", "1.0.0") + "default_attributes = { x = { same = 1 } }\n"
		b := sharedCookbook(t, root, "b", "1.0.0") + "default_attributes = { x = { same = 1, other = 2 } }\n"
		w := includeSetupIn(t, root, a, b, "")
		l := install(t, w, InstallOptions{})
		if _, ok := l.CookbookLocks["shared"]; !ok || len(l.CookbookLocks) != 4 {
			t.Errorf("cookbooks %v", slices.Sorted(maps.Keys(l.CookbookLocks)))
		}
	})
	t.Run("cookbook at two versions", func(t *testing.T) {
		root := t.TempDir()
		w := includeSetupIn(t, root, sharedCookbook(t, root, "a", "1.2.4"), sharedCookbook(t, root, "b", "1.2.5"), "")
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Conflicting cookbook locks"},
			[]string{`"shared"`, "1.2.4", "1.2.5", `include_policy "a" (revision`, `include_policy "b" (revision`, "policy.hcl:6", "policy.hcl:9"})
	})
	t.Run("attribute with two values", func(t *testing.T) {
		w := includeSetup(t, "default_attributes = { x = { port = 80 } }\n", "", "default_attributes = { x = { port = 8080 } }\n")
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Conflicting attribute values"},
			[]string{"x.port", "80", "8080", `include_policy "a" (revision`, "from policy.hcl:12"})
	})
	t.Run("map against a scalar", func(t *testing.T) {
		w := includeSetup(t, "default_attributes = { x = { y = { z = 1 } } }\n", "default_attributes = { x = { y = \"flat\" } }\n", "")
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Conflicting attribute values"},
			[]string{"x.y", "a map (keys z)", `"flat"`, `include_policy "a"`, `include_policy "b"`})
	})
	t.Run("parent cookbook shadows an included one", func(t *testing.T) {
		root := t.TempDir()
		w := includeSetupIn(t, root, sharedCookbook(t, root, "a", "1.0.0"), "", sharedCookbook(t, root, "p", "2.0.0"))
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Cookbook shadows an included one"},
			[]string{"policy.hcl:12", "2.0.0", "1.0.0", `include_policy "a" (revision`})
	})
	t.Run("include loop", func(t *testing.T) {
		root := t.TempDir()
		cache := filepath.Join(root, "cache")
		basePolicy(t, filepath.Join(root, "a"), "a", "ca", "1.0.0", "")
		install(t, ws(t, filepath.Join(root, "a"), cache), InstallOptions{})
		basePolicy(t, filepath.Join(root, "b"), "b", "cb", "1.0.0", "include_policy \"a\" {\n  path = \"../a\"\n}\n")
		install(t, ws(t, filepath.Join(root, "b"), cache), InstallOptions{})
		basePolicy(t, filepath.Join(root, "a"), "a", "ca", "1.0.0", "include_policy \"b\" {\n  path = \"../b\"\n}\n")
		assertDiags(t, installErr(t, ws(t, filepath.Join(root, "a"), cache), InstallOptions{}), []string{"Include loop"},
			[]string{"a → b → a", `include_policy "b" (revision`, "policy.hcl:6"})
	})
	t.Run("three conflicts at once", func(t *testing.T) {
		root := t.TempDir()
		a := sharedCookbook(t, root, "a", "1.0.0") + "default_attributes = { x = 1 }\noverride_attributes = { y = [1] }\n"
		b := sharedCookbook(t, root, "b", "1.0.1") + "default_attributes = { x = 2 }\n"
		w := includeSetupIn(t, root, a, b, "override_attributes = { y = [2] }\n")
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Conflicting cookbook locks", "Conflicting attribute values", "Conflicting attribute values"},
			[]string{"1.0.0", "1.0.1"}, []string{"default attribute x", `include_policy "a"`, `include_policy "b"`}, []string{"override attribute y", "[1]", "[2]", "policy.hcl:"})
	})
	t.Run("cookbook name that is not a plain name", func(t *testing.T) {
		root := t.TempDir()
		w := includeSetupIn(t, root, "", "", "")
		// A hostile included lock, consistent with its revision id.
		l := readLock(t, filepath.Join(root, "a"))
		l.CookbookLocks["../../evil"] = l.CookbookLocks["ca"]
		l.RevisionID = l.ComputeRevisionID()
		b, _ := l.Marshal()
		writeFile(t, filepath.Join(root, "a", LockFileName), string(b))
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Invalid included lock"}, []string{`"../../evil"`, "not a plain name"})
	})
	t.Run("cookbook path escaping its lock", func(t *testing.T) {
		root := t.TempDir()
		w := includeSetupIn(t, root, "", "", "")
		lp := filepath.Join(root, "a", LockFileName)
		l := readLock(t, filepath.Join(root, "a"))
		l.CookbookLocks["ca"].SourceOptions.Path = "../b/cookbooks/cb"
		b, _ := l.Marshal()
		writeFile(t, lp, string(b))
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Unusable cookbook source in an included lock"}, []string{`"ca"`, `its path "../b/cookbooks/cb" leaves both the included lock's directory`, "no .git or .toque-repo at or above it"})
	})
}

// includeSetupIn is includeSetup in a given root (so cookbooks can be added
// to the policies first).
func includeSetupIn(t *testing.T, root, aExtra, bExtra, parentExtra string) *Workspace {
	t.Helper()
	cache := filepath.Join(root, "cache")
	basePolicy(t, filepath.Join(root, "a"), "a", "ca", "1.0.0", aExtra)
	install(t, ws(t, filepath.Join(root, "a"), cache), InstallOptions{})
	basePolicy(t, filepath.Join(root, "b"), "b", "cb", "1.0.0", bExtra)
	install(t, ws(t, filepath.Join(root, "b"), cache), InstallOptions{})
	parent := filepath.Join(root, "p")
	basePolicy(t, parent, "p", "cp", "1.0.0", "include_policy \"a\" {\n  path = \"../a\"\n}\ninclude_policy \"b\" {\n  path = \"../b\"\n}\n"+parentExtra)
	return ws(t, parent, cache)
}

func TestPolicyDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"unknown top-level key", "name = \"p\"\nfoo = 1\n", []string{"Unsupported argument"}},
		{"unknown include key", "name = \"p\"\ninclude_policy \"b\" {\n  path = \"x\"\n  bogus = 1\n}\n", []string{"Unsupported argument"}},
		{"two sources", "name = \"p\"\ninclude_policy \"b\" {\n  git = \"file:///x\"\n  server = \"http://x\"\n}\n", []string{"More than one source"}},
		{"no source", "name = \"p\"\ninclude_policy \"b\" {\n  revision_id = \"0123456789\"\n}\n", []string{"Include without a source"}},
		{"server needs revision or group", "name = \"p\"\ninclude_policy \"b\" {\n  server = \"http://x\"\n}\n", []string{"Server include without a revision or group"}},
		{"short revision expectation", "name = \"p\"\ninclude_policy \"b\" {\n  path = \"x\"\n  revision_id = \"abc\"\n}\n", []string{"Invalid revision id"}},
		{"path with server options", "name = \"p\"\ninclude_policy \"b\" {\n  path = \"x\"\n  policy_group = \"prod\"\n}\n", []string{"Argument not valid for this source"}},
		{"bad run list item", "name = \"p\"\nrun_list = [\"role[web]\", \"ok::default\"]\n", []string{"Invalid run-list item"}},
		{"cookbook without source", "name = \"p\"\ncookbook \"x\" {}\n", []string{"Cookbook without a source"}},
		{"sensitive policy attribute", "name = \"p\"\ndefault_attributes = { db = { pw = sensitive(\"x\") } }\n", []string{"Sensitive policy attribute"}},
		{"every error at once", "name = \"p\"\nrun_list = [\"role[x]\"]\ncookbook \"x\" {}\ninclude_policy \"b\" {}\n", []string{"Invalid run-list item", "Cookbook without a source", "Include without a source"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := ParsePolicy("/p", "/p/policy.hcl", []byte(tc.src), nil)
			diags = errorsOf(diags)
			if len(diags) != len(tc.want) {
				t.Fatalf("want %q, got:\n%s", tc.want, diagText(diags))
			}
			for i, d := range diags {
				if d.Summary != tc.want[i] {
					t.Errorf("error %d: %q, want %q", i, d.Summary, tc.want[i])
				}
				if d.Subject == nil {
					t.Errorf("error %d (%s) has no range", i, d.Summary)
				}
			}
		})
	}
}

func TestUpdateUnknownName(t *testing.T) {
	dir := t.TempDir()
	basePolicy(t, dir, "p", "c", "1.0.0", "")
	assertDiags(t, installErr(t, ws(t, dir, filepath.Join(dir, ".cache")), InstallOptions{Update: true, Names: []string{"nope"}}), []string{"Nothing to update"})
}

func TestBadLocks(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"not json", "{", "not a policy lock"},
		{"no name", `{"revision_id": "x"}`, "no name"},
		{"null cookbook", `{"name": "p", "cookbook_locks": {"a": null}}`, "null"},
		{"null include", `{"name": "p", "included_policy_locks": [null]}`, "null"},
		{"scalar attributes", `{"name": "p", "default_attributes": 5}`, "not a policy lock"},
		{"null origin is dropped", `{"name": "p", "attribute_origins": [null]}`, ""},
		{"cookbook name that is a path", `{"name": "p", "cookbook_locks": {"../../evil": {"version": "1.0.0"}}}`, `"../../evil", which is not a plain name`},
		{"cookbook name with a slash", `{"name": "p", "cookbook_locks": {"a/b": {"version": "1.0.0"}}}`, "not a plain name"},
		{"policy name that is a path", `{"name": "../p"}`, "not a plain name"},
		{"include name that is a path", `{"name": "p", "included_policy_locks": [{"name": "../x"}]}`, "not a plain name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ParseLock([]byte(tc.src))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.Marshal(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("plan refuses a lock whose run list names no locked cookbook", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "policy.hcl"), "name = \"p\"\n")
		writeFile(t, filepath.Join(dir, LockFileName), `{"name": "p", "run_list": ["recipe[x::default]"]}`)
		_, _, diags := ws(t, dir, filepath.Join(dir, ".cache")).LoadLock(context.Background())
		assertDiags(t, diags, []string{"Run-list cookbook not locked"})
	})
}
