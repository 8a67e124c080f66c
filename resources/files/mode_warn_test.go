package files

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestWarnDecimalMode(t *testing.T) {
	cases := []struct {
		in   cty.Value
		want string // a part of the warning; "" for none
	}{
		{cty.NumberIntVal(644), `mode 01204, not 0644`},
		{cty.NumberIntVal(755), `write the mode as a string: mode = "0755"`},
		{cty.NumberIntVal(2775), `mode 05327`},
		{cty.NumberIntVal(420), `which is the mode 0644. If you meant 0420`},
		{cty.NumberIntVal(493), ""},   // 0755 in decimal, has a 9: deliberate
		{cty.NumberIntVal(0), ""},     // too short to read as a mode
		{cty.NumberIntVal(99999), ""}, // not a mode either way
		{cty.NumberFloatVal(644.5), ""},
		{cty.StringVal("644"), ""},
		{cty.NullVal(cty.Number), ""},
		{cty.UnknownVal(cty.Number), ""},
	}
	for _, c := range cases {
		got := WarnDecimalMode(c.in)
		if (c.want == "") != (got == "") || !strings.Contains(strings.ToLower(got), strings.ToLower(c.want)) {
			t.Errorf("WarnDecimalMode(%#v) = %q, want it to contain %q", c.in, got, c.want)
		}
	}
}
