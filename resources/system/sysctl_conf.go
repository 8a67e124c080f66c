package system

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// How sysctl persists a key. Without conf_file, in a file of
// /etc/sysctl.d that holds that key alone and that only toque writes
// (99-toque-KEY.conf): the comment Chef writes, then KEY = VALUE, under
// toque's header. With conf_file, as a block of a file that many keys
// share (90-hardening.conf): the key's comment lines, then its line. A
// block is the key's line and the comment lines right above it; toque
// rewrites a key's block in place (a new key goes at the end, so a new
// file holds its keys in the order they are applied), and keeps every
// other line of the file as it is.

// confFileRE is the names a conf_file may have: a file of the directory
// that systemd-sysctl and `sysctl --system` read (only *.conf files).
var confFileRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.@+-]*\.conf$`)

func validateConfFile(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if s := v.AsString(); !confFileRE.MatchString(s) {
		return fmt.Errorf("conf_file %q must be the name of a file of /etc/sysctl.d ending in .conf (letters, digits, \"_\", \".\", \"@\", \"+\" and \"-\"; no \"/\"): sysctl reads no other", s)
	}
	return nil
}

// normalizeComment makes comment a list of lines: Chef takes a string or
// a list of strings.
func normalizeComment(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() {
		return v, nil
	}
	if v.Type() == cty.String {
		return cty.ListVal([]cty.Value{v}), nil
	}
	l, err := convert.Convert(v, cty.List(cty.String))
	if err != nil {
		return cty.NilVal, errors.New("comment must be a string or a list of strings")
	}
	if l.LengthInt() == 0 {
		return cty.ListValEmpty(cty.String), nil
	}
	return l, nil
}

func validateComment(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() || !v.CanIterateElements() {
		return nil
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			return errors.New("comment: a line must not be null")
		}
		if strings.ContainsAny(e.AsString(), "\n\r\x00") {
			return errors.New("comment: each element is one line of the file; write several lines as several elements")
		}
	}
	return nil
}

// commentLines is the comment as the file holds it: "# LINE" each, the
// line stripped as Chef strips it.
func commentLines(comments []string) string {
	var b strings.Builder
	for _, c := range comments {
		if c = strings.TrimSpace(c); c == "" {
			b.WriteString("#\n")
		} else {
			b.WriteString("# " + c + "\n")
		}
	}
	return b.String()
}

// keyBlock is what persists key = value in a shared file.
func keyBlock(key, value string, comments []string) string {
	return commentLines(comments) + key + " = " + value + "\n"
}

// confHeader opens a shared file toque creates; the blank line after it
// keeps it out of the first key's comment.
func confHeader(name string) string {
	return fmt.Sprintf("# Managed by toque (sysctl, %s): the keys below are set by toque's sysctl resources, and changes made to them here are undone by its next apply.\n\n", name)
}

// sysctlLineKey is the key a line of a sysctl.d file sets, dotted, or ""
// for a comment, a blank line or a line that sets none. A key may be
// written as a path, and after a "-" (sysctl.d(5): ignore a failure).
func sysctlLineKey(line string) string {
	s := strings.TrimSpace(line)
	if s == "" || s[0] == '#' || s[0] == ';' {
		return ""
	}
	k, _, ok := strings.Cut(s, "=")
	if !ok {
		return ""
	}
	nk, err := normalizeSysctlKey(cty.StringVal(strings.TrimPrefix(strings.TrimSpace(k), "-")))
	if err != nil || nk == cty.NilVal {
		return ""
	}
	return nk.AsString()
}

func isCommentLine(line string) bool {
	s := strings.TrimSpace(line)
	return s != "" && (s[0] == '#' || s[0] == ';')
}

// keyBlocks finds key's blocks in lines: [start, end) ranges, each its
// comment lines and its line.
func keyBlocks(lines []string, key string) [][2]int {
	var out [][2]int
	for i, l := range lines {
		if sysctlLineKey(l) != key {
			continue
		}
		start := i
		for start > 0 && isCommentLine(lines[start-1]) && (len(out) == 0 || start-1 >= out[len(out)-1][1]) {
			start--
		}
		out = append(out, [2]int{start, i + 1})
	}
	return out
}

// splitLines splits text into lines without their newlines.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// keyText is the text of key's blocks in a shared file ("" for none).
func keyText(text, key string) (string, int) {
	lines := splitLines(text)
	blocks := keyBlocks(lines, key)
	var b strings.Builder
	for _, r := range blocks {
		for _, l := range lines[r[0]:r[1]] {
			b.WriteString(l + "\n")
		}
	}
	return b.String(), len(blocks)
}

// withKeyBlock is text with key's blocks replaced by block (the first
// keeps its place; with none, block is appended; an empty block removes
// them). A file that did not exist gets the header first.
func withKeyBlock(text string, exists bool, name, key, block string) string {
	lines := splitLines(text)
	blocks := keyBlocks(lines, key)
	var out []string
	next := 0
	for i, r := range blocks {
		out = append(out, lines[next:r[0]]...)
		if i == 0 && block != "" {
			out = append(out, splitLines(block)...)
		}
		next = r[1]
	}
	out = append(out, lines[next:]...)
	if len(blocks) == 0 && block != "" {
		if !exists {
			out = splitLines(confHeader(name))
		}
		out = append(out, splitLines(block)...)
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}
