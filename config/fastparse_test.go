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

// TestFastParseIsPinnedToHCL: what FuzzFastParse found equal holds for the
// hcl it ran against; another hcl must be fuzzed again first.
func TestFastParseIsPinnedToHCL(t *testing.T) {
	for _, c := range []struct{ gomod, version, replaced string }{
		{"require github.com/hashicorp/hcl/v2 v2.25.0\n", "v2.25.0", ""},
		{"require (\n\tgithub.com/a/b v1.0.0\n\tgithub.com/hashicorp/hcl/v2 v2.26.0 // indirect\n)\n", "v2.26.0", ""},
		{"require github.com/hashicorp/hcl/v2 v2.25.0\nreplace github.com/hashicorp/hcl/v2 => ../hcl\n", "v2.25.0", "../hcl"},
		{"require github.com/hashicorp/hcl/v2 v2.25.0\nreplace (\n\tgithub.com/hashicorp/hcl/v2 v2.25.0 => example.com/hcl v2.25.1\n)\n", "v2.25.0", "example.com/hcl v2.25.1"},
		{"require github.com/hashicorp/hcl v1.0.0\n", "", ""},
	} {
		if v, r := hclInGoMod([]byte(c.gomod)); v != c.version || r != c.replaced {
			t.Errorf("hclInGoMod(%q) = %q, %q; want %q, %q", c.gomod, v, r, c.version, c.replaced)
		}
	}

	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatalf("reading toque's go.mod (is the test running in config/?): %v", err)
	}
	version, replaced := hclInGoMod(gomod)
	refuzz := "Fuzz fastParse against it: go test -run '^$' -fuzz '^FuzzFastParse$' -fuzztime 10m ./config, " +
		"then go test ./config (which compares both parses on every recipe of the repository); fix what they find"
	switch {
	case version == "":
		t.Fatalf("go.mod requires no github.com/hashicorp/hcl/v2")
	case replaced != "":
		t.Fatalf("go.mod replaces github.com/hashicorp/hcl/v2 by %s, but fastParse (config/fastparse.go) builds the syntax tree hclsyntax builds and was fuzzed against hcl %s only. %s. The pin takes only a released version of hcl (what a replace points to can change while go.mod does not): use one before merging.",
			replaced, fastParseFuzzedAgainst, refuzz)
	case version != fastParseFuzzedAgainst:
		t.Fatalf("go.mod requires github.com/hashicorp/hcl/v2 %s, but fastParse (config/fastparse.go) builds the syntax tree hclsyntax builds and was fuzzed against hcl %s. %s, then set fastParseFuzzedAgainst to %q.",
			version, fastParseFuzzedAgainst, refuzz, version)
	}
}

// hclInGoMod returns the version of github.com/hashicorp/hcl/v2 that a
// go.mod requires, and what replaces it, if anything.
func hclInGoMod(gomod []byte) (version, replaced string) {
	const hclPath = "github.com/hashicorp/hcl/v2"
	block := ""
	for _, line := range strings.Split(string(gomod), "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			continue
		case block != "" && f[0] == ")":
			block = ""
			continue
		case len(f) == 2 && f[1] == "(":
			block = f[0]
			continue
		}
		kind := block
		if kind == "" {
			kind, f = f[0], f[1:]
		}
		if len(f) < 2 || f[0] != hclPath {
			continue
		}
		switch kind {
		case "require":
			version = f[1]
		case "replace":
			if _, to, ok := strings.Cut(strings.Join(f, " "), "=> "); ok {
				replaced = to
			}
		}
	}
	return version, replaced
}
