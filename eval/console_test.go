package eval

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/toquehq/toque/internal/host"
)

func TestConsoleEval(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": `
default "web" {
  port = 80
  tls  = { on = true }
}
override "web" {
  port = 9090
}
default "db" {
  password = sensitive("pw")
  user     = "app"
}
default "app" {
  token = "t"
}
file "/x" {
  content   = node.app.token
  sensitive = true
}
`})
	cfg := mustLoad(t, dir)
	con, diags := NewConsole(cfg, host.Unknown())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cases := []struct {
		expr string
		want string // GoString of the value, or "error: SUMMARY"
		// marked: the value is (or holds) a sensitive value
		marked bool
	}{
		{expr: `node.web.port`, want: `cty.NumberIntVal(9090)`},
		{expr: `provenance(node.web.port)`, want: `cty.ObjectVal(map[string]cty.Value{"level":cty.StringVal("override"), "source":cty.StringVal("a.hcl:7")})`},
		{expr: `provenance(node.web["port"]).level`, want: `cty.StringVal("override")`},
		{expr: `provenance("web.port").level`, want: `cty.StringVal("override")`},
		{expr: `keys(provenance(node.web))`, want: `cty.TupleVal([]cty.Value{cty.StringVal("port"), cty.StringVal("tls.on")})`},
		{expr: `provenance(node.web.nope)`, want: "error: Invalid function argument"},
		{expr: `node.db.password`, marked: true},
		{expr: `upper(node.db.password)`, marked: true},
		{expr: `node.db`, marked: true},
		{expr: `node.db.user`, want: `cty.StringVal("app")`},
		{expr: `node.app.token`, marked: true}, // read by a sensitive resource
		{expr: `node.web.prot`, want: "error: Unsupported attribute"},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			expr, d := hclsyntax.ParseExpression([]byte(tc.expr), "<stdin>", hcl.InitialPos)
			if d.HasErrors() {
				t.Fatal(d)
			}
			v, d := con.Eval(expr)
			if strings.HasPrefix(tc.want, "error: ") {
				if !d.HasErrors() || d[0].Summary != strings.TrimPrefix(tc.want, "error: ") {
					t.Fatalf("diagnostics %v, want %s", d, tc.want)
				}
				return
			}
			if d.HasErrors() {
				t.Fatal(d)
			}
			if v.ContainsMarked() != tc.marked {
				t.Errorf("marked = %v, want %v", v.ContainsMarked(), tc.marked)
			}
			if !tc.marked && v.GoString() != tc.want {
				t.Errorf("= %s, want %s", v.GoString(), tc.want)
			}
		})
	}

	srcs := con.Sources([]string{"web", "port"})
	if len(srcs) != 1 || len(srcs[0].Writes) != 2 || srcs[0].Writes[0].Level != "default" || srcs[0].Leaf.Level != "override" {
		t.Errorf("Sources(web.port) = %+v", srcs)
	}
	if srcs := con.Sources([]string{"db"}); len(srcs) != 2 || !srcs[0].Hidden || srcs[1].Hidden {
		t.Errorf("Sources(db) = %+v, want password hidden, user not", srcs)
	}
}
