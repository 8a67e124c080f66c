package props

import (
	"net/url"
	"regexp"
)

// userinfoInURL finds the user:password@ part of URLs inside any text (an
// error message, a line of apt's output).
// It runs to the last "@" of the authority (which ends at "/", "?", "#"
// or a space), so a password holding "@" is hidden whole.
var userinfoInURL = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#\s]*@`)

// RedactURL hides the credentials a URL carries: https://user:secret@host/x
// becomes https://***@host/x. Text that is not a URL is redacted the same
// wherever a URL appears in it.
func RedactURL(s string) string {
	return userinfoInURL.ReplaceAllString(s, "${1}***@")
}

// HasCredentials reports whether a URL carries a user or password.
func HasCredentials(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return userinfoInURL.MatchString(s)
	}
	return u.User != nil
}
