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

func TestStoreValueHidesSensitiveAndLarge(t *testing.T) {
	content := &resources.Property{Name: "content", Type: cty.String, Content: true}
	sv := StoreValue(content, cty.StringVal("secret"), "salt", true)
	if sv.Value != nil || sv.Display != Sensitive || sv.Digest[:12] != "hmac-sha256:" {
		t.Errorf("sensitive value stored as %+v", sv)
	}
	sv = StoreValue(content, cty.StringVal("x"), "salt", false)
	if sv.Value != nil || sv.Size != 1 {
		t.Errorf("content stored in full: %+v", sv)
	}
	mode := &resources.Property{Name: "mode", Type: cty.String}
	sv = StoreValue(mode, cty.StringVal("0644"), "salt", false)
	if sv.Value == nil || sv.Display != `"0644"` {
		t.Errorf("small value not kept: %+v", sv)
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
	if !strings.HasPrefix(sv.Digest, "hmac-sha256:") || sv.Value != nil || sv.Display != "(9 bytes, private)" {
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
