package packages

import (
	"fmt"
	"strings"
)

// rpmEVR is an rpm package version, [epoch:]version[-release], as rpm
// and dnf print and parse it. An epoch or release the string leaves out
// is "" (hasEpoch, hasRelease false).
type rpmEVR struct {
	epoch, version, release string
	hasEpoch, hasRelease    bool
}

// String is the version as dnf shows it: the epoch only when it is not 0.
func (v rpmEVR) String() string {
	s := v.version
	if v.hasRelease {
		s += "-" + v.release
	}
	if v.hasEpoch && strings.TrimLeft(v.epoch, "0") != "" {
		s = v.epoch + ":" + s
	}
	return s
}

// parseRPMVersion parses s strictly: rpm itself accepts almost anything
// in a version, but toque passes versions on dnf's command line
// (NAME-VERSION), so only what real packages use is allowed: an epoch of
// digits, a version and a release of letters, digits and . _ + ~ ^, each
// starting with a digit (the version) or a letter or digit (the release),
// no '-' inside either, no "..".
func parseRPMVersion(s string) (rpmEVR, error) {
	var v rpmEVR
	if s == "" {
		return v, fmt.Errorf("the version is empty")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return v, fmt.Errorf("version %q has embedded spaces", s)
	}
	if strings.Contains(s, "..") {
		return v, fmt.Errorf("version %q: \"..\" is not allowed in a version", s)
	}
	rest := s
	if e, r, ok := strings.Cut(rest, ":"); ok {
		if !isDigits(e) {
			return v, fmt.Errorf("version %q: the epoch %q before ':' is not a number", s, e)
		}
		v.epoch, v.hasEpoch, rest = e, true, r
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		v.release, v.hasRelease, rest = rest[i+1:], true, rest[:i]
		if strings.Contains(v.release, "-") {
			return v, fmt.Errorf("version %q: rpm versions have one '-', between the version and the release", s)
		}
		if v.release == "" || !isAlnum(rune(v.release[0])) {
			return v, fmt.Errorf("version %q: the release after '-' must start with a letter or digit", s)
		}
	}
	v.version = rest
	if v.version == "" || v.version[0] < '0' || v.version[0] > '9' {
		return v, fmt.Errorf("version %q does not start with a digit", s)
	}
	for _, part := range []string{v.version, v.release} {
		for _, c := range part {
			if !isAlnum(c) && !strings.ContainsRune("._+~^", c) {
				return v, fmt.Errorf("version %q: %q is not allowed in an rpm version (only letters, digits and . _ + ~ ^, with epoch: and -release)", s, string(c))
			}
		}
	}
	return v, nil
}

// compareRPMVersions orders two [epoch:]version[-release] strings as
// rpm's own comparison (rpm.vercmp, rpmverCmp) does: epochs (missing is
// 0), then versions, then releases, each with rpmvercmp; a missing
// release sorts before any release. Strings that do not parse are
// compared as they are.
func compareRPMVersions(a, b string) int {
	va, ea := splitEVR(a)
	vb, eb := splitEVR(b)
	if ea != nil || eb != nil {
		return rpmvercmp(a, b)
	}
	if c := rpmvercmp(orZero(va.epoch), orZero(vb.epoch)); c != 0 {
		return c
	}
	if c := rpmvercmp(va.version, vb.version); c != 0 {
		return c
	}
	return rpmvercmp(va.release, vb.release)
}

// splitEVR splits like parseRPMVersion without its strictness (what the
// rpm database holds is compared as it is).
func splitEVR(s string) (rpmEVR, error) {
	var v rpmEVR
	rest := s
	if e, r, ok := strings.Cut(rest, ":"); ok && isDigits(e) {
		v.epoch, v.hasEpoch, rest = e, true, r
	}
	if i := strings.LastIndexByte(rest, '-'); i >= 0 {
		v.release, v.hasRelease, rest = rest[i+1:], true, rest[:i]
	}
	v.version = rest
	if v.version == "" {
		return v, fmt.Errorf("no version in %q", s)
	}
	return v, nil
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// rpmPinMatches reports whether version v (as the provider reports it,
// with its release) is what pin asks for. dnf reads NAME-VERSION as rpm
// reads a dependency: a part the pin leaves out matches any — "2.0"
// matches 2.0-1 and 1:2.0-3.el9, "2.0-1" matches 2.0-1 of any epoch,
// "0:2.0-1" only epoch 0.
func rpmPinMatches(pin, v string) bool {
	p, err := parseRPMVersion(pin)
	if err != nil {
		return pin == v
	}
	have, err := splitEVR(v)
	if err != nil {
		return false
	}
	if p.hasEpoch && rpmvercmp(orZero(p.epoch), orZero(have.epoch)) != 0 {
		return false
	}
	if rpmvercmp(p.version, have.version) != 0 {
		return false
	}
	return !p.hasRelease || rpmvercmp(p.release, have.release) == 0
}

// rpmvercmp is rpm's comparison of two version strings (or two
// releases): they are cut into runs of digits and runs of letters,
// anything else separating them; runs are compared pairwise, numbers as
// numbers (leading zeros ignored), letters as bytes, a number newer than
// letters. '~' sorts before anything, even the end of the string
// (1.0~rc1 < 1.0); '^' sorts after the end but before anything else
// (1.0 < 1.0^git1 < 1.0.1). When one string runs out, the longer one is
// newer.
func rpmvercmp(a, b string) int {
	if a == b {
		return 0
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		for i < len(a) && !isAlnumByte(a[i]) && a[i] != '~' && a[i] != '^' {
			i++
		}
		for j < len(b) && !isAlnumByte(b[j]) && b[j] != '~' && b[j] != '^' {
			j++
		}
		ca, cb := byteAt(a, i), byteAt(b, j)
		if ca == '~' || cb == '~' {
			if ca != '~' {
				return 1
			}
			if cb != '~' {
				return -1
			}
			i, j = i+1, j+1
			continue
		}
		if ca == '^' || cb == '^' {
			switch {
			case i >= len(a):
				return -1
			case j >= len(b):
				return 1
			case ca != '^':
				return 1
			case cb != '^':
				return -1
			}
			i, j = i+1, j+1
			continue
		}
		if i >= len(a) || j >= len(b) {
			break
		}
		numeric := isDigitByte(a[i])
		class := isAlphaByte
		if numeric {
			class = isDigitByte
		}
		ei, ej := i, j
		for ei < len(a) && class(a[ei]) {
			ei++
		}
		for ej < len(b) && class(b[ej]) {
			ej++
		}
		sa, sb := a[i:ei], b[j:ej]
		if sb == "" {
			// Runs of different kinds: a number is newer than letters.
			if numeric {
				return 1
			}
			return -1
		}
		if numeric {
			sa, sb = strings.TrimLeft(sa, "0"), strings.TrimLeft(sb, "0")
			if len(sa) != len(sb) {
				if len(sa) > len(sb) {
					return 1
				}
				return -1
			}
		}
		if c := strings.Compare(sa, sb); c != 0 {
			return c
		}
		i, j = ei, ej
	}
	switch {
	case i >= len(a) && j >= len(b):
		return 0
	case i >= len(a):
		return -1
	}
	return 1
}

func byteAt(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }
func isAlphaByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnumByte(c byte) bool { return isDigitByte(c) || isAlphaByte(c) }
