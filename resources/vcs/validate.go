package vcs

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/zclconf/go-cty/cty"
)

// allowedSchemes are the transports a repository URL may name: git's
// own, never a remote helper (ext::, fd::, or a helper's scheme).
var allowedSchemes = map[string]bool{"https": true, "http": true, "ssh": true, "git": true, "file": true, "git+ssh": true, "ssh+git": true}

// checkRepository refuses a repository that git could read as an option
// or hand to a remote helper: a leading "-", "TRANSPORT::ADDRESS" (ext::
// runs a command), a scheme git does not speak itself, an ssh host or
// user starting with "-" (ssh would take it as an option), a relative
// path (resolved against toque's working directory), control characters.
func checkRepository(s string) error {
	switch {
	case s == "":
		return errors.New("repository must not be empty")
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("repository %q starts with \"-\", which git would read as an option", s)
	case strings.TrimSpace(s) != s:
		return fmt.Errorf("repository %q starts or ends with white space", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("repository %q holds a control character", s)
		}
	}
	if strings.Contains(s, "::") {
		return fmt.Errorf("repository %q uses git's TRANSPORT::ADDRESS form, which runs a remote helper (ext:: runs any command); toque allows only https, http, ssh, git and file repositories", s)
	}
	if i := strings.Index(s, "://"); i >= 0 {
		scheme := strings.ToLower(s[:i])
		if !allowedSchemes[scheme] {
			return fmt.Errorf("repository %q uses the %q transport; toque allows only https, http, ssh, git and file", s, scheme)
		}
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("repository %q is not a URL: %v", s, err)
		}
		if scheme == "file" {
			if u.Host != "" && u.Host != "localhost" {
				return fmt.Errorf("repository %q names a host in a file URL", s)
			}
			return nil
		}
		if u.Host == "" {
			return fmt.Errorf("repository %q has no host", s)
		}
		if strings.HasPrefix(u.Hostname(), "-") || (u.User != nil && strings.HasPrefix(u.User.Username(), "-")) {
			return fmt.Errorf("repository %q has a host or user starting with \"-\", which ssh would read as an option", s)
		}
		return nil
	}
	if strings.HasPrefix(s, "/") {
		return nil // a local repository
	}
	// scp-like [user@]host:path: only when no "/" comes before the first
	// ":" (git's own rule).
	if i := strings.IndexByte(s, ':'); i > 0 && !strings.Contains(s[:i], "/") {
		host := s[:i]
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			if strings.HasPrefix(host, "-") {
				return fmt.Errorf("repository %q has a user starting with \"-\", which ssh would read as an option", s)
			}
			host = host[at+1:]
		}
		if host == "" || strings.HasPrefix(host, "-") {
			return fmt.Errorf("repository %q has an empty host or one starting with \"-\", which ssh would read as an option", s)
		}
		return nil
	}
	return fmt.Errorf("repository %q is a relative path; give an absolute path or a URL (toque does not resolve paths against its working directory)", s)
}

// fullCommit matches a full commit id (SHA-1 or SHA-256).
var fullCommit = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// checkRefName refuses what git check-ref-format refuses in a branch or
// tag name, and a name git could read as an option.
func checkRefName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s must not be empty", what)
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("%s %q starts with \"-\", which git would read as an option", what, s)
	case strings.Contains(s, ".."), strings.Contains(s, "@{"), strings.Contains(s, "//"),
		strings.HasSuffix(s, "/"), strings.HasSuffix(s, "."), strings.HasSuffix(s, ".lock"),
		strings.HasPrefix(s, "/"), s == "@":
		return fmt.Errorf("%s %q is not a valid git reference name", what, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) || strings.ContainsRune("~^:?*[\\", r) {
			return fmt.Errorf("%s %q holds %q, which a git reference name cannot", what, s, r)
		}
	}
	for _, c := range strings.Split(s, "/") {
		if strings.HasPrefix(c, ".") {
			return fmt.Errorf("%s %q has a component starting with \".\", which a git reference name cannot", what, s)
		}
	}
	return nil
}

// validRemote is a remote's name: what git remote add accepts, less what
// could be read as an option.
var validRemote = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

func validateString(check func(string) error) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		return check(v.AsString())
	}
}

func checkRevision(s string) error {
	if fullCommit.MatchString(s) || s == "HEAD" {
		return nil
	}
	return checkRefName("revision", strings.TrimPrefix(strings.TrimPrefix(s, "refs/heads/"), "refs/tags/"))
}

func checkRemote(s string) error {
	if !validRemote.MatchString(s) || strings.HasSuffix(s, ".lock") {
		return fmt.Errorf("remote %q is not a remote name: letters, digits, \"_\", \".\" and \"-\", not first", s)
	}
	return nil
}

func checkBranch(s string) error {
	if s == "HEAD" {
		return errors.New(`checkout_branch cannot be "HEAD"`)
	}
	return checkRefName("checkout_branch", s)
}
