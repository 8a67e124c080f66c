package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// fastBlocks is how many top-level blocks of src fastParse parses itself
// (the rest it leaves to hclsyntax).
func fastBlocks(src []byte) int {
	segs, _ := fastParse(src, "x.hcl", 0, len(src), 1)
	n := 0
	for _, s := range segs {
		n += len(s.blocks)
	}
	return n
}

// sameAsHCL checks that parseNative, uncut, gives the whole-file parse
// (sameParse), and reports whether fastParse parsed every block itself.
func sameAsHCL(t *testing.T, src []byte) bool {
	t.Helper()
	old := chunkMin
	chunkMin = 1 << 30
	defer func() { chunkMin = old }()
	sameParse(t, src)
	segs, _ := fastParse(src, "x.hcl", 0, len(src), 1)
	for _, s := range segs {
		if s.blocks == nil {
			return false
		}
	}
	return true
}

func dump(b *hclsyntax.Block) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s %q type %v labels %v open %v close %v\n", b.Type, b.Labels, b.TypeRange, b.LabelRanges, b.OpenBraceRange, b.CloseBraceRange)
	fmt.Fprintf(&s, "body %v end %v\n", b.Body.SrcRange, b.Body.EndRange)
	for name, a := range b.Body.Attributes {
		fmt.Fprintf(&s, "  %s: %#v name %v eq %v src %v\n", name, a.Expr, a.NameRange, a.EqualsRange, a.SrcRange)
		if te, ok := a.Expr.(*hclsyntax.TemplateExpr); ok {
			for _, p := range te.Parts {
				fmt.Fprintf(&s, "    %#v\n", p)
			}
		}
	}
	for _, nb := range b.Body.Blocks {
		s.WriteString(dump(nb))
	}
	return s.String()
}

func TestFastParseIsHCLs(t *testing.T) {
	took := map[string]string{
		"workload": "default \"bench\" {\n  owner = \"toque\"\n}\n\ndirectory \"/srv/d\" {\n  mode = \"0755\"\n}\n\nfile \"/srv/d/f1.conf\" {\n  content = \"# managed by ${node.bench.owner}\\nsetting_1 = aaa\\n\"\n  mode    = \"0644\"\n}\n\nexecute \"mark-1\" {\n  command = \"echo done > /srv/d/m1\"\n  creates = \"/srv/d/m1\"\n}\n",
		"values":   "x \"a\" \"b\" {\n\tn = 42\n  t = true\n  f = false\n  e = \"\"\n  w = \"${ a.b-c.d }\"\n  two = \"${a}${b}\"\n  esc = \"q\\\"b\\\\s\\tt\\r\"\n  dollar = \"$5 and 100% and $x\"\n}\n",
		"nested":   "# top comment\n// another\n\nfile \"/a\" {\n  # inside\n  notifies \"run\" {\n    resource = \"execute[x]\"\n    timing   = \"delayed\"\n  }\n\n  subscribes \"run\" {\n  }\n}",
		"empty":    "",
		"spaces":   "  \n\t\n",
		"indented": "  file \"/a\" {\n  }\n",
		"no label": "locals {\n}\n",
		"glued":    "file\"/a\"\"b\"{\n}\n",
		"notes":    "a {\n  b = true # yes\n  c = x.y // z\n}\n",
	}
	for name, src := range took {
		t.Run(name, func(t *testing.T) {
			if !sameAsHCL(t, []byte(src)) {
				t.Errorf("fastParse did not take it")
			}
		})
	}
	left := map[string]string{
		"heredoc":        "a {\n  b = <<EOT\nx\nEOT\n}\n",
		"list":           "a {\n  b = [1]\n}\n",
		"call":           "a {\n  b = \"${upper(x)}\"\n}\n",
		"directive":      "a {\n  b = \"%{ if x }y%{ endif }\"\n}\n",
		"escape $${":     "a {\n  b = \"$${x}\"\n}\n",
		"unicode escape": "a {\n  b = \"\\u00e9\"\n}\n",
		"non-ASCII":      "a {\n  b = \"é\"\n}\n",
		"one line":       "a { b = 1 }\n",
		"duplicate":      "a {\n  b = 1\n  b = 2\n}\n",
		"negative":       "a {\n  b = -1\n}\n",
		"float":          "a {\n  b = 1.5\n}\n",
		"null":           "a {\n  b = null\n}\n",
		"crlf":           "a {\r\n}\r\n",
		"block comment":  "/* x */\na {\n}\n",
		"unclosed":       "a {\n  b = 1\n",
		"top attribute":  "x = 1\n",
		"ident label":    "a b {\n}\n",
		"trim":           "a {\n  b = \"${~ x ~}\"\n}\n",
		"index":          "a {\n  b = \"${x[0]}\"\n}\n",
		"label escape":   "a \"\\n\" {\n}\n",
		"after brace":    "a {\n}}\n",
		"spaced dot":     "a {\n  b = x . y\n}\n",
	}
	for name, src := range left {
		t.Run(name, func(t *testing.T) {
			if sameAsHCL(t, []byte(src)) {
				t.Errorf("fastParse took it all; it should leave it to hclsyntax")
			}
		})
	}
	// A hole is one block: the blocks around it are fastParse's.
	mixed := "a {\n  b = 1\n}\n\nc {\n  d = [1, 2]\n}\n\n# between\ne \"f\" {\n  g = x.y # note\n}\n/* x */\nh {\n}\n"
	if n := fastBlocks([]byte(mixed)); n != 2 {
		t.Errorf("fastParse parsed %d blocks of the mixed file itself, want 2", n)
	}
	sameAsHCL(t, []byte(mixed))
}

// TestFastParseOfTheRepositorysRecipes compares the parses on every .hcl
// file of the repository, and checks that fastParse takes part of them.
func TestFastParseOfTheRepositorysRecipes(t *testing.T) {
	taken := 0
	filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".hcl") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		t.Run(path, func(t *testing.T) {
			sameAsHCL(t, src)
			taken += fastBlocks(src)
		})
		return nil
	})
	if taken < 20 {
		t.Errorf("fastParse parsed %d blocks of the repository's recipes; is the test running in config/?", taken)
	}
}

// FuzzFastParse: whatever fastParse takes, hclsyntax parses the same.
func FuzzFastParse(f *testing.F) {
	f.Add("file \"/a\" {\n  content = \"x${node.a.b}\\n\"\n  mode = \"0644\"\n}\n")
	f.Add("a \"b\" {\n  n = 1\n  c {\n    d = true\n  }\n}\n# end\n")
	f.Add("a {\n  b = \"$${x} %%{y} $$ %% \\\\\"\n}\n")
	f.Add("a{\n}\n\tb \"x\"{\n\t}")
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<16 {
			return
		}
		sameAsHCL(t, []byte(src))
	})
}
