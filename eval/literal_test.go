package eval

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestStringLiteralIsTheTemplatesValue: the shortcut for quoted strings
// gives exactly what hclsyntax evaluates, and takes nothing else.
func TestStringLiteralIsTheTemplatesValue(t *testing.T) {
	for _, tc := range []struct {
		src   string
		taken bool
	}{
		{`"0644"`, true},
		{`"a\nb\t\"c\" \\ $${x} %%{y}"`, true},
		{"\"e\u0301 caf\u00e9 \u212b\"", true}, // not NFC as written
		{"<<EOT\nline one\n  two\nEOT\n", true},
		{"<<-EOT\n    indented\n    EOT\n", true},
		{`""`, true},
		{`"${"x"}"`, false},
		{`"a${"b"}"`, false},
		{`"%{ if true }x%{ endif }"`, false},
		{`["x"]`, false},
	} {
		expr, d := hclsyntax.ParseExpression([]byte(tc.src), "t.hcl", hcl.InitialPos)
		if d.HasErrors() {
			t.Fatalf("%s: %v", tc.src, d)
		}
		want, d := expr.Value(nil)
		if d.HasErrors() {
			t.Fatalf("%s: %v", tc.src, d)
		}
		got, ok := stringLiteral(expr)
		if ok != tc.taken {
			t.Errorf("%s: taken %v, want %v", tc.src, ok, tc.taken)
		}
		if ok && !got.RawEquals(want) {
			t.Errorf("%s: %#v, hclsyntax says %#v", tc.src, got, want)
		}
	}
}
