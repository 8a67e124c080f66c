package props

import (
	"github.com/zclconf/go-cty/cty"
)

// StringOr is v's string, "" when v is not a known string.
func StringOr(v cty.Value) string {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}
