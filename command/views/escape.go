package views

import (
	"strings"

	"github.com/toquehq/toque/internal/words"
)

// Escape makes s safe to print on a reviewer's terminal, keeping its
// lines: within each line, control characters (but tab), DEL, C1
// controls, Unicode bidirectional overrides and isolates, line separators
// and invalid UTF-8 are written as Go escapes (\x1b, \u202e, \xff) by
// words.Printable, so that text from recipes, live files or command output
// cannot move the cursor, recolour the screen, rewrite what was printed
// before, or make a line read in another order than it runs (Trojan
// Source). Everything else is kept as it is.
func Escape(s string) string {
	if !strings.Contains(s, "\n") {
		return words.Printable(s)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = words.Printable(l)
	}
	return strings.Join(lines, "\n")
}

// EscapeLine is Escape for text shown on one line: newlines are escaped
// too (\n).
func EscapeLine(s string) string { return words.Printable(s) }
