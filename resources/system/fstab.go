package system

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
)

// fstab is /etc/fstab as toque reads it (fstab(5), as libmount parses
// it): one entry per line, its fields separated by blanks, a space, tab
// or backslash inside a field written as an octal escape (\040), a line
// whose first non-blank character is "#" a comment. toque reads the whole
// file and changes only the lines of the entries a resource manages
// (those naming its mount point, or its swap file): every other line,
// comments and blank lines included, is kept byte for byte.
type fstab struct {
	lines []fstabLine
	// exists is false when there is no file; text is false when its bytes
	// are not normalised UTF-8, which toque could not write back unchanged.
	exists, text bool
	// newline: the last line ends with one (or the file is empty).
	newline bool
}

// fstabLine is one line, and the entry it holds (nil for a comment, a
// blank line or a line with fewer than two fields).
type fstabLine struct {
	raw   string
	entry *fstabEntry
}

// fstabEntry is one entry's fields, unescaped. dump and pass are 0 when
// the line leaves them out, as libmount reads it.
type fstabEntry struct {
	device, mountPoint, fstype string
	options                    []string
	dump, pass                 int
}

// readFstab reads and parses path; a file that does not exist is an empty
// fstab.
func readFstab(path string) (*fstab, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &fstab{text: true, newline: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	f := parseFstab(string(data))
	f.exists = true
	f.text = utf8.Valid(data) && cty.StringVal(string(data)).AsString() == string(data)
	return f, nil
}

// parseFstab splits text into lines and parses each.
func parseFstab(text string) *fstab {
	f := &fstab{text: true, exists: true, newline: text == "" || strings.HasSuffix(text, "\n")}
	if text == "" {
		return f
	}
	for _, raw := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		f.lines = append(f.lines, fstabLine{raw: raw, entry: parseFstabEntry(raw)})
	}
	return f
}

// parseFstabEntry parses one line, or returns nil when it holds no entry.
func parseFstabEntry(raw string) *fstabEntry {
	line := strings.TrimLeft(raw, " \t")
	if line == "" || line[0] == '#' {
		return nil
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return nil
	}
	e := &fstabEntry{device: fstabUnescape(fields[0]), mountPoint: fstabUnescape(fields[1])}
	if len(fields) > 2 {
		e.fstype = fstabUnescape(fields[2])
	}
	if len(fields) > 3 {
		e.options = strings.Split(fstabUnescape(fields[3]), ",")
	}
	if len(fields) > 4 {
		e.dump, _ = strconv.Atoi(fields[4])
	}
	if len(fields) > 5 {
		e.pass, _ = strconv.Atoi(fields[5])
	}
	return e
}

// String is the file's text.
func (f *fstab) String() string {
	var b strings.Builder
	for i, l := range f.lines {
		b.WriteString(l.raw)
		if i < len(f.lines)-1 || f.newline {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// find returns the indexes of the lines whose entries match.
func (f *fstab) find(match func(*fstabEntry) bool) []int {
	var out []int
	for i, l := range f.lines {
		if l.entry != nil && match(l.entry) {
			out = append(out, i)
		}
	}
	return out
}

// linesAt joins the raw lines at idx, each ending with a newline ("" for
// none): what a plan shows as the entries' text.
func (f *fstab) linesAt(idx []int) string {
	var b strings.Builder
	for _, i := range idx {
		b.WriteString(f.lines[i].raw + "\n")
	}
	return b.String()
}

// withEntry is the text of f with the entries that match replaced by
// line: the first keeps its place, the others are removed; with none, line
// is appended. An empty line removes them all.
func (f *fstab) withEntry(match func(*fstabEntry) bool, line string) string {
	out := &fstab{newline: f.newline || len(f.lines) == 0}
	placed := false
	for _, l := range f.lines {
		if l.entry == nil || !match(l.entry) {
			out.lines = append(out.lines, l)
			continue
		}
		if !placed && line != "" {
			out.lines = append(out.lines, fstabLine{raw: line, entry: parseFstabEntry(line)})
		}
		placed = true
	}
	if !placed && line != "" {
		out.lines = append(out.lines, fstabLine{raw: line, entry: parseFstabEntry(line)})
		out.newline = true
	}
	if len(out.lines) == 0 {
		return ""
	}
	return out.String()
}

// fstabEscape writes a field as fstab(5) wants it: a space, tab, newline
// or backslash as an octal escape.
func fstabEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// fstabUnescape reads the octal escapes of a field of fstab or of
// /proc/self/mountinfo (\040 is a space); a backslash not followed by
// three octal digits is kept as it is, as libmount keeps it.
func fstabUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			n, _ := strconv.ParseUint(s[i+1:i+4], 8, 8)
			b.WriteByte(byte(n))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// format is the entry as one fstab line, fields separated by one space.
func (e *fstabEntry) format() string {
	opts := strings.Join(e.options, ",")
	if opts == "" {
		opts = "defaults"
	}
	return strings.Join([]string{fstabEscape(e.device), fstabEscape(e.mountPoint), fstabEscape(e.fstype), fstabEscape(opts), strconv.Itoa(e.dump), strconv.Itoa(e.pass)}, " ")
}

// sameMountPoint compares a mount point as fstab writes it with a
// canonical path ("/srv/" is "/srv").
func sameMountPoint(field, mp string) bool {
	if !strings.HasPrefix(field, "/") {
		return false
	}
	return filepath.Clean(field) == mp
}
