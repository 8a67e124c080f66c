package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A scrubber takes out of toque's output what differs from one run, one
// machine or one user to the next, so that a script can compare the rest
// with its golden files byte for byte:
//
//   - the script's directories: $ROOT (the scratch root the recipes
//     manage), $EXAMPLES (the repository's examples/) and $WORK;
//   - the host name where toque names the host ("actions on $HOSTNAME:");
//   - the user and group a file is left with ("left as it is ($USER)"),
//     which are root's or nobody's depending on who runs the tests;
//   - digests, new on every run for a plan: each becomes <digest N>, N
//     counting the distinct digests the script's toque runs printed, so
//     that a golden file still shows which digests are the same; git
//     commits (of recipes that name the script's paths) become <commit N>;
//   - times (<time>), durations (… ms, …s), process ids (pid <pid>), and
//     the short revision of a policy lock (<revision>), identity of a
//     cookbook (<id>) and commit (at <commit>), which digest recipes that
//     name the script's paths.
//
// Lengths change, but not where lines break: toque wraps its text before
// the scrubber sees it, and a script's directories have the same length on
// every run (scriptWorkRoot).
type scrubber struct {
	paths    []scrubPattern
	patterns []scrubPattern
	digests  []string // in order of first appearance
	known    string   // the file that keeps them from one run to the next
}

type scrubPattern struct {
	re   *regexp.Regexp
	with string
}

// Patterns that do not depend on the script.
var timePatterns = []scrubPattern{
	{regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"},
	{regexp.MustCompile(`\b\d{8}T\d{6}(\.\d+)?Z`), "<time>"},
	{regexp.MustCompile(`\b(exit -?\d+) in \d+ ms\b`), "$1 in … ms"},
	{regexp.MustCompile(`\bread in \d+ ms\b`), "read in … ms"},
	{regexp.MustCompile(`\b(complete|failed[^:\n]*) after (\d+h)?(\d+m)?\d+s\b`), "$1 after …s"},
	{regexp.MustCompile(`\[(\d+h)?(\d+m)?\d+s elapsed\]`), "[…s elapsed]"},
	{regexp.MustCompile(`\bwaiting \d+(\.\d+)?(ms|s)\b`), "waiting …"},
	{regexp.MustCompile(`\bpid \d+`), "pid <pid>"},
	// A policy lock's revision, short: it digests cookbooks whose recipes
	// name the script's paths.
	{regexp.MustCompile(`\b(lock revision|revision|revision <revision> →) [0-9a-f]{10}\b`), "$1 <revision>"},
	// A cookbook's short identity, for the same reason.
	{regexp.MustCompile(`\(([0-9a-f]{10})\)`), "(<id>)"},
	// A git commit, short.
	{regexp.MustCompile(`\bat [0-9a-f]{10}\b`), "at <commit>"},
}

// A digest, or a git commit (its 40 digits).
var digestRe = regexp.MustCompile(`\b[0-9a-f]{64}\b|\b[0-9a-f]{40}\b`)

// newScrubber makes the scrubber of the script whose environment getenv
// reads (WORK, ROOT, EXAMPLES); outside a script it scrubs only what
// varies with the run.
func newScrubber(getenv func(string) string) *scrubber {
	s := &scrubber{patterns: timePatterns}
	for _, name := range []string{"ROOT", "EXAMPLES", "WORK"} { // ROOT before WORK, which holds it
		if v := getenv(name); len(v) > 1 {
			// A whole path or its start: not $WORK/root.out as $ROOT.out.
			re := regexp.MustCompile(regexp.QuoteMeta(v) + `([^A-Za-z0-9._-]|$)`)
			s.paths = append(s.paths, scrubPattern{re, "$$" + name + "${1}"})
		}
	}
	if w := getenv("WORK"); w != "" {
		s.known = filepath.Join(w, ".tmp", "digests")
		if b, err := os.ReadFile(s.known); err == nil {
			s.digests = strings.Fields(string(b))
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		q := regexp.QuoteMeta(h)
		// Only where toque names the host: a host name can be any word.
		s.patterns = append(s.patterns,
			scrubPattern{regexp.MustCompile(`(\bon |No changes\. |\bfor )(\x60?)` + q + `\b`), "$1$2$$HOSTNAME"},
			scrubPattern{regexp.MustCompile(`\bhost=` + q + `\b`), "host=$$HOSTNAME"},
			scrubPattern{regexp.MustCompile(`"(hostname|host)":( ?)"` + q + `"`), `"$1":$2"$$HOSTNAME"`},
			// The console's value of host.hostname.
			scrubPattern{regexp.MustCompile(`(?m)^"` + q + `"$`), `"$$HOSTNAME"`},
		)
	}
	if u, err := user.Current(); err == nil {
		// Where toque reports the live owner: the text's "left as it is
		// (root)", the Markdown's "left as it is: "root"", a stale plan's
		// "now "root"". Not a recipe's owner = "root".
		owner := func(prop, name, label string) scrubPattern {
			return scrubPattern{regexp.MustCompile(`(\b` + prop + `: (?:not set in the recipe, left as it is:? |.* at plan time, now ))(\(|")` + regexp.QuoteMeta(name) + `(\)|")`), "$1$2$$" + label + "$3"}
		}
		s.patterns = append(s.patterns, owner("owner", u.Username, "USER"))
		if g, err := user.LookupGroupId(u.Gid); err == nil {
			s.patterns = append(s.patterns, owner("group", g.Name, "GROUP"))
		}
	}
	return s
}

// line scrubs one line (or any text without a path cut in two).
func (s *scrubber) line(text string) string {
	for _, p := range s.paths {
		text = p.re.ReplaceAllString(text, p.with)
	}
	text = digestRe.ReplaceAllStringFunc(text, s.digest)
	for _, p := range s.patterns {
		text = p.re.ReplaceAllString(text, p.with)
	}
	return text
}

// digest is the label of the hexadecimal digest d.
func (s *scrubber) digest(d string) string {
	i := slices.Index(s.digests, d)
	if i < 0 {
		s.digests = append(s.digests, d)
		i = len(s.digests) - 1
		if s.known != "" {
			if f, err := os.OpenFile(s.known, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
				fmt.Fprintln(f, d)
				f.Close()
			}
		}
	}
	n := 0 // counted among those of its kind
	for _, x := range s.digests[:i+1] {
		if len(x) == len(d) {
			n++
		}
	}
	if len(d) == 40 {
		return fmt.Sprintf("<commit %d>", n)
	}
	return fmt.Sprintf("<digest %d>", n)
}

// writer scrubs what is written to w a whole line at a time; Close writes
// an unfinished last line.
func (s *scrubber) writer(w io.Writer) *scrubWriter {
	return &scrubWriter{s: s, w: w}
}

type scrubWriter struct {
	s   *scrubber
	w   io.Writer
	buf []byte
}

func (sw *scrubWriter) Write(p []byte) (int, error) {
	sw.buf = append(sw.buf, p...)
	if i := bytes.LastIndexByte(sw.buf, '\n'); i >= 0 {
		whole := sw.buf[:i+1]
		if _, err := io.WriteString(sw.w, sw.s.line(string(whole))); err != nil {
			return 0, err
		}
		sw.buf = append(sw.buf[:0], sw.buf[i+1:]...)
	}
	return len(p), nil
}

func (sw *scrubWriter) Close() error {
	if len(sw.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(sw.w, sw.s.line(string(sw.buf)))
	sw.buf = nil
	return err
}
