package props

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

func ValidateTimeout(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
		return nil
	}
	f, _ := v.AsBigFloat().Float64()
	if !(f > 0) {
		return fmt.Errorf("timeout must be a number of seconds greater than 0, not %s", v.AsBigFloat().Text('g', -1))
	}
	if f > float64(math.MaxInt64)/float64(time.Second) {
		return fmt.Errorf("timeout %s is too large", v.AsBigFloat().Text('g', -1))
	}
	return nil
}

// ToStrings reads a list or tuple of strings (numbers and bools are
// converted). name is used in errors.
func ToStrings(v cty.Value, name string) ([]string, error) {
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		s, err := convert.Convert(e, cty.String)
		if err != nil || s.IsNull() || !s.IsKnown() {
			return nil, fmt.Errorf("%s must be a list of strings, and %s is not a string", name, e.GoString())
		}
		if strings.IndexByte(s.AsString(), 0) >= 0 {
			return nil, fmt.Errorf("%s: an element contains a NUL byte", name)
		}
		out = append(out, s.AsString())
	}
	return out, nil
}

func StringListVal(xs []string) cty.Value {
	if len(xs) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(xs))
	for i, x := range xs {
		vs[i] = cty.StringVal(x)
	}
	return cty.ListVal(vs)
}

// StringList reads a known list of strings; elements that are not strings
// are skipped.
func StringList(v cty.Value) []string {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() || !v.CanIterateElements() {
		return nil
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if !e.IsNull() && e.Type() == cty.String {
			out = append(out, e.AsString())
		}
	}
	return out
}
