package packages

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources/internal/props"
)

// TestRedactURLHidesAllOfTheUserinfo: a password may hold "@", ":" or
// "/"-less junk; everything before the host's "@" is hidden, in a URL
// alone or inside a message, and a URL that does not parse is not echoed
// with its credentials.
func TestRedactURLHidesAllOfTheUserinfo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://alice:s3cr3t@host/x", "https://***@host/x"},
		{"https://alice:p@ss@host/x", "https://***@host/x"},
		{"fetching https://alice:p@ss@host/x failed: 404", "fetching https://***@host/x failed: 404"},
		{"https://host/path@with-at", "https://host/path@with-at"},
		{"two https://a:b@h1/x and http://c:d@h2/", "two https://***@h1/x and http://***@h2/"},
	} {
		if got := props.RedactURL(tc.in); got != tc.want {
			t.Errorf("redactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"https://alice:pa/ss@host", "https://alice:p%zz@host/x"} {
		for _, err := range []error{props.ValidateHTTPURL(bad), validateRepoURI(cty.StringVal(bad))} {
			if err == nil || strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "ss@") || strings.Contains(err.Error(), "zz") {
				t.Errorf("%q: error %v", bad, err)
			}
		}
	}
}
