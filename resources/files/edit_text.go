package files

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode"

	"github.com/zclconf/go-cty/cty"
)

// What the editors share to work on a file's text: its lines, where new
// lines go, and the regular expressions that find them.

// textLines is a file's text as lines.
type textLines struct {
	lines []string // each without its "\n"
	final bool     // the text ends with a newline (or is empty)
	crlf  bool     // lines end with "\r\n": new lines get the "\r" too
}

func splitText(text string) *textLines {
	if text == "" {
		return &textLines{final: true}
	}
	t := &textLines{final: strings.HasSuffix(text, "\n")}
	t.lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	t.crlf = strings.HasSuffix(t.lines[0], "\r")
	return t
}

// String is the text of t.
func (t *textLines) String() string {
	if len(t.lines) == 0 {
		return ""
	}
	s := strings.Join(t.lines, "\n")
	if t.final {
		s += "\n"
	}
	return s
}

// bare is line i without a "\r" that ends it: what is compared and
// matched.
func (t *textLines) bare(i int) string { return strings.TrimSuffix(t.lines[i], "\r") }

// line is s written as a line of t.
func (t *textLines) line(s string) string {
	if t.crlf {
		return s + "\r"
	}
	return s
}

// insert puts ls before line at (len(t.lines): at the end, after which
// the text ends with a newline).
func (t *textLines) insert(at int, ls ...string) {
	if at >= len(t.lines) {
		t.final = true
	}
	t.lines = append(t.lines[:at], append(append([]string(nil), ls...), t.lines[at:]...)...)
}

// lastMatch is the index of the last line re matches, or -1.
func (t *textLines) lastMatch(re *regexp.Regexp) int {
	for i := len(t.lines) - 1; i >= 0; i-- {
		if re.MatchString(t.bare(i)) {
			return i
		}
	}
	return -1
}

// insertAt is where new lines go: after the last line that matches after
// (at the end: after unset or "EOF", or no line matches), or before the
// last line that matches before (at the start: "BOF"; at the end when no
// line matches), as Ansible's insertafter and insertbefore. where words
// it.
func insertAt(t *textLines, after, before string) (at int, where string, err error) {
	switch {
	case before == "BOF":
		return 0, "at the start", nil
	case before != "":
		re, err := compilePattern(before)
		if err != nil {
			return 0, "", err
		}
		if i := t.lastMatch(re); i >= 0 {
			return i, fmt.Sprintf("before line %d, the last that matches %q", i+1, before), nil
		}
		return len(t.lines), fmt.Sprintf("at the end (no line matches %q)", before), nil
	case after != "" && after != "EOF":
		re, err := compilePattern(after)
		if err != nil {
			return 0, "", err
		}
		if i := t.lastMatch(re); i >= 0 {
			return i + 1, fmt.Sprintf("after line %d, the last that matches %q", i+1, after), nil
		}
		return len(t.lines), fmt.Sprintf("at the end (no line matches %q)", after), nil
	}
	return len(t.lines), "at the end", nil
}

// patterns caches compiled patterns: a plan of 1,000 editors compiles
// each of its few patterns once.
var patterns sync.Map // string → *regexp.Regexp

func compilePattern(p string) (*regexp.Regexp, error) {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	patterns.Store(p, re)
	return re, nil
}

// validatePattern is the validation of a property that holds a regular
// expression matched against one line (special is a value that is not
// one, "EOF" or "BOF", or ""): it must compile (RE2), and must not match
// a newline, which no line holds — a pattern written to span lines.
func validatePattern(typ, prop, special string) func(cty.Value) error {
	return func(v cty.Value) error {
		if v.IsNull() || !v.IsKnown() {
			return nil
		}
		p := v.AsString()
		if special != "" && p == special {
			return nil
		}
		if p == "" {
			return fmt.Errorf("%s is empty: an empty pattern matches every line", prop)
		}
		if _, err := regexp.Compile(p); err != nil {
			return fmt.Errorf("%s %q is not a regular expression (RE2 syntax): %v", prop, p, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			return fmt.Errorf("%s %q is not a regular expression (RE2 syntax): %v", prop, p, err)
		}
		if why := matchesNewline(re); why != "" {
			hint := ""
			if typ == "file_line" {
				hint = ", or use file_block for several lines"
			}
			return fmt.Errorf("%s %q matches across lines (%s), but %s matches one line at a time, without its newline, so it would never match: match within one line%s", prop, p, why, typ, hint)
		}
		return nil
	}
}

// matchesNewline says how re matches a newline: a newline written in the
// pattern (\n, \r or the character itself, alone or in a class that is
// not a broad one such as \s or [^x]), or (?s), which lets . match one.
func matchesNewline(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' || r == '\r' {
				return "it names a newline"
			}
		}
	case syntax.OpAnyChar:
		return "(?s) lets . match a newline"
	case syntax.OpCharClass:
		has := func(c rune) bool {
			for i := 0; i+1 < len(re.Rune); i += 2 {
				if re.Rune[i] <= c && c <= re.Rune[i+1] {
					return true
				}
			}
			return false
		}
		// \s, \D, [^x] hold a tab too: broad classes, harmless on one
		// line. One that holds a newline but no tab names the newline.
		if (has('\n') || has('\r')) && !has('\t') {
			return "a character class names a newline"
		}
	}
	for _, sub := range re.Sub {
		if why := matchesNewline(sub); why != "" {
			return why
		}
	}
	return ""
}

// validateOneLine refuses a value with a line break in it: it must be one
// line of the file.
func validateOneLine(prop, hint string) func(cty.Value) error {
	return func(v cty.Value) error {
		if v.IsNull() || !v.IsKnown() {
			return nil
		}
		if i := strings.IndexAny(v.AsString(), "\n\r"); i >= 0 {
			return fmt.Errorf("%s must be one line, and it holds a line break (at byte %d)%s", prop, i+1, hint)
		}
		return nil
	}
}

// trimmed reports whether s has no white space at either end.
func trimmed(s string) bool {
	return s == strings.TrimFunc(s, unicode.IsSpace)
}

// lineNumbers words line numbers (0-based indexes) for a reason.
func lineNumbers(idx []int) string {
	if len(idx) == 1 {
		return fmt.Sprintf("line %d", idx[0]+1)
	}
	ns := make([]string, len(idx))
	for i, n := range idx {
		ns[i] = fmt.Sprint(n + 1)
	}
	if len(ns) > 6 {
		return fmt.Sprintf("lines %s… (%d lines)", strings.Join(ns[:5], ", "), len(ns))
	}
	return "lines " + strings.Join(ns[:len(ns)-1], ", ") + " and " + ns[len(ns)-1]
}
