package vcs

import (
	"strings"
	"testing"
)

// FuzzCheckRepository: a repository the check accepts never starts with
// "-", never names a remote helper, and holds no control character.
func FuzzCheckRepository(f *testing.F) {
	for _, s := range []string{"https://example.com/a.git", "git@example.com:a.git", "/srv/a.git", "ext::sh -c x", "-oProxyCommand=x", "ssh://-x/a", "file:///a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkRepository(s) != nil {
			return
		}
		if strings.HasPrefix(s, "-") || strings.Contains(s, "::") || strings.ContainsAny(s, "\x00\n\r") {
			t.Fatalf("accepted %q", s)
		}
		if checkRevision(s) == nil && strings.HasPrefix(s, "-") {
			t.Fatalf("accepted revision %q", s)
		}
	})
}
