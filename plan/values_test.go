package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

func TestValueJSONRoundTrip(t *testing.T) {
	cases := []cty.Value{
		cty.StringVal("hello\n"),
		cty.NumberIntVal(420),
		cty.True,
		cty.ListVal([]cty.Value{cty.StringVal("a")}),
		cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1)}),
	}
	for _, v := range cases {
		b, err := json.Marshal(Value{Value: v})
		if err != nil {
			t.Fatal(err)
		}
		var got Value
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !got.Value.RawEquals(v) {
			t.Errorf("round trip of %#v gave %#v", v, got.Value)
		}
	}
}

func TestStoreValue(t *testing.T) {
	content := &resources.Property{Name: "content", Type: cty.String, Content: true}
	mode := &resources.Property{Name: "mode", Type: cty.String}
	bigText := strings.Repeat("a line of text\n", 100)
	cases := []struct {
		name      string
		prop      *resources.Property
		v         cty.Value
		sensitive bool
		kept      bool
		display   string // Display(prop.Content)
	}{
		{"sensitive", content, cty.StringVal("secret"), true, false, Sensitive},
		{"sensitive property", &resources.Property{Name: "k", Type: cty.String, Sensitive: true}, cty.StringVal("secret"), false, false, Sensitive},
		{"small content, kept for the diff", content, cty.StringVal("x"), false, true, "(1 byte, sha256:2d711642b726…)"},
		{"large text content, kept for the diff", content, cty.StringVal(bigText), false, true, "(1.5 KiB, sha256:"},
		{"content with a NUL", content, cty.StringVal(strings.Repeat("\x00", 2000)), false, false, "(2.0 KiB, sha256:"},
		{"content over the diff limit", content, cty.StringVal(strings.Repeat("x", MaxDiffSize+1)), false, false, "(1.0 MiB, sha256:"},
		{"small value", mode, cty.StringVal("0644"), false, true, `"0644"`},
		{"long value", mode, cty.StringVal(strings.Repeat("x", MaxInlineValue+1)), false, false, "(1.0 KiB, sha256:"},
		{"number", &resources.Property{Name: "n", Type: cty.Number}, cty.NumberIntVal(3), false, true, "3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sv := StoreValue(c.prop, c.v, "salt", c.sensitive)
			if (sv.Value != nil) != c.kept {
				t.Errorf("kept in full: %v, want %v", sv.Value != nil, c.kept)
			}
			if d := sv.Display(c.prop.Content); !strings.HasPrefix(d, c.display) {
				t.Errorf("shown as %q, want %q", d, c.display)
			}
			if (c.sensitive || c.prop.Sensitive) != sv.IsSensitive() {
				t.Errorf("digest %s", sv.Digest)
			}
			// What Read checks: a value kept matches its digest.
			p := &Plan{Salt: "salt"}
			if err := p.checkStored(sv); err != nil {
				t.Errorf("a stored value fails its own check: %v", err)
			}
		})
	}
}

func TestCompareCurrent(t *testing.T) {
	s := &resources.Schema{Name: "t", Properties: []*resources.Property{{Name: "mode", Type: cty.String}}}
	a := StoreCurrent(s, &resources.State{Exists: true, Values: map[string]cty.Value{"mode": cty.StringVal("0644")}}, "s", false)
	b := StoreCurrent(s, &resources.State{Exists: true, Values: map[string]cty.Value{"mode": cty.StringVal("0600")}}, "s", false)
	if a.Fingerprint() == b.Fingerprint() {
		t.Fatal("different readings share a fingerprint")
	}
	d := CompareCurrent(a, b)
	if len(d) != 1 || d[0].Property != "mode" || d[0].Then != `"0644"` || d[0].Now != `"0600"` {
		t.Errorf("differences = %+v", d)
	}
	if len(CompareCurrent(a, a)) != 0 {
		t.Error("a reading differs from itself")
	}
}

func TestStoreCurrentKeysPrivateValues(t *testing.T) {
	s := &resources.Schema{Name: "f", Properties: []*resources.Property{{Name: "content", Type: cty.String, Content: true}}}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{"content": cty.StringVal("pin=1234\n")}, Private: map[string]string{"content": "not readable by every user"}}
	c := StoreCurrent(s, st, "salt", false)
	sv := c.Values["content"]
	if !strings.HasPrefix(sv.Digest, "hmac-sha256:") || sv.Value != nil || sv.Display(true) != "(9 bytes, private)" || sv.Private != "not readable by every user" {
		t.Errorf("private value stored as %+v", sv)
	}
	if again := StoreCurrent(s, st, "salt", false); again.Fingerprint() != c.Fingerprint() {
		t.Error("a private value's digest is not stable")
	}
	st.Private = nil
	if plain := StoreCurrent(s, st, "salt", false).Values["content"]; !strings.HasPrefix(plain.Digest, "sha256:") {
		t.Errorf("a readable value: %+v", plain)
	}
}

// A value is shown on the one line after "name = ", maps and objects too,
// nested or not, with keys that are not identifiers quoted.
func TestDisplayValueIsOneLine(t *testing.T) {
	cases := []struct {
		v    cty.Value
		want string
	}{
		{cty.StringVal("a\"b"), `"a\"b"`},
		{cty.NumberIntVal(8081), `8081`},
		{cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), `["a", "b"]`},
		{cty.MapValEmpty(cty.String), `{}`},
		{cty.ObjectVal(map[string]cty.Value{
			"name":      cty.StringVal("blog"),
			"port":      cty.NumberIntVal(8081),
			"not an id": cty.True,
			"nested":    cty.ObjectVal(map[string]cty.Value{"l": cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.NullVal(cty.String)})}),
		}), `{ name = "blog", nested = { l = [1, null] }, "not an id" = true, port = 8081 }`},
		{cty.UnknownVal(cty.String), `(known after apply)`},
	}
	for _, c := range cases {
		if got := DisplayValue(c.v); got != c.want {
			t.Errorf("DisplayValue(%#v) = %s, want %s", c.v, got, c.want)
		}
	}
}
