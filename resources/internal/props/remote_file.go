package props

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
)

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
