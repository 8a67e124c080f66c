package views

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape makes s safe to print on a reviewer's terminal: control
// characters (but newline and tab), DEL, C1 controls, Unicode bidirectional
// overrides and isolates, and invalid UTF-8 are written as Go escapes
// (\x1b, \u202e, \xff), so that text from recipes, live files or command
// output cannot move the cursor, recolour the screen, rewrite what was
// printed before, or make a line read in another order than it runs
// (Trojan Source). Everything else is kept as it is.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// EscapeLine is Escape for text shown on one line: newlines and tabs are
// escaped too.
func EscapeLine(s string) string {
	s = Escape(s)
	if strings.ContainsAny(s, "\n\t") {
		s = strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(s)
	}
	return s
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c >= 0x80 {
			if c < 0x80 {
				return true
			}
			// Multi-byte: decide rune by rune.
			for _, r := range s[i:] {
				if r == utf8.RuneError || unsafeRune(r) || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
					return true
				}
			}
			return !utf8.ValidString(s[i:])
		}
	}
	return false
}

// unsafeRune reports C1 controls and the bidirectional formatting
// characters that reorder how a line displays.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls (CSI is 0x9b)
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	case r == 0x200e || r == 0x200f || r == 0x061c: // LRM, RLM, ALM
		return true
	}
	return false
}
