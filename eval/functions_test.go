package eval

import (
	"fmt"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

func TestFunctions(t *testing.T) {
	dir := writeDir(t, map[string]string{"data/x.txt": "xyz", "data/bin": "\xff\xfe"})
	ctx := &hcl.EvalContext{Functions: Functions(dir)}
	cases := []struct {
		expr string
		want cty.Value
		err  bool
	}{
		{`upper("abc")`, cty.StringVal("ABC"), false},
		{`length("héllo")`, cty.NumberIntVal(5), false},
		{`length([1, 2, 3])`, cty.NumberIntVal(3), false},
		{`length({a = 1, b = 2})`, cty.NumberIntVal(2), false},
		{`length(1)`, cty.NilVal, true},
		{`replace("a-b-c", "-", "+")`, cty.StringVal("a+b+c"), false},
		{`replace("a1b22c", "/[0-9]+/", "#")`, cty.StringVal("a#b#c"), false},
		{`strrev("abc")`, cty.StringVal("cba"), false},
		{`reverse([1, 2])`, cty.TupleVal([]cty.Value{cty.NumberIntVal(2), cty.NumberIntVal(1)}), false},
		{`join(",", sort(["b", "a"]))`, cty.StringVal("a,b"), false},
		{`lookup({a = "x"}, "b", "d")`, cty.StringVal("d"), false},
		{`max(1, 5, 3)`, cty.NumberIntVal(5), false},
		{`tostring(5)`, cty.StringVal("5"), false},
		{`jsonencode({a = [1]})`, cty.StringVal(`{"a":[1]}`), false},
		{`base64decode(base64encode("hi"))`, cty.StringVal("hi"), false},
		{`base64decode("!!")`, cty.NilVal, true},
		{`sha256("")`, cty.StringVal("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), false},
		{`md5("a")`, cty.StringVal("0cc175b9c0f1b6a831c399e269772661"), false},
		{`startswith("abc", "ab") && endswith("abc", "bc") && strcontains("abc", "b")`, cty.True, false},
		{`alltrue([true, true]) && !anytrue([false])`, cty.True, false},
		{`file("data/x.txt")`, cty.StringVal("xyz"), false},
		{`file("data/bin")`, cty.NilVal, true},
		{`filebase64("data/bin")`, cty.StringVal("//4="), false},
		{`fileexists("data/x.txt")`, cty.True, false},
		{`fileexists("data/none")`, cty.False, false},
		{`fileexists("data")`, cty.False, false}, // a directory: see direxists
		{`dirname("/a/b/c")`, cty.StringVal("/a/b"), false},
		{`abspath("data") == "` + dir + `/data"`, cty.True, false},
		{`try(tonumber("x"), 7)`, cty.NumberIntVal(7), false},
		{`templatefile("data/x.txt", null)`, cty.StringVal("xyz"), false},
		{`templatefile("data/x.txt", "nope")`, cty.NilVal, true},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			expr, diags := hclsyntax.ParseExpression([]byte(tc.expr), "x.hcl", hcl.Pos{Line: 1, Column: 1})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			got, diags := expr.Value(ctx)
			if tc.err {
				if !diags.HasErrors() {
					t.Errorf("want an error, got %#v", got)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if !got.RawEquals(tc.want) {
				t.Errorf("= %#v, want %#v", got, tc.want)
			}
		})
	}
	for _, banned := range []string{"uuid", "timestamp", "bcrypt"} {
		if _, ok := ctx.Functions[banned]; ok {
			t.Errorf("%s must not be offered: plans must be deterministic", banned)
		}
	}
	if _, ok := baseFunctions(dir)["templatefile"]; ok {
		t.Error("templates must not render templates")
	}
}

func TestEnvFunc(t *testing.T) {
	t.Setenv("TOQUE_TEST_ENV", "set")
	cases := []struct {
		args    []cty.Value
		want    string
		wantErr bool
	}{
		{[]cty.Value{cty.StringVal("TOQUE_TEST_ENV")}, "set", false},
		{[]cty.Value{cty.StringVal("TOQUE_TEST_ENV"), cty.StringVal("d")}, "set", false},
		{[]cty.Value{cty.StringVal("TOQUE_TEST_UNSET_X"), cty.StringVal("d")}, "d", false},
		{[]cty.Value{cty.StringVal("TOQUE_TEST_UNSET_X")}, "", true},
	}
	for _, c := range cases {
		got, err := envFunc(hostReader).Call(c.args)
		if c.wantErr {
			if err == nil {
				t.Errorf("env(%v): want an error", c.args)
			}
			continue
		}
		if err != nil || got.AsString() != c.want {
			t.Errorf("env(%v) = %v, %v; want %q", c.args, got, err, c.want)
		}
	}
}

// tolist and toset of a tuple of one primitive type take a shortcut; the
// values are go-cty's.
func TestToListAndToSet(t *testing.T) {
	fs := Functions(t.TempDir())
	strs := cty.TupleVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a"), cty.StringVal("b")})
	cases := []struct {
		name, fn string
		in       cty.Value
		want     cty.Value
	}{
		{"strings to a set", "toset", strs, cty.SetVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")})},
		{"strings to a list", "tolist", strs, cty.ListVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a"), cty.StringVal("b")})},
		{"numbers", "toset", cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)}), cty.SetVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)})},
		{"mixed: go-cty's conversion", "toset", cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(2)}), cty.SetVal([]cty.Value{cty.StringVal("a"), cty.StringVal("2")})},
		{"an empty tuple", "toset", cty.EmptyTupleVal, cty.SetValEmpty(cty.DynamicPseudoType)},
		{"a null element", "tolist", cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NullVal(cty.String)}), cty.ListVal([]cty.Value{cty.StringVal("a"), cty.NullVal(cty.String)})},
		{"an unknown element", "toset", cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.UnknownVal(cty.String)}), cty.SetVal([]cty.Value{cty.StringVal("a"), cty.UnknownVal(cty.String)})},
		{"marked", "toset", cty.TupleVal([]cty.Value{cty.StringVal("a")}).Mark(SensitiveMark), cty.SetVal([]cty.Value{cty.StringVal("a")}).Mark(SensitiveMark)},
		{"a list already", "toset", cty.ListVal([]cty.Value{cty.StringVal("a")}), cty.SetVal([]cty.Value{cty.StringVal("a")})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := fs[c.fn].Call([]cty.Value{c.in})
			if err != nil || !got.RawEquals(c.want) {
				t.Errorf("%s(%#v) = %#v, %v; want %#v", c.fn, c.in, got, err, c.want)
			}
		})
	}
}

func BenchmarkToSetOfStrings(b *testing.B) {
	elems := make([]cty.Value, 10000)
	for i := range elems {
		elems[i] = cty.StringVal(fmt.Sprintf("site-%05d", i))
	}
	in := cty.TupleVal(elems)
	f := Functions(b.TempDir())["toset"]
	for b.Loop() {
		if _, err := f.Call([]cty.Value{in}); err != nil {
			b.Fatal(err)
		}
	}
}
