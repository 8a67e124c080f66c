package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bootstrapEnv runs toque on examples/bootstrap with BOOTSTRAP_ROOT in a
// scratch directory.
func bootstrapEnv(t *testing.T) (*env, []string, string) {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("examples", "bootstrap"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	// A fresh host: the root does not exist yet.
	if err := os.Remove(e.root); err != nil {
		t.Fatal(err)
	}
	return e, []string{"BOOTSTRAP_ROOT=" + e.root}, abs
}

// TestE2EBootstrapExample: a fresh host converges in one plan and one
// apply although the key, the configuration made from it and the guard of
// the service exist only once earlier resources ran; the second plan says
// No changes.
func TestE2EBootstrapExample(t *testing.T) {
	e, vars, example := bootstrapEnv(t)
	out := filepath.Join(e.dir, "plan.out")
	r := e.mustToque(2, vars, "-chdir="+example, "plan", "-detailed-exitcode", "-out="+out)
	contains(t, "first plan", r.stdout,
		"# file[config] will be created",
		"#   content is known at apply (bootstrap.hcl:",
		"#     waits for execute[generate-api-key] (creates "+e.root+"/keys/api.key)",
		"+ content = (known at apply; sensitive)",
		"# execute[start-app] will run, unless a guard decided at apply skips it",
		"? decided at apply: only_if `test -s keys/api.key` (cannot run now: working directory",
		"Plan: 5 to create, 0 to update, 0 to delete, 2 to run, 0 skipped, 0 unchanged; 1 decided at apply, 1 with values known at apply.",
		"decided at apply: execute[start-app]",
		"known at apply:   file[config]")
	if _, err := os.Stat(e.root); !os.IsNotExist(err) {
		t.Fatalf("planning changed the host: %v", err)
	}

	r = e.mustToque(0, nil, "apply", out)
	contains(t, "apply", r.stdout, "decided at apply: evaluated content", "decided at apply: only_if `test -s keys/api.key` passed")
	key := strings.TrimSpace(e.read("keys/api.key"))
	if len(key) != 32 {
		t.Fatalf("key %q", key)
	}
	if got := e.read("etc/app.conf"); !strings.Contains(got, "api_key = "+key+"\n") || !strings.Contains(got, "listen  = 8443\n") {
		t.Errorf("app.conf:\n%s", got)
	}
	if strings.Contains(r.stdout+r.stderr, key) {
		t.Errorf("the key was printed:\n%s", r)
	}
	if got := e.read("run/app.pid"); got != "listening on 8443\n" {
		t.Errorf("app.pid %q", got)
	}

	r = e.mustToque(0, vars, "-chdir="+example, "plan", "-detailed-exitcode")
	contains(t, "second plan", r.stdout, "No changes.", "7 unchanged")
}

// TestE2EWithoutMarkersRefuses: the same recipe without lazy(…) fails the
// plan on the key that does not exist yet; and a plan-time guard that is
// false at plan keeps its resource from running at apply, even once an
// earlier resource of the run made it true: apply does only what the plan
// showed.
func TestE2EWithoutMarkersRefuses(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
execute "keygen" {
  command = "printf k3y > ROOT/api.key"
  creates = "ROOT/api.key"
}
file "ROOT/app.conf" {
  content = file("ROOT/api.key")
}
`)
	r := e.must(1, "plan", "-out=plan.out")
	contains(t, "plan without lazy", r.stderr, "a.hcl:7:", "Invalid value for \"path\" parameter: no file")
	if _, err := os.Stat(filepath.Join(e.root, "api.key")); !os.IsNotExist(err) {
		t.Fatal("the host was changed")
	}

	e.recipe("a.hcl", `
execute "keygen" {
  command = "printf k3y > ROOT/api.key"
  creates = "ROOT/api.key"
}
execute "start" {
  command = "touch ROOT/started"
  only_if = "test -f ROOT/api.key"
}
`)
	r = e.must(0, "plan", "-out=plan.out")
	contains(t, "plan-time guard", r.stdout, "execute[start] skipped: only_if `test -f "+e.root+"/api.key` failed")
	r = e.must(0, "apply", "plan.out")
	if _, err := os.Stat(filepath.Join(e.root, "started")); !os.IsNotExist(err) {
		t.Errorf("apply ran what the plan showed as skipped:\n%s", r)
	}
	r = e.must(0, "plan")
	contains(t, "next plan", r.stdout, "execute[start] will run: only_if `test -f "+e.root+"/api.key` passed")
}

// TestE2ELazyShown: a value known at apply is shown with its expression in
// every rendering, evaluated at apply from the host, and a failure points
// at its expression.
func TestE2ELazyShown(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
execute "keygen" {
  command = "printf k3y > ROOT/api.key"
  creates = "ROOT/api.key"
}
file "ROOT/app.conf" {
  content = lazy(file("ROOT/api.key"))
}
`)
	r := e.must(0, "plan", "-out=plan.out")
	contains(t, "text", r.stdout, `+ content = (known at apply: file("`+e.root+`/api.key"))`)
	r = e.must(0, "show", "-json", "plan.out")
	var v struct {
		Summary   map[string]int `json:"summary"`
		Resources []struct {
			Address      string `json:"address"`
			KnownAtApply []struct {
				Property, Expression string
				Source               struct{ Line, Column int }
				After                []string
			} `json:"known_at_apply"`
			Changes []struct {
				Property     string `json:"property"`
				KnownAtApply bool   `json:"known_at_apply"`
			} `json:"changes"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	conf := v.Resources[1]
	if len(conf.KnownAtApply) != 1 || conf.KnownAtApply[0].Expression != `file("`+e.root+`/api.key")` || conf.KnownAtApply[0].Source.Line != 7 ||
		len(conf.KnownAtApply[0].After) != 1 || !conf.Changes[0].KnownAtApply || v.Summary["known_at_apply"] != 1 {
		t.Errorf("show -json: %+v %+v", conf, v.Summary)
	}
	r = e.must(0, "show", "-markdown", "plan.out")
	contains(t, "markdown", r.stdout, "**Known at apply**", "`content` = `(known at apply: file(\""+e.root+"/api.key\"))`", "waits for `execute[keygen] (creates "+e.root+"/api.key)`")

	r = e.must(0, "apply", "plan.out")
	if got := e.read("app.conf"); got != "k3y" {
		t.Errorf("app.conf %q\n%s", got, r)
	}

	// The key generator does not make the key: apply fails the file,
	// pointing at its expression, after the generator ran.
	e.recipe("a.hcl", `
execute "keygen" {
  command = "true"
}
file "ROOT/other.conf" {
  content = lazy(file("ROOT/missing.key"))
}
`)
	e.must(0, "plan", "-out=plan2.out")
	r = e.must(1, "apply", "plan2.out")
	contains(t, "failed apply", r.stdout+r.stderr, "a.hcl:6:18: content = lazy(…) could not be evaluated", "no file "+e.root+"/missing.key")
	if _, err := os.Stat(filepath.Join(e.root, "other.conf")); !os.IsNotExist(err) {
		t.Error("the file was written")
	}
}

// TestE2ELazyBadInput: misuse of lazy is an error with its file:line:col,
// the host untouched.
func TestE2ELazyBadInput(t *testing.T) {
	cases := []struct{ name, recipe, at, summary string }{
		{"no argument", "file \"ROOT/a\" {\n  content = lazy()\n}\n", "a.hcl:2:13", "Wrong number of arguments to lazy"},
		{"two arguments", "file \"ROOT/a\" {\n  content = lazy(\"a\", \"b\")\n}\n", "a.hcl:2:13", "Wrong number of arguments to lazy"},
		{"nested", "file \"ROOT/a\" {\n  content = lazy(lazy(\"a\"))\n}\n", "a.hcl:2:18", "lazy inside lazy"},
		{"identity", "file \"a\" {\n  path = lazy(\"ROOT/a\")\n}\n", "a.hcl:2:10", "lazy is not allowed on a property that names the resource"},
		{"action", "file \"ROOT/a\" {\n  action = lazy(\"create\")\n}\n", "a.hcl:2:12", "lazy is not allowed on action"},
		{"guard_interpreter", "execute \"x\" {\n  only_if = \"true\"\n  guard_interpreter = lazy(\"bash\")\n}\n", "a.hcl:3:23", "lazy is not allowed on guard_interpreter"},
		{"notifies", "file \"ROOT/a\" {\n  notifies \"run\" {\n    resource = lazy(\"execute[x]\")\n  }\n}\nexecute \"x\" {\n  action = \"nothing\"\n}\n", "a.hcl:3:16", "lazy is not allowed on notifies"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.recipe("a.hcl", c.recipe)
			r := e.must(1, "plan", "-out=plan.out")
			contains(t, c.name, r.stderr, c.at, c.summary)
			e.must(1, "apply", "plan.out") // errored: refused
			r = e.must(1, "validate")
			contains(t, c.name+" (validate)", r.stderr, c.at, c.summary)
			if entries, _ := os.ReadDir(e.root); len(entries) != 0 {
				t.Errorf("the host was changed: %v", entries)
			}
		})
	}
}

// TestE2EEveryGuardDecidedAtApply: a plan whose guarded resources are all
// decided at apply still shows each one, and counts them.
func TestE2EEveryGuardDecidedAtApply(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
execute "setup" {
  command = "touch ROOT/flag"
}
execute "a" {
  command = "touch ROOT/a"
  only_if = lazy("test -f ROOT/flag")
}
execute "b" {
  command = "touch ROOT/b"
  not_if  = lazy("test -f ROOT/flag")
}
file "ROOT/c" {
  content = "c\n"
  only_if = lazy(fileexists("ROOT/flag"))
}
`)
	r := e.must(0, "plan", "-out=plan.out")
	contains(t, "plan", r.stdout,
		"# execute[a] will run, unless a guard decided at apply skips it",
		"? decided at apply: only_if `test -f "+e.root+"/flag` (fails now",
		"# execute[b] will run, unless a guard decided at apply skips it",
		"? decided at apply: not_if `test -f "+e.root+"/flag` (false now",
		"# file["+e.root+"/c] will be created, unless a guard decided at apply skips it",
		`? decided at apply: only_if fileexists("`+e.root+`/flag") (false now)`,
		"; 3 decided at apply.")
	r = e.must(0, "apply", "plan.out")
	for name, want := range map[string]bool{"a": true, "b": false, "c": true} {
		_, err := os.Stat(filepath.Join(e.root, name))
		if (err == nil) != want {
			t.Errorf("%s exists: %v, want %v\n%s", name, err == nil, want, r)
		}
	}
	contains(t, "apply", r.stdout, "execute[b]: skipped: a guard decided at apply: not_if `test -f "+e.root+"/flag` is true")
}

// TestE2ENotifiedRunDecidedAtApply: a notified target whose guard and
// values wait for apply runs only as its guard decides then, with its
// values evaluated then.
func TestE2ENotifiedRunDecidedAtApply(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
file "ROOT/app.conf" {
  content = "v1\n"
  notifies "run" {
    resource = "execute[reload]"
  }
}
execute "reload" {
  command     = "printf %s \"$CONF\" > ROOT/reloaded"
  environment = lazy({ CONF = file("ROOT/app.conf") })
  only_if     = lazy("test -f ROOT/app.conf")
  action      = "nothing"
  # The guard must not inherit the environment, known only at apply.
  guard_interpreter = "default"
}
`)
	r := e.must(0, "plan", "-out=plan.out")
	contains(t, "plan", r.stdout,
		"# execute[reload] will run, unless a guard decided at apply skips it: notified by file["+e.root+"/app.conf] (delayed)",
		"? decided at apply: only_if `test -f "+e.root+"/app.conf` (fails now",
		"environment = (known at apply: { CONF = file(\""+e.root+"/app.conf\") })",
		"; 1 decided at apply, 1 with values known at apply.")
	r = e.must(0, "apply", "plan.out")
	if got := e.read("reloaded"); got != "v1\n" {
		t.Errorf("reloaded %q\n%s", got, r)
	}
}

// TestE2ELazyOnTypeWrittenInHCL: lazy(…) and run-time guards work for a
// resource type written in HCL as for a built-in one: its scripts get the
// value evaluated at apply.
func TestE2ELazyOnTypeWrittenInHCL(t *testing.T) {
	e := newEnv(t)
	b, err := os.ReadFile(filepath.Join("examples", "custom-types", "types.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	start := strings.Index(src, `resource_type "kv_setting"`)
	end := strings.Index(src[start:], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatal("no kv_setting type in examples/custom-types/types.hcl")
	}
	e.recipe("types.hcl", src[start:start+end+3])
	e.recipe("main.hcl", `
execute "keygen" {
  command = "printf s3cret > ROOT/key"
  creates = "ROOT/key"
}
kv_setting "api_key" {
  path    = "ROOT/app.ini"
  value   = lazy(file("ROOT/key"))
  only_if = lazy("test -f ROOT/key")
}
`)
	r := e.must(0, "plan", "-out=plan.out")
	contains(t, "plan", r.stdout,
		"+ value = (known at apply: file(\""+e.root+"/key\"))",
		"? decided at apply: only_if `test -f "+e.root+"/key` (fails now")
	e.must(0, "apply", "plan.out")
	if got := e.read("app.ini"); !strings.Contains(got, "api_key = s3cret") {
		t.Errorf("app.ini %q", got)
	}
	r = e.must(0, "plan", "-detailed-exitcode")
	contains(t, "second plan", r.stdout, "No changes.")
}
