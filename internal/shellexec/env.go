package shellexec

import (
	"os"
	"strings"
)

// What a child's environment starts from (see "Environment" in doc.go).
//
// toque's own variables (TOQUE_*: the policy server token, the log and
// state settings) are never passed down. A child that runs as toque's own
// user otherwise inherits toque's environment, as Chef's children do. A
// child that runs as another user gets only what a login would give that
// user, plus the locale and time zone.

// secretPrefix starts the names of toque's own variables, which no child
// inherits.
const secretPrefix = "TOQUE_"

// keptForOtherUser reports whether a child that runs as another user keeps
// the variable name from toque's environment: the locale (LANG, LANGUAGE,
// LC_*) and the time zone (TZ). They say how to print, not who is asking,
// and a guard that parses dates or messages should read them the same way
// whoever it runs as.
func keptForOtherUser(name string) bool {
	return name == "LANG" || name == "LANGUAGE" || name == "TZ" || strings.HasPrefix(name, "LC_")
}

// inherited is what a child inherits from base (toque's environment, or
// Spec.BaseEnv): all of it but TOQUE_* for toque's own user, only the
// locale and time zone for another user.
func inherited(base []string, other bool) []string {
	out := make([]string, 0, len(base))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, secretPrefix) {
			continue
		}
		if other && !keptForOtherUser(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Environ is the environment s's process would start with ("NAME=value"
// entries), as Run builds it: resolving s.User and s.Group reads the user
// and group databases, nothing else. It fails as Run would on an invalid
// Spec or an unknown user or group.
func Environ(s Spec) ([]string, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	id, err := resolveIdentity(s.User, s.Group, currentSelf())
	if err != nil {
		return nil, err
	}
	return childEnv(s, id), nil
}

func childEnv(s Spec, id *identity) []string {
	base := s.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	return buildEnv(inherited(base, id.other), id.env, s.Env, s.Path)
}
