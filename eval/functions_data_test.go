package eval

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func obj(m map[string]cty.Value) cty.Value { return cty.ObjectVal(m) }

// TestYAMLFunctions: yamldecode reads one document as Terraform's does;
// yamlencode writes what yamldecode reads back; bad documents are errors
// at the argument.
func TestYAMLFunctions(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"vhosts.yaml": "vhosts:\n  - name: a.com\n    port: 80\n  - name: b.com\n    port: 8080\n    tls: true\n",
	})
	n := cty.NumberIntVal
	s := cty.StringVal
	runFnCases(t, dir, []fnCase{
		{expr: `yamldecode("a: 1\nb: [x, 2.5, true, ~]\nc: {d: e}")`, want: obj(map[string]cty.Value{
			"a": n(1),
			"b": cty.TupleVal([]cty.Value{s("x"), cty.NumberFloatVal(2.5), cty.True, cty.NullVal(cty.DynamicPseudoType)}),
			"c": obj(map[string]cty.Value{"d": s("e")}),
		})},
		{expr: `yamldecode(file("vhosts.yaml")).vhosts[1].port`, want: n(8080)},
		{expr: `yamldecode("yes")`, want: s("yes")}, // YAML 1.2: not a bool
		{expr: `yamldecode("2024-01-02")`, want: s("2024-01-02")},
		{expr: `yamldecode("0x1F")`, want: n(31)},
		{expr: `yamldecode("1_000")`, want: n(1000)},
		{expr: `yamldecode("")`, want: cty.NullVal(cty.DynamicPseudoType)},
		{expr: `yamldecode("base: &b {x: 1, y: 2}\nweb:\n  <<: *b\n  y: 3").web`, want: obj(map[string]cty.Value{"x": n(1), "y": n(3)})},
		{expr: `yamldecode("a: &a [1]\nb: *a").b`, want: cty.TupleVal([]cty.Value{n(1)})},
		{expr: `yamlencode({b = [1, "x", true, null], a = "yes", c = {}, d = "two\nlines\n"})`,
			want: s("\"a\": \"yes\"\n\"b\":\n- 1\n- \"x\"\n- true\n- null\n\"c\": {}\n\"d\": |\n  two\n  lines\n")},
		{expr: `yamldecode(yamlencode({a = ["1", 2, "true"], b = { c = "null" }}))`, want: obj(map[string]cty.Value{
			"a": cty.TupleVal([]cty.Value{s("1"), n(2), s("true")}),
			"b": obj(map[string]cty.Value{"c": s("null")}),
		})},
		{expr: `yamlencode("x")`, want: s("\"x\"\n")},

		{expr: `yamldecode("a: [")`, err: "Invalid function argument", col: 13},
		{expr: `yamldecode("a: 1\n---\nb: 2")`, err: "Invalid function argument", col: 13},
		{expr: `yamldecode("a: 1\na: 2")`, err: "Invalid function argument", col: 13},
		{expr: `yamldecode("? [1]\n: 2")`, err: "Invalid function argument", col: 13},
		{expr: `yamldecode("a: !vault x")`, err: "Invalid function argument", col: 13},
		{expr: `yamldecode("a: .nan")`, err: "Invalid function argument", col: 13},
		{expr: `yamldecode("a: &a [*a]")`, err: "Invalid function argument", col: 13},
		{expr: `yamldecode(["a"])`, err: "Invalid function argument", col: 12},
		{expr: `yamldecode()`, err: "Not enough function arguments"},
	})
}

// TestYAMLLimits: a YAML bomb, a document nested too deep and one too
// large are errors naming the limit, and neither stall nor crash.
func TestYAMLLimits(t *testing.T) {
	// The billion laughs: each level repeats the one above nine times.
	var bomb strings.Builder
	bomb.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		fmt.Fprintf(&bomb, "%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	dir := writeDir(t, map[string]string{
		"bomb.yaml": bomb.String(),
		"deep.yaml": deep,
		"big.yaml":  "a: \"" + strings.Repeat("x", 5<<20) + "\"\n",
	})
	for _, name := range []string{"bomb", "deep", "big"} {
		t.Run(name, func(t *testing.T) {
			_, diags := evalIn(t, dir, fmt.Sprintf(`yamldecode(file("%s.yaml"))`, name))
			if len(diags) != 1 || diags[0].Summary != "Invalid function argument" {
				t.Fatalf("diags %v", diags)
			}
			want := map[string]string{"bomb": "repeat more than", "deep": "levels deep", "big": "at most 4 MiB"}[name]
			if !strings.Contains(diags[0].Detail, want) {
				t.Errorf("detail %q does not name the limit (%q)", diags[0].Detail, want)
			}
		})
	}
}

