package props

import (
	"time"

	"github.com/zclconf/go-cty/cty"
)

func Seconds(v cty.Value) time.Duration {
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Number {
		return 0
	}
	f, _ := v.AsBigFloat().Float64()
	return time.Duration(f * float64(time.Second))
}
