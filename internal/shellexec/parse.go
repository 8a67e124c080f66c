package shellexec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseUmask reads a umask as written in configuration: a string is octal
// ("022", "0022", "0o022"); a number is taken as its value (18 is 022, as in
// Chef, where an Integer umask is not reinterpreted). The result is between
// 0 and 0777.
func ParseUmask(v any) (int, error) {
	var n int64
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		s = strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O")
		if s == "" {
			return 0, fmt.Errorf("invalid umask %q: want an octal number such as \"022\"", x)
		}
		u, err := strconv.ParseUint(s, 8, 32)
		if err != nil {
			return 0, fmt.Errorf("invalid umask %q: want an octal number such as \"022\"", x)
		}
		if u > 0o777 {
			return 0, fmt.Errorf("invalid umask %q: must be between 0 and 0777", x)
		}
		return int(u), nil
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint32:
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || x < 0 || x > 0o777 {
			return 0, fmt.Errorf("invalid umask %v: must be a whole number between 0 and 0777 (511)", x)
		}
		n = int64(x)
	default:
		return 0, fmt.Errorf("invalid umask of type %T: want a string such as \"022\" or a number", v)
	}
	if n < 0 || n > 0o777 {
		return 0, fmt.Errorf("invalid umask %d: must be between 0 and 0777 (511)", n)
	}
	return int(n), nil
}

// ValidReturns checks a list of allowed exit codes: each between 0 and 255.
// An empty list is valid and means [0].
func ValidReturns(codes []int) error {
	for _, c := range codes {
		if c < 0 || c > 255 {
			return fmt.Errorf("invalid exit code %d: must be between 0 and 255", c)
		}
	}
	return nil
}