// TestCSVAndCIDRFunctions: csvdecode, and the network functions with
// Terraform's documented examples.
func TestCSVAndCIDRFunctions(t *testing.T) {
	dir := t.TempDir()
	s := cty.StringVal
	list := func(xs ...string) cty.Value {
		vals := make([]cty.Value, len(xs))
		for i, x := range xs {
			vals[i] = s(x)
		}
		return cty.ListVal(vals)
	}
	runFnCases(t, dir, []fnCase{
		{expr: `csvdecode("name,port\na,80\nb,8080\n")[1].port`, want: s("8080")},
		{expr: `cidrhost("10.12.112.0/20", 16)`, want: s("10.12.112.16")},
		{expr: `cidrhost("10.12.112.0/20", 268)`, want: s("10.12.113.12")},
		{expr: `cidrhost("10.0.0.0/8", -2)`, want: s("10.255.255.254")},
		{expr: `cidrhost("fd00:fd12:3456:7890:00a2::/72", 34)`, want: s("fd00:fd12:3456:7890::22")},
		{expr: `cidrnetmask("172.16.0.0/12")`, want: s("255.240.0.0")},
		{expr: `cidrsubnet("172.16.0.0/12", 4, 2)`, want: s("172.18.0.0/16")},
		{expr: `cidrsubnet("10.1.2.0/24", 4, 15)`, want: s("10.1.2.240/28")},
		{expr: `cidrsubnet("fd00:fd12:3456:7890::/56", 16, 162)`, want: s("fd00:fd12:3456:7800:a200::/72")},
		{expr: `cidrsubnets("10.1.0.0/16", 4, 4, 8, 4)`, want: list("10.1.0.0/20", "10.1.16.0/20", "10.1.32.0/24", "10.1.48.0/20")},
		{expr: `cidrsubnets("fd00:fd12:3456:7890::/56", 16, 16, 16, 32)`, want: list("fd00:fd12:3456:7800::/72", "fd00:fd12:3456:7800:100::/72", "fd00:fd12:3456:7800:200::/72", "fd00:fd12:3456:7800:300::/88")},
		{expr: `cidrsubnets("10.0.0.0/8")`, want: cty.ListValEmpty(cty.String)},

		{expr: `csvdecode("a,b\n1\n")`, err: "Error in function call", col: 1},
		{expr: `cidrhost("10.0.0.0/33", 1)`, err: "Invalid function argument", col: 11},
		{expr: `cidrhost("010.0.0.0/8", 1)`, err: "Invalid function argument", col: 11},
		{expr: `cidrhost("nope", 1)`, err: "Invalid function argument", col: 11},
		{expr: `cidrhost("10.0.0.0/30", 4)`, err: "Invalid function argument", col: 25},
		{expr: `cidrhost("10.0.0.0/30", -5)`, err: "Invalid function argument", col: 25},
		{expr: `cidrhost("10.0.0.0/8", 1.5)`, err: "Invalid function argument", col: 24},
		{expr: `cidrhost("10.0.0.0/8", "x")`, err: "Invalid function argument", col: 25},
		{expr: `cidrnetmask("fd00::/8")`, err: "Invalid function argument", col: 14},
		{expr: `cidrsubnet("10.1.2.0/24", 4, 16)`, err: "Invalid function argument", col: 30},
		{expr: `cidrsubnet("10.1.2.0/24", 9, 0)`, err: "Invalid function argument", col: 27},
		{expr: `cidrsubnet("10.1.2.0/24", -1, 0)`, err: "Invalid function argument", col: 27},
		{expr: `cidrsubnets("10.0.0.0/30", 1, 1, 1)`, err: "Invalid function argument", col: 34},
	})
}
