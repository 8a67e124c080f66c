package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/guard"
)

// TestLazyBadInput: every misuse of lazy is an error pointing at it, with
// its file, line and column.
func TestLazyBadInput(t *testing.T) {
	cases := []struct {
		name, recipe string
		want         string // summary
		at           string // "a.hcl:LINE:COL"
	}{
		{"no argument", `file "/a" {
  content = lazy()
}`, "Wrong number of arguments to lazy", "a.hcl:2:13"},
		{"two arguments", `file "/a" {
  content = lazy("a", "b")
}`, "Wrong number of arguments to lazy", "a.hcl:2:13"},
		{"nested", `file "/a" {
  content = lazy(upper(lazy("x")))
}`, "lazy inside lazy", "a.hcl:2:24"},
		{"inside a value", `file "/a" {
  content = "key=${lazy(file("/k"))}"
}`, "lazy must be the whole value", "a.hcl:2:20"},
		{"name property", `file "/a" {
  path = lazy("/b")
}`, "lazy is not allowed on a property that names the resource", "a.hcl:2:10"},
		{"action", `file "/a" {
  action = lazy("create")
}`, "lazy is not allowed on action", "a.hcl:2:12"},
		{"guard_interpreter", `file "/a" {
  only_if           = "true"
  guard_interpreter = lazy("default")
}`, "lazy is not allowed on guard_interpreter", "a.hcl:3:23"},
		{"sensitive", `file "/a" {
  sensitive = lazy(true)
}`, "lazy is not allowed on sensitive", "a.hcl:2:15"},
		{"ignore_failure", `file "/a" {
  ignore_failure = lazy(true)
}`, "lazy is not allowed on ignore_failure", "a.hcl:2:20"},
		{"notifies", `file "/a" {
  content = "x"
  notifies "create" {
    resource = lazy("file[/b]")
  }
}
file "/b" {
  action = "nothing"
}`, "lazy is not allowed on notifies", "a.hcl:4:16"},
		{"inside a guard list", `file "/a" {
  only_if = ["true", lazy("test -f /k")]
}`, "lazy must be the whole value", "a.hcl:2:22"},
		{"guard with no argument", `file "/a" {
  only_if = lazy()
}`, "Wrong number of arguments to lazy", "a.hcl:2:13"},
		{"attribute block", `default "app" {
  key = lazy(file("/k"))
}
file "/a" {
  content = node.app.key
}`, "lazy is not allowed on a node attribute", "a.hcl:2:9"},
		{"run-time key on a guard object", `file "/a" {
  only_if = { command = "true", at_apply = true }
}`, "Unknown guard parameter", "a.hcl:2:33"},
		{"a type that derives its file", `cron_d "job" {
  command = lazy("true")
}`, "lazy is not allowed on cron_d", "a.hcl:2:13"},
		{"guard inheriting a lazy cwd", `execute "run" {
  cwd     = lazy("/srv")
  only_if = "true"
}`, "Guard inherits a value known only at apply", "a.hcl:3:13"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"a.hcl": c.recipe})
			reg := builtin.Registry()
			cfg, diags := config.LoadDir(dir, reg)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			scope, _, d := NewScope(cfg, testHost())
			diags = append(diags, d...)
			if !diags.HasErrors() {
				_, d = Resources(cfg, reg, scope)
				diags = append(diags, d...)
			}
			var first *hcl.Diagnostic
			for _, d := range diags {
				if d.Severity == hcl.DiagError {
					first = d
					break
				}
			}
			if first == nil {
				t.Fatalf("no error")
			}
			if first.Summary != c.want {
				t.Errorf("summary %q, want %q (%s)", first.Summary, c.want, first.Detail)
			}
			if first.Subject == nil {
				t.Fatalf("no range: %s", first.Detail)
			}
			got := fmt.Sprintf("%s:%d:%d", filepath.Base(first.Subject.Filename), first.Subject.Start.Line, first.Subject.Start.Column)
			if got != c.at {
				t.Errorf("at %s, want %s", got, c.at)
			}
		})
	}
}

