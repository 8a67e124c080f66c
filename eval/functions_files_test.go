package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/resources/builtin"
)

// evalIn evaluates src (one expression, in a file x.hcl of dir) with the
// function library of dir.
func evalIn(t *testing.T, dir, src string) (cty.Value, hcl.Diagnostics) {
	t.Helper()
	expr, diags := hclsyntax.ParseExpression([]byte(src), filepath.Join(dir, "x.hcl"), hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return expr.Value(&hcl.EvalContext{Functions: Functions(dir)})
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func strSet(s ...string) cty.Value {
	if len(s) == 0 {
		return cty.SetValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(s))
	for i, x := range s {
		vals[i] = cty.StringVal(x)
	}
	return cty.SetVal(vals)
}

// fnCase is one call: its value, or the summary of its error and the
// column the error points at (an argument of the call).
type fnCase struct {
	expr string
	want cty.Value
	err  string // summary
	col  int
}

func runFnCases(t *testing.T, dir string, cases []fnCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			got, diags := evalIn(t, dir, c.expr)
			if c.err != "" {
				if len(diags) != 1 || diags[0].Summary != c.err {
					t.Fatalf("diags %v, want one %q", diags, c.err)
				}
				if s := diags[0].Subject; s == nil || s.Start.Line != 1 || (c.col != 0 && s.Start.Column != c.col) {
					t.Errorf("error at %v, want 1:%d (%s)", s, c.col, diags[0].Detail)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if !got.RawEquals(c.want) {
				t.Errorf("= %#v, want %#v", got, c.want)
			}
		})
	}
}

// TestFileFunctionsPaths: the file functions read files of the recipes by
// relative paths and of the host by absolute ones; a relative path that
// leads out of the recipes' root, as written or through a link, is an
// error at the path argument.
func TestFileFunctionsPaths(t *testing.T) {
	outside := writeDir(t, map[string]string{"secret": "s3cret", "d/x": ""})
	dir := writeDir(t, map[string]string{
		"files/a.conf":      "a",
		"files/b.conf":      "b",
		"files/sub/c.conf":  "c",
		"files/sub/d.txt":   "d",
		"files/.hidden":     "h",
		"files/.git/config": "g",
	})
	symlink(t, "a.conf", filepath.Join(dir, "files/link.conf"))
	symlink(t, filepath.Join(outside, "secret"), filepath.Join(dir, "bad/out.conf"))
	symlink(t, outside, filepath.Join(dir, "outdir"))
	symlink(t, "sub", filepath.Join(dir, "files/subdir"))
	abs := filepath.Join(outside, "secret")

	runFnCases(t, dir, []fnCase{
		{expr: `fileexists("files/a.conf")`, want: cty.True},
		{expr: `fileexists("files")`, want: cty.False},
		{expr: `fileexists("files/none")`, want: cty.False},
		{expr: `fileexists("files/link.conf")`, want: cty.True},
		{expr: `direxists("files")`, want: cty.True},
		{expr: `direxists("files/a.conf")`, want: cty.False},
		{expr: `direxists("files/none")`, want: cty.False},
		{expr: `direxists("files/subdir")`, want: cty.True},
		{expr: fmt.Sprintf(`direxists(%q)`, outside), want: cty.True},
		{expr: fmt.Sprintf(`file(%q)`, abs), want: cty.StringVal("s3cret")},
		{expr: `fileset("files", "*.conf")`, want: strSet("a.conf", "b.conf", "link.conf")},
		{expr: `fileset("files", "**/*.conf")`, want: strSet("a.conf", "b.conf", "link.conf", "sub/c.conf")},
		{expr: `fileset("files", "sub/*")`, want: strSet("sub/c.conf", "sub/d.txt")},
		{expr: `fileset("files", "{a,b}.conf")`, want: strSet("a.conf", "b.conf")},
		{expr: `fileset("files", "*.none")`, want: strSet()},
		{expr: `fileset(".", "files/[ab].conf")`, want: strSet("files/a.conf", "files/b.conf")},
		{expr: `length(fileset("files", "**"))`, want: cty.NumberIntVal(5)},
		{expr: `fileset("bad", "*.txt")`, want: strSet()},

		// out of the recipe directory
		{expr: `file("../secret")`, err: "Invalid function argument", col: 7},
		{expr: `fileexists("files/../../x")`, err: "Invalid function argument", col: 13},
		{expr: `direxists("..")`, err: "Invalid function argument", col: 12},
		{expr: `file("bad/out.conf")`, err: "Invalid function argument", col: 7},
		{expr: `file("outdir/secret")`, err: "Invalid function argument", col: 7},
		{expr: `fileset("outdir", "*")`, err: "Invalid function argument", col: 10},
		{expr: `fileset("bad", "*.conf")`, err: "Invalid function argument", col: 10},
		{expr: `templatefile("../secret", {})`, err: "Invalid function argument", col: 15},
		// bad input
		{expr: `fileset("files/none", "*")`, err: "Invalid function argument", col: 10},
		{expr: `fileset("files/a.conf", "*")`, err: "Invalid function argument", col: 10},
		{expr: `fileset("files", "[a")`, err: "Invalid function argument", col: 19},
		{expr: `fileset("files")`, err: "Not enough function arguments"},
		{expr: `direxists(["x"])`, err: "Invalid function argument", col: 11},
		{expr: `fileset("files", {})`, err: "Invalid function argument", col: 18},
	})
}

// TestFileSetLimits: a listing larger than its caps is an error, not a
// huge value.
func TestFileSetLimits(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("d/%02d/f", i)] = ""
	}
	dir := writeDir(t, files)
	m, e := MaxFileSetMatches, MaxFileSetEntries
	t.Cleanup(func() { MaxFileSetMatches, MaxFileSetEntries = m, e })
	MaxFileSetMatches = 10
	runFnCases(t, dir, []fnCase{
		{expr: `fileset("d", "0*/f")`, want: strSet("00/f", "01/f", "02/f", "03/f", "04/f", "05/f", "06/f", "07/f", "08/f", "09/f")},
		{expr: `fileset("d", "**")`, err: "Invalid function argument", col: 10},
	})
	MaxFileSetMatches, MaxFileSetEntries = 100, 20
	runFnCases(t, dir, []fnCase{
		{expr: `fileset("d", "**")`, err: "Invalid function argument", col: 10},
	})
}

