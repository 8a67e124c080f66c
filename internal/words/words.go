// Package words is the wording of messages people read: lists of names,
// "did you mean" suggestions for misspelt ones, and text from outside
// (a command's output) made safe to print on a terminal.
package words

import (
	"fmt"
	"strings"
)

// Quoted formats names as "a", "b" and "c" ((none) for no names).
func Quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return Join(q, "(none)")
}

// Join formats items as a, b and c; empty is what no items read as.
func Join(items []string, empty string) string {
	switch len(items) {
	case 0:
		return empty
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
