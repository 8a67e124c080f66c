package words

import (
	"fmt"

	"github.com/agext/levenshtein"
)

// Closest returns the candidate closest to given, or "" when none is
// close enough to be a likely typo (an edit distance of at most 2).
func Closest(given string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := levenshtein.Distance(given, c, nil)
		if d < 3 && (best == "" || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// DidYouMean is ` Did you mean "x"?` (with a leading space, to follow a
// sentence) when a candidate is close to given, or "".
func DidYouMean(given string, candidates []string) string {
	if s := Closest(given, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}
