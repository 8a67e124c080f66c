package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestNestingLimits(t *testing.T) {
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	cases := []struct {
		name, file, src string
		want            string // summary of the one error; "" for none
		line            int
	}{
		{"200 KB of brackets", "a.hcl", "x = " + deep("[", "]", 100000), "Nesting too deep", 1},
		{"nested objects", "a.hcl", "default \"a\" {\n  b = " + deep("{ x = ", "}", 300) + "\n}\n", "Nesting too deep", 2},
		{"nested interpolations", "a.hcl", "x = \"" + deep("${\"", "\"}", 300) + "\"\n", "Nesting too deep", 1},
		{"deep JSON", "a.hcl.json", deep("[", "]", 100000), "Nesting too deep", 1},
		{"brackets in a string are not nesting", "a.hcl", "file \"/x\" { content = \"" + strings.Repeat("((", 300) + "\" }\n", "", 0},
		{"brackets in a JSON string", "a.hcl.json", `{"file": {"/x": {"content": "` + strings.Repeat("[{", 300) + `"}}}`, "", 0},
		{"a deep but legal file", "a.hcl", "x = " + deep("[", "]", 200), "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, diags := Parse([]byte(c.src), c.file)
			if c.want == "" {
				if diags.HasErrors() {
					t.Fatalf("diagnostics %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary != c.want || diags[0].Subject == nil || diags[0].Subject.Start.Line != c.line {
				t.Fatalf("diagnostics %v", diags)
			}
		})
	}
	// Templates too.
	if d := CheckSource([]byte(deep("%{ if true }", "%{ endif }", 300)), "t.tpl", true); d == nil || d.Summary != "Nesting too deep" {
		t.Errorf("deep template: %v", d)
	}
}

func TestSizeLimit(t *testing.T) {
	old := MaxSourceBytes
	MaxSourceBytes = 1000
	defer func() { MaxSourceBytes = old }()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "big.hcl"), []byte("# "+strings.Repeat("x", 2000)+"\n"), 0o644)
	_, diags := LoadDir(dir, testRegistry())
	if len(diags) != 1 || diags[0].Summary != "File too large" {
		t.Fatalf("diagnostics %v", diags)
	}
}

func TestValueTooDeep(t *testing.T) {
	v := cty.StringVal("leaf")
	for i := 0; i < MaxNestingDepth; i++ {
		v = cty.ObjectVal(map[string]cty.Value{"a": v})
	}
	if ValueTooDeep(v) {
		t.Error("a value at the limit is too deep")
	}
	if !ValueTooDeep(cty.TupleVal([]cty.Value{v})) {
		t.Error("a value over the limit is not too deep")
	}
}
