package props

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

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

func Seconds(v cty.Value) time.Duration {
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Number {
		return 0
	}
	f, _ := v.AsBigFloat().Float64()
	return time.Duration(f * float64(time.Second))
}

// StringOr is v's string, "" when v is not a known string.
func StringOr(v cty.Value) string {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// NormalizeChecksum lower-cases a sha256 and checks it is 64 hex digits.
func NormalizeChecksum(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return v, nil
	}
	s := strings.ToLower(strings.TrimSpace(v.AsString()))
	if len(s) != 64 {
		return cty.NilVal, fmt.Errorf("checksum must be a sha256: 64 hexadecimal digits, not %d characters", len(v.AsString()))
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return cty.NilVal, fmt.Errorf("checksum must be a sha256: 64 hexadecimal digits, and %q is not one", string(r))
	}
	return cty.StringVal(s), nil
}

// ValidateHTTPURL checks an http or https URL with a host. The error
// never shows the URL's credentials.
func ValidateHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		// (Not echoed: what does not parse may hold a password that a
		// redaction cannot find.)
		return errors.New("a source is not a URL: it does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s is not an http or https URL", RedactURL(s))
	}
	if u.Host == "" {
		return fmt.Errorf("%s has no host", RedactURL(s))
	}
	return nil
}

func PositiveInt(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
			return nil
		}
		bf := v.AsBigFloat()
		if !bf.IsInt() || bf.Sign() <= 0 {
			return fmt.Errorf("%s must be a whole number greater than 0, not %s", name, bf.Text('g', -1))
		}
		return nil
	}
}
