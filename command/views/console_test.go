package views

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestConsoleValue(t *testing.T) {
	obj := cty.ObjectVal(map[string]cty.Value{
		"port":     cty.NumberIntVal(8080),
		"hosts":    cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b\n${x}")}),
		"a-b.c":    cty.True,
		"password": cty.StringVal("pw").Mark("sensitive"),
		"empty":    cty.EmptyObjectVal,
		"none":     cty.NullVal(cty.String),
	})
	cases := []struct {
		v         cty.Value
		multiline bool
		want      string
	}{
		{cty.StringVal("x"), false, `"x"`},
		{cty.NumberFloatVal(1.5), false, `1.5`},
		{cty.EmptyTupleVal, true, `[]`},
		{cty.UnknownVal(cty.String), false, `(unknown)`},
		{cty.StringVal("s").Mark("sensitive"), false, `(sensitive)`},
		{obj, false, `{ "a-b.c" = true, empty = {}, hosts = ["a", "b\n$${x}"], none = null, password = (sensitive), port = 8080 }`},
		{obj, true, `{
  "a-b.c" = true
  empty = {}
  hosts = [
    "a",
    "b\n$${x}",
  ]
  none = null
  password = (sensitive)
  port = 8080
}`},
	}
	for _, tc := range cases {
		if got := ConsoleValue(tc.v, tc.multiline); got != tc.want {
			t.Errorf("ConsoleValue(%#v, %v):\n%s\nwant:\n%s", tc.v, tc.multiline, got, tc.want)
		}
	}
}
