package words

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s safe to print on a terminal: every character that
// could move the cursor, change colours, set the window title, reorder the
// text or end the line is shown escaped instead — C0 controls but tab
// (ESC is \x1b, a newline \n), DEL, C1 controls (U+0080–U+009F, which some
// terminals read as ESC sequences), bidirectional overrides and isolates,
// the Unicode line and paragraph separators, and bytes that are not UTF-8
// (\xNN). Everything else, backslashes included, is left as it is: the
// result is for people, not for parsing back.
func Printable(s string) string {
	i := strings.IndexFunc(s, unsafeRune)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unsafeRune(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional marks, embeddings, overrides, isolates
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	}
	if r < 0x100 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}
