package lazy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/typedvalue"
)

func expr(src string, node cty.Value) *Expr {
	e := &Expr{Source: src, Range: hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: 3, Column: 13}}}
	if node != cty.NilVal {
		e.Scope.Node = &typedvalue.Value{Value: node}
	}
	return e
}

func TestReads(t *testing.T) {
	node := cty.ObjectVal(map[string]cty.Value{"app": cty.ObjectVal(map[string]cty.Value{"root": cty.StringVal("/srv/app")})})
	cases := []struct {
		src            string
		paths          []string
		complete, host bool
	}{
		{`file("/srv/keys/api.key")`, []string{"/srv/keys/api.key"}, true, true},
		{`trimspace(file("${node.app.root}/key"))`, []string{"/srv/app/key"}, true, true},
		{`templatefile("app.tpl", { key = file("/k") })`, []string{"/k", "/t"}, true, true},
		{`templatefile("app.tpl", { key = "k" })`, []string{"/t"}, true, true}, // the template reads /t
		{`templatefile("other.tpl", {})`, []string{}, true, true},              // not carried: may read anything
		{`file("relative.txt")`, []string{}, true, false},                      // a recipe file the plan carries
		{`file(trimspace(file("/where")))`, []string{"/where"}, false, true},
		{`node.app.root`, []string{}, true, false}, // a value, not a read of the host
		{`fileexists(node.app.root)`, []string{"/srv/app"}, true, true},
		{`upper("x")`, []string{}, true, false},
		{`"${node.app.root}/a/../b"`, []string{"/srv/app/b"}, true, false},
	}
	for _, c := range cases {
		e := expr(c.src, node)
		e.Scope.Dir = "/recipes"
		e.Scope.Files = map[string]*File{"/recipes/app.tpl": {Content: []byte(`${key} ${file("/t")}`)}}
		got := e.Reads()
		if !reflect.DeepEqual(got.Paths, c.paths) || got.Complete != c.complete || got.Host != c.host {
			t.Errorf("%s: reads %+v, want %v complete=%v host=%v", c.src, got, c.paths, c.complete, c.host)
		}
	}
}

func TestCommandReads(t *testing.T) {
	got := CommandReads(`test -f /srv/keys/api.key && grep -q x "/etc/app.conf"; cd rel`, "/opt/app")
	want := []string{"/etc/app.conf", "/opt/app", "/srv/keys/api.key"}
	if !reflect.DeepEqual(got.Paths, want) || !got.Complete || !got.Host {
		t.Errorf("got %+v", got)
	}
	if got := CommandReads("systemctl is-active web", ""); got.Complete || len(got.Paths) != 0 {
		t.Errorf("a command naming no path may read anything: %+v", got)
	}
}

func TestRelated(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"/srv/keys/api.key", "/srv/keys/api.key", true},
		{"/srv/keys/api.key", "/srv/keys", true},
		{"/srv", "/srv/keys/api.key", true},
		{"/srv/keys2", "/srv/keys", false},
		{"/etc/motd", "/srv/keys", false},
		{"/x", "/", true},
	} {
		if got := Related(c.a, c.b); got != c.want {
			t.Errorf("Related(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

func TestCheck(t *testing.T) {
	node := cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x")})
	cases := []struct {
		e    *Expr
		want string
	}{
		{expr(`upper(node.a)`, node), ""},
		{expr(`upper(node.a)`, cty.NilVal), "which its scope does not carry"},
		{expr(`upper(var.a)`, node), `reads "var"`},
		{expr(`lazy(node.a)`, node), "holds lazy"},
		{expr(`upper(`, node), "does not parse"},
		{expr(` `, node), "has no expression"},
		{&Expr{Source: "${x}", Template: "file", Variables: "variables"}, ""},
		{&Expr{Source: `"x"`, Template: "other"}, "no known kind"},
		{&Expr{Source: `"x"`, Variables: "variables"}, "without a template"},
		{&Expr{Source: `"x"`, Scope: Scope{Files: map[string]*File{"rel": nil}}}, "relative path"},
		{&Expr{Source: `"x"`, Scope: Scope{Files: map[string]*File{"/d": {Kind: KindDir}}, Sets: []FileSet{{Dir: "/d", Pattern: "*"}}, TemplateDir: "/t"}}, ""},
		{&Expr{Source: `"x"`, Scope: Scope{Files: map[string]*File{"/d": {Kind: "fifo"}}}}, "no known kind"},
		{&Expr{Source: `"x"`, Scope: Scope{Sets: []FileSet{{Dir: "d", Pattern: "*"}}}}, "relative path"},
		{&Expr{Source: `"x"`, Scope: Scope{TemplateDir: "templates"}}, "relative path"},
	}
	for _, c := range cases {
		err := c.e.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.e.Source, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: got %v, want %q", c.e.Source, err, c.want)
		}
	}
}

// TestTemplateName: in a cookbook (a templates directory that is not the
// recipe's), a leading templates/ names the same file; elsewhere a name
// is what it says.
func TestTemplateName(t *testing.T) {
	cases := []struct{ dir, tdir, name, want string }{
		{"/cb", "/cb/templates", "site.tpl", "site.tpl"},
		{"/cb", "/cb/templates", "templates/site.tpl", "site.tpl"},
		{"/cb", "/cb/templates", "sub/templates/x", "sub/templates/x"},
		{"/r", "/r", "templates/site.tpl", "templates/site.tpl"},
		{"/cb", "/cb/templates", "/abs/templates/x", "/abs/templates/x"},
	}
	for _, c := range cases {
		if got := TemplateName(c.dir, c.tdir, c.name); got != c.want {
			t.Errorf("TemplateName(%q, %q, %q) = %q, want %q", c.dir, c.tdir, c.name, got, c.want)
		}
	}
}