// TestLazyCapture: a lazy value is not evaluated with the others; the
// instance keeps its text and what it reads that is fixed now.
func TestLazyCapture(t *testing.T) {
	t.Setenv("TOQUE_TEST_LAZY", "from-env")
	dir := writeDir(t, map[string]string{
		"a.hcl": `default "app" {
  root = "/srv/app"
  port = 8080
  other = "not read"
}
file "/srv/app/app.conf" {
  content = lazy(templatefile("app.tpl", { key = file("${node.app.root}/key"), port = node.app.port, env = env("TOQUE_TEST_LAZY") }))
  mode    = "0600"
}
`,
		"app.tpl": "port=${port} key=${key}\n",
	})
	_, insts, diags := plan(t, dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	inst := insts[0]
	if v := inst.Resource.Values["content"]; v.IsKnown() {
		t.Fatalf("content was evaluated: %#v", v)
	}
	e := inst.Lazy["content"]
	if e == nil {
		t.Fatal("no lazy content")
	}
	if !strings.HasPrefix(e.Source, `templatefile("app.tpl"`) || e.Range.Start.Line != 7 || e.Range.Start.Column != 18 {
		t.Errorf("source %q at %v", e.Source, e.Range)
	}
	node := e.Scope.Node.Value
	if !node.Type().IsObjectType() || node.GetAttr("app").Type().HasAttribute("other") || !node.GetAttr("app").GetAttr("port").RawEquals(cty.NumberIntVal(8080)) {
		t.Errorf("node captured %#v", node)
	}
	if e.Scope.Host != nil {
		t.Errorf("host captured though not read: %#v", e.Scope.Host)
	}
	if v := e.Scope.Env["TOQUE_TEST_LAZY"]; v == nil || *v != "from-env" {
		t.Errorf("env %v", e.Scope.Env)
	}
	tpl := e.Scope.Files[filepath.Join(dir, "app.tpl")]
	if tpl == nil || string(tpl.Content) != "port=${port} key=${key}\n" {
		t.Errorf("files %v", e.Scope.Files)
	}
	if got := e.Reads(); !got.Complete || len(got.Paths) != 1 || got.Paths[0] != "/srv/app/key" {
		t.Errorf("reads %+v", got)
	}
	if !inst.Resource.Values["mode"].IsKnown() {
		t.Errorf("mode should be evaluated now")
	}

	// Apply evaluates it from what was captured: the template from the
	// capture (even once the recipe is gone), the key from the host, the
	// environment as it was.
	keyDir := t.TempDir()
	e.Scope.Node.Value = cty.ObjectVal(map[string]cty.Value{"app": cty.ObjectVal(map[string]cty.Value{"root": cty.StringVal(keyDir), "port": cty.NumberIntVal(8080)})})
	if err := os.WriteFile(filepath.Join(keyDir, "key"), []byte("k3y"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dir)
	t.Setenv("TOQUE_TEST_LAZY", "changed")
	got, err := Resolver{}.Resolve(context.Background(), inst.Resource, inst.Lazy)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Values["content"]; !c.RawEquals(cty.StringVal("port=8080 key=k3y\n")) {
		t.Errorf("content %#v", c)
	}
}

// TestLazyEvaluationErrorPointsAtExpression: a value known at apply that
// fails names its property and its expression's file:line:col.
func TestLazyEvaluationErrorPointsAtExpression(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": `file "/a" {
  content = lazy(file("/nonexistent/toque/key"))
}
`})
	_, insts, diags := plan(t, dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, err := Resolver{}.Resolve(context.Background(), insts[0].Resource, insts[0].Lazy)
	var le *LazyError
	if !errors.As(err, &le) || le.Property != "content" {
		t.Fatalf("got %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "a.hcl:2:18: content = lazy(…) could not be evaluated") || !strings.Contains(msg, "no file /nonexistent/toque/key") {
		t.Errorf("message %q", msg)
	}
}

// TestLazyRecipeFileNotCarried: a relative path known only at apply is a
// recipe file the plan could not carry; apply never reads the recipe
// directory.
func TestLazyRecipeFileNotCarried(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": `file "/a" {
  content = lazy(file(trimspace(file("/nonexistent/name"))))
}
`, "x": "x"})
	_, insts, diags := plan(t, dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	e := insts[0].Lazy["content"]
	if r := e.Reads(); r.Complete {
		t.Errorf("a path computed at apply should make the reads incomplete: %+v", r)
	}
	e.Source = `file("x")` // as if the name were known only at apply
	_, err := Resolver{}.Resolve(context.Background(), insts[0].Resource, insts[0].Lazy)
	if err == nil || !strings.Contains(err.Error(), "recipe file the plan did not carry") {
		t.Errorf("got %v", err)
	}
}

// TestLazyTemplateVariables: a template whose variables are lazy renders
// its content at apply, from the template text read now.
func TestLazyTemplateVariables(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.hcl": `template "/srv/t" {
  source    = "t.tpl"
  variables = lazy({ key = "k-${host.hostname}" })
}
template "/srv/inline" {
  content_template = lazy("inline ${upper(host.os)}")
}
`,
		"t.tpl": "key=${key} on ${host.hostname}\n",
	})
	reg := builtin.Registry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	scope, _, _ := NewScope(cfg, testHost())
	insts, diags := Resources(cfg, reg, scope)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for i, want := range []string{"key=k-web-01 on web-01\n", "inline LINUX"} {
		inst := insts[i]
		if inst.Lazy["content"] == nil {
			t.Fatalf("%s: content is not known at apply: %v", inst.Resource.Address(), inst.Lazy)
		}
		got, err := Resolver{}.Resolve(context.Background(), inst.Resource, inst.Lazy)
		if err != nil {
			t.Fatal(err)
		}
		if c := got.Values["content"]; !c.RawEquals(cty.StringVal(want)) {
			t.Errorf("%s: content %#v, want %q", inst.Resource.Address(), c, want)
		}
	}
	if e := insts[0].Lazy["content"]; e.Template != "file" || e.Variables != "variables" || !strings.Contains(e.Source, "key=${key}") {
		t.Errorf("template content %+v", e)
	}
}

// TestRunTimeGuards: only_if = lazy(…) marks the guards decided at apply;
// a command is exact now, an expression is captured.
func TestRunTimeGuards(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": `execute "a" {
  command = "true"
  only_if = lazy("test -f /srv/key")
  not_if  = lazy(fileexists("/srv/flag"))
}
file "/b" {
  content = "x"
  only_if = lazy(file("/nonexistent/toque") == "yes")
}
`})
	reg := builtin.Registry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	scope, _, _ := NewScope(cfg, testHost())
	insts, diags := Resources(cfg, reg, scope)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	g := insts[0].Guards
	if len(g) != 2 || !g[0].AtApply || g[0].Form != guard.Script || g[0].Source != "test -f /srv/key" || g[0].Lazy != nil {
		t.Errorf("script guard %+v", g[0])
	}
	if !g[1].AtApply || g[1].Form != guard.Expression || g[1].Lazy == nil || g[1].ExprValue != nil || g[1].Lazy.Source != `fileexists("/srv/flag")` {
		t.Errorf("expression guard %+v", g[1])
	}
	// One that cannot be evaluated now is not an error: it is decided at
	// apply.
	b := insts[1].Guards
	if len(b) != 1 || !b[0].AtApply || b[0].Form != guard.Expression {
		t.Fatalf("guard %+v", b)
	}
	if _, err := (Resolver{}).Guard(context.Background(), b[0].Lazy); err == nil || !strings.Contains(err.Error(), "no file /nonexistent/toque") {
		t.Errorf("got %v", err)
	}
}

// TestLazyJSONSyntax: lazy reads alike in HCL's JSON syntax, where a
// string is a template: "${lazy(…)}" is the whole value.
func TestLazyJSONSyntax(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl.json": `{
  "default": {"app": {"root": "/srv/app"}},
  "file": {
    "/a": {
      "content": "${lazy(file(\"${node.app.root}/key\"))}",
      "only_if": "${lazy(\"test -f /srv/app/key\")}"
    }
  }
}`})
	_, insts, diags := plan(t, dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	e := insts[0].Lazy["content"]
	if e == nil || e.Source != `file("${node.app.root}/key")` || e.Scope.Node == nil || e.Range.Start.Line != 5 {
		t.Fatalf("lazy content %+v", e)
	}
	if r := e.Reads(); len(r.Paths) != 1 || r.Paths[0] != "/srv/app/key" {
		t.Errorf("reads %+v", r)
	}
	if g := insts[0].Guards; len(g) != 1 || !g[0].AtApply || g[0].Source != "test -f /srv/app/key" {
		t.Errorf("guards %+v", g)
	}

	dir = writeDir(t, map[string]string{"a.hcl.json": `{"file": {"/a": {"content": "key=${lazy(\"x\")}"}}}`})
	_, _, diags = plan(t, dir)
	if got := summaries(diags); len(got) != 1 || got[0] != "lazy must be the whole value" {
		t.Errorf("errors %q", got)
	}
}

// TestLazyErrorRedacted: the error of a sensitive value names the property
// and its place, and nothing the evaluation said about its values.
func TestLazyErrorRedacted(t *testing.T) {
	le := &LazyError{Property: "content", Range: hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: 2, Column: 3}},
		Diags: hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid index", Detail: "The key \"hunter2\" does not exist."}}}
	got := le.Redacted().Error()
	if strings.Contains(got, "hunter2") || !strings.HasPrefix(got, "a.hcl:2:3: content = lazy(…) could not be evaluated: Invalid index") {
		t.Errorf("redacted: %q", got)
	}
	if !strings.Contains(le.Error(), "hunter2") {
		t.Errorf("not redacted: %q", le.Error())
	}
}
