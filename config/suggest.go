package config

import (
	"fmt"

	"github.com/agext/levenshtein"
)

// nameSuggestion returns the candidate closest to given, or "" when none is
// close enough to be a likely typo.
func nameSuggestion(given string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := levenshtein.Distance(given, c, nil)
		if d < 3 && (best == "" || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// didYouMean is " Did you mean "x"?" or "".
func didYouMean(given string, candidates []string) string {
	if s := nameSuggestion(given, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}
