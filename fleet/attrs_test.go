package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toquehq/toque/eval"
)

// The attribute files shipped to hosts give, through toque's own -attr-file
// reading, the values the inventory wrote, each leaf with the inventory's
// line as its provenance, sensitive ones still sensitive.
func TestAttributeLayersKeepTheInventorysLines(t *testing.T) {
	dir := inventoryDir(t)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := `recipes = "site"
hosts = ["a"]
attributes = {
  web = {
    port    = 8080
    names   = ["a", "b"], mode = "0755"
    token   = sensitive(trimspace(file("token")))
    nested  = {
      deep = { x = true }
    }
    literal = "${"$"}{not.a.template}"
  }
  computed = merge({ a = 1 }, { b = "two" })
  quoted   = { "example.com" = { port = 443 } }
}
`
	inv, diags := ParseInventory([]byte(src), "fleet.hcl", dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	layers := inv.Host("a").Layers
	if len(layers) != 1 || layers[0].Name != "fleet.hcl#all" {
		t.Fatalf("layers %+v", layers)
	}
	file := filepath.Join(t.TempDir(), layers[0].Name)
	if err := os.WriteFile(file, layers[0].Source, 0o600); err != nil {
		t.Fatal(err)
	}
	arg, d := eval.AttrFile(layers[0].Name, file)
	if d.HasErrors() {
		t.Fatalf("%v\n%s", d, layers[0].Source)
	}
	writes, d := eval.CommandLineAttributes([]eval.AttributeArg{arg})
	if d.HasErrors() {
		t.Fatalf("%v\n%s", d, layers[0].Source)
	}
	var got []string
	for _, w := range writes {
		val := "(sensitive)"
		if !w.Sensitive {
			val = w.Value.GoString()
		}
		got = append(got, fmt.Sprintf("%s line %d %s", strings.Join(w.Path, "."), w.Range.Start.Line, val))
	}
	sort.Strings(got)
	want := []string{
		`computed.a line 13 cty.NumberIntVal(1)`,
		`computed.b line 13 cty.StringVal("two")`,
		`quoted.example.com.port line 14 cty.NumberIntVal(443)`,
		`web.literal line 11 cty.StringVal("${not.a.template}")`,
		`web.mode line 6 cty.StringVal("0755")`,
		`web.names line 6 cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")})`,
		`web.nested.deep.x line 9 cty.True`,
		`web.port line 5 cty.NumberIntVal(8080)`,
		`web.token line 7 (sensitive)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("leaves:\n%s\nwant:\n%s\nfile:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), layers[0].Source)
	}
	if strings.Contains(string(layers[0].Source), "from-a-file") && !strings.Contains(string(layers[0].Source), `sensitive("from-a-file")`) {
		t.Errorf("the token is written unmarked:\n%s", layers[0].Source)
	}
}
