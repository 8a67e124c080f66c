package packages

import (
	"fmt"
	"strconv"
	"strings"
)

// debVersion is a Debian package version, [epoch:]upstream[-revision], as
// dpkg parses it (deb-version(7)).
type debVersion struct {
	epoch    int
	upstream string
	revision string
}

// parseDebVersion parses s as dpkg does, but strictly: what dpkg only
// warns about (a version that does not start with a digit, a character
// outside [A-Za-z0-9.+~-:]) is an error here, as apt refuses such a
// version on its command line or never matches it.
func parseDebVersion(s string) (debVersion, error) {
	var v debVersion
	if s == "" {
		return v, fmt.Errorf("the version is empty")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return v, fmt.Errorf("version %q has embedded spaces", s)
	}
	rest := s
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		e := rest[:i]
		if e == "" {
			return v, fmt.Errorf("version %q: the epoch before ':' is empty", s)
		}
		n, err := strconv.Atoi(e)
		if err != nil || n < 0 || !isDigits(e) {
			return v, fmt.Errorf("version %q: the epoch %q is not a number", s, e)
		}
		v.epoch = n
		rest = rest[i+1:]
		if rest == "" {
			return v, fmt.Errorf("version %q: nothing after the epoch's ':'", s)
		}
	}
	if i := strings.LastIndexByte(rest, '-'); i >= 0 {
		v.revision = rest[i+1:]
		rest = rest[:i]
		if v.revision == "" {
			return v, fmt.Errorf("version %q: the revision after the last '-' is empty", s)
		}
	}
	v.upstream = rest
	if v.upstream == "" {
		return v, fmt.Errorf("version %q: the upstream version is empty", s)
	}
	if c := v.upstream[0]; c < '0' || c > '9' {
		return v, fmt.Errorf("version %q does not start with a digit", s)
	}
	for _, c := range v.upstream {
		if !isAlnum(c) && !strings.ContainsRune(".+~-:", c) {
			return v, fmt.Errorf("version %q: %q is not allowed in a version (only letters, digits and . + ~ - :)", s, string(c))
		}
	}
	for _, c := range v.revision {
		if !isAlnum(c) && !strings.ContainsRune(".+~", c) {
			return v, fmt.Errorf("version %q: %q is not allowed in a revision (only letters, digits and . + ~)", s, string(c))
		}
	}
	return v, nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func isAlnum(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// compareDebVersions orders two Debian versions as dpkg --compare-versions
// does: negative when a < b, 0 when equal, positive when a > b. A version
// that does not parse orders as its raw string, after every valid one.
func compareDebVersions(a, b string) int {
	va, ea := parseDebVersion(a)
	vb, eb := parseDebVersion(b)
	switch {
	case ea != nil && eb != nil:
		return strings.Compare(a, b)
	case ea != nil:
		return 1
	case eb != nil:
		return -1
	}
	if va.epoch != vb.epoch {
		if va.epoch < vb.epoch {
			return -1
		}
		return 1
	}
	if c := verrevcmp(va.upstream, vb.upstream); c != 0 {
		return c
	}
	return verrevcmp(va.revision, vb.revision)
}

// order is dpkg's weight of a non-digit character: '~' sorts before
// everything, even the end of the string; letters before other symbols.
func order(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return 0
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		return int(c)
	case c == '~':
		return -1
	case c != 0:
		return int(c) + 256
	}
	return 0
}

// verrevcmp is dpkg's comparison of an upstream version or a revision:
// alternating non-digit parts (compared by order) and digit parts
// (compared as numbers).
func verrevcmp(a, b string) int {
	at := func(s string, i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		first := 0
		for (i < len(a) && !digit(a[i])) || (j < len(b) && !digit(b[j])) {
			ac, bc := order(at(a, i)), order(at(b, j))
			if ac != bc {
				return sign(ac - bc)
			}
			i++
			j++
		}
		for at(a, i) == '0' {
			i++
		}
		for at(b, j) == '0' {
			j++
		}
		for digit(at(a, i)) && digit(at(b, j)) {
			if first == 0 {
				first = int(a[i]) - int(b[j])
			}
			i++
			j++
		}
		if digit(at(a, i)) {
			return 1
		}
		if digit(at(b, j)) {
			return -1
		}
		if first != 0 {
			return sign(first)
		}
	}
	return 0
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
