package eval

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// FuzzYAML decodes arbitrary YAML: nothing may panic, and a document
// that decodes is encoded by yamlencode into YAML that decodes to the
// same value.
func FuzzYAML(f *testing.F) {
	for _, s := range []string{
		"a: 1\nb: [x, 2.5, true, ~]\nc: {d: e}\n",
		"base: &b {x: 1}\nweb:\n  <<: *b\n  y: \"two\\nlines\"\n",
		"- |\n  text\n   indented\n- >\n  folded\n- 0x1F\n- 1_000\n- 1e3\n- .inf\n- !custom x\n",
		"a: &a [*a]\n",
		"? [1]\n: 2\n",
		"a: 1\n---\nb: 2\n",
		"'': ''\n\"\\t\": \" x \"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v, err := yamlDecode(src)
		if err != nil {
			return
		}
		out, err := yamlEncodeFunc.Call([]cty.Value{v})
		if err != nil {
			t.Fatalf("yamlencode of what yamldecode read: %v", err)
		}
		back, err := yamlDecode(out.AsString())
		if err != nil {
			t.Fatalf("yamldecode of yamlencode's %q: %v", out.AsString(), err)
		}
		if !back.RawEquals(v) {
			t.Fatalf("round trip through %q:\n got %#v\nwant %#v", out.AsString(), back, v)
		}
	})
}