// TestCookbookPaths: in a cookbook, relative paths may lead anywhere in
// the cookbook — from a template to files/ too — and nowhere out of it;
// templates are named from templates/, with or without the "templates/"
// cookbooks wrote before.
func TestCookbookPaths(t *testing.T) {
	top := writeDir(t, map[string]string{
		"web/metadata.hcl":        "name = \"web\"\nversion = \"1.0.0\"\n",
		"web/templates/site.tpl":  "port=${port}",
		"web/templates/sub/a.tpl": `${file("../../files/key")}`,
		"web/files/key":           "k",
		"other/x":                 "x",
	})
	cb := filepath.Join(top, "web")
	runFnCases(t, cb, []fnCase{
		{expr: `templatefile("site.tpl", { port = 80 })`, want: cty.StringVal("port=80")},
		{expr: `templatefile("templates/site.tpl", { port = 80 })`, want: cty.StringVal("port=80")},
		{expr: `templatefile("sub/a.tpl", {})`, want: cty.StringVal("k")},
		{expr: `file("files/key")`, want: cty.StringVal("k")},
		{expr: `fileexists("templates/site.tpl")`, want: cty.True},
		{expr: `file("../other/x")`, err: "Invalid function argument", col: 7},
		{expr: `templatefile("../../other/x", {})`, err: "Invalid function argument", col: 15},
	})
	// From the cookbook's recipes/ (a recipe directory planned on its
	// own), the root is still the cookbook.
	runFnCases(t, filepath.Join(cb, "recipes"), []fnCase{
		{expr: `file("../files/key")`, want: cty.StringVal("k")},
		{expr: `templatefile("site.tpl", { port = 1 })`, want: cty.StringVal("port=1")},
		{expr: `file("../../other/x")`, err: "Invalid function argument", col: 7},
	})
}

