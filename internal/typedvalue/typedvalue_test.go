package typedvalue

import (
	"encoding/json"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestRoundTripKeepsTypes(t *testing.T) {
	cases := []cty.Value{
		cty.NilVal,
		cty.StringVal("hello\n"),
		cty.NumberIntVal(420),
		cty.True,
		cty.ListVal([]cty.Value{cty.StringVal("a")}),
		cty.MapVal(map[string]cty.Value{"a": cty.StringVal("b")}),
		cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1)}),
		cty.NullVal(cty.String),
	}
	for _, v := range cases {
		b, err := json.Marshal(Value{v})
		if err != nil {
			t.Fatal(err)
		}
		var got Value
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if v == cty.NilVal {
			if got.Value != cty.NilVal {
				t.Errorf("null decoded as %#v", got.Value)
			}
			continue
		}
		if !got.Value.RawEquals(v) {
			t.Errorf("round trip of %#v gave %#v", v, got.Value)
		}
	}
}

func TestBadInput(t *testing.T) {
	for _, in := range []string{`{}`, `{"value": 1}`, `{"value": 1, "type": "nonsense"}`, `{"value": "x", "type": "number"}`, `[1]`} {
		var v Value
		if err := json.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("%s decoded without an error", in)
		}
	}
}