// TestLazyCarriesListingsAndDirectories: inside lazy(…), what direxists,
// fileexists and fileset read of the recipes at plan is carried, and
// apply reads it from the plan, not from the recipe directory; a path
// refused at plan is refused at apply with the same words.
func TestLazyCarriesListingsAndDirectories(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.hcl": `file "/a" {
  content = lazy(jsonencode([direxists("conf.d"), fileexists("conf.d"), sort(fileset("conf.d", "*.conf")), templatefile("t.tpl", {})]))
}
file "/b" {
  content = lazy(file("../x"))
}
`,
		"conf.d/a.conf": "a",
		"conf.d/b.conf": "b",
		"t.tpl":         `${join(",", fileset("conf.d", "*"))}`,
	})
	_, insts, diags := plan(t, dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	e := insts[0].Lazy["content"]
	if e == nil {
		t.Fatal("content is not lazy")
	}
	if f := e.Scope.Files[filepath.Join(dir, "conf.d")]; f == nil || f.Kind != lazy.KindDir {
		t.Errorf("files %v", e.Scope.Files)
	}
	if len(e.Scope.Sets) != 2 || strings.Join(e.Scope.Sets[0].Matches, ",") != "a.conf,b.conf" {
		t.Errorf("sets %+v", e.Scope.Sets)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dir)
	got, err := Resolver{}.Resolve(context.Background(), insts[0].Resource, insts[0].Lazy)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Values["content"].AsString(); c != `[true,false,["a.conf","b.conf"],"a.conf,b.conf"]` {
		t.Errorf("content %s", c)
	}
	_, err = Resolver{}.Resolve(context.Background(), insts[1].Resource, insts[1].Lazy)
	if err == nil || !strings.Contains(err.Error(), "leads out of the recipe directory") {
		t.Errorf("err %v", err)
	}
}

// TestTemplatePathRule: a template's source and templatefile() name a
// cookbook's template alike — from templates/, "templates/" allowed — and
// a source that leads out of the cookbook is an error at the source.
func TestTemplatePathRule(t *testing.T) {
	top := writeDir(t, map[string]string{
		"web/metadata.hcl":       "name = \"web\"\nversion = \"1.0.0\"\n",
		"web/templates/site.tpl": "port=${port}",
		"web/recipes/default.hcl": `template "/a" {
  source    = "site.tpl"
  variables = { port = 1 }
}
template "/b" {
  source    = "templates/site.tpl"
  variables = { port = 2 }
}
file "/c" {
  content = templatefile("site.tpl", { port = 3 })
}
file "/d" {
  content = templatefile("templates/site.tpl", { port = 4 })
}
`,
		"bad/metadata.hcl": "name = \"bad\"\nversion = \"1.0.0\"\n",
		"bad/recipes/default.hcl": `template "/e" {
  source = "../../web/templates/site.tpl"
}
`,
	})
	load := func(name string) ([]*Instance, hcl.Diagnostics) {
		cb, diags := config.ReadCookbook(filepath.Join(top, name), nil)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		reg := builtin.Registry()
		cfg, diags := config.LoadPolicy(config.PolicyInput{Dir: top, Cookbooks: []*config.Cookbook{cb}, RunList: []config.RunListItem{{Cookbook: name, Recipe: "default"}}}, reg)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		scope, _, diags := NewScope(cfg, testHost())
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return Resources(cfg, reg, scope)
	}
	insts, diags := load("web")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for i, inst := range insts {
		if got, want := inst.Resource.Get("content").AsString(), fmt.Sprintf("port=%d", i+1); got != want {
			t.Errorf("%s: content %q, want %q", inst.Resource.Address(), got, want)
		}
	}
	_, diags = load("bad")
	if len(diags) != 1 || diags[0].Summary != "Cannot read the template" || diags[0].Subject == nil || diags[0].Subject.Start.Line != 2 {
		t.Fatalf("diags %v", diags)
	}
	if !strings.Contains(diags[0].Detail, "leads out of the cookbook") {
		t.Errorf("detail %q", diags[0].Detail)
	}
}

// TestFileSetDrivesForEach: fileset is a set of strings, what for_each
// takes: one instance per file, each reading its own.
func TestFileSetDrivesForEach(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.hcl": `file "conf" {
  for_each = fileset("conf.d", "*.conf")
  path     = "/etc/app/${each.key}"
  content  = file("conf.d/${each.value}")
}
`,
		"conf.d/a.conf": "a",
		"conf.d/b.conf": "b",
		"conf.d/README": "r",
	})
	_, insts, diags := plan(t, dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, inst := range insts {
		got = append(got, inst.Resource.Get("path").AsString()+"="+inst.Resource.Get("content").AsString())
	}
	if strings.Join(got, " ") != "/etc/app/a.conf=a /etc/app/b.conf=b" {
		t.Errorf("instances %v", got)
	}
}
