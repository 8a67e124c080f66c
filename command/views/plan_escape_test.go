package views

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
)

// hostilePlan is what a pull-request author controls: names, file content
// (live and planned), commands, guard output.
func hostilePlan(t *testing.T) *plan.Plan {
	t.Helper()
	exit0 := 0
	guards := &plantest.FakeGuards{Results: map[string][]plantest.FakeGuard{
		"/etc/run\u202e": {{Kind: "only_if", Form: "script", Command: "true \x1b[8m hidden", Cwd: "/tmp/\x1b]0;title\x07", Interpreter: "default",
			ExitCode: &exit0, Passed: true, Output: "ok\x1b[2J\n```\n<details><summary>fake</summary>"}},
		"/etc/lazy": {{Kind: "only_if", Form: "script", Command: "test -f /k\x1b[8m", Interpreter: "default", AtApply: true,
			Error: "working directory /tmp/\x1b]0;title\x07\u202e does not exist"}},
	}}
	return scenario(t, func(f *plantest.FakeType) {
		f.Set("/etc/motd\u202etxt.sh", map[string]cty.Value{"content": plantest.Str("old line\n\x1b[31mred\x1b[0m\n"), "mode": plantest.Str("0644\x1b[1A")})
	}, guards, func(f *plantest.FakeType) []*eval.Instance {
		return []*eval.Instance{
			f.Inst("/etc/motd\u202etxt.sh", "create", 1, map[string]cty.Value{
				"content": plantest.Str("new line\n\x1b]52;c;cGF3bmVk\x07\r\x1b[1Arewritten\n\u2067isolate\u2069\n```\n<details><summary>hidden</summary>\n[click](https://evil.example/x) <img src=x onerror=alert(1)> @everyone\n</details>\n"),
			}),
			f.Inst("/srv/</code><img src=x>`[l](https://evil.example)`", "create", 5, map[string]cty.Value{"content": plantest.Str("x\n")}),
			guards.Guard(f.Inst("/etc/run\u202e", "run", 9, nil)),
			guards.Guard(plantest.Lazy(f.Inst("/etc/lazy", "create", 13, nil), "content", "file(\"/k\x1b[2J\u202e\")\n`[l](https://evil.example)`", 14, cty.NilVal)),
		}
	})
}

// unsafe lists what must never reach a terminal raw: ESC, BEL, CR, C1 CSI,
// bidirectional overrides and isolates.
var unsafe = []string{"\x1b", "\x07", "\r", "\u009b", "\u202e", "\u2067", "\u2069"}

func TestRenderTextEscapesEverything(t *testing.T) {
	var b bytes.Buffer
	if err := RenderText(&b, hostilePlan(t), RenderOptions{Registry: testRegistry(), SavedTo: "plan\x1b[2J.out"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, u := range unsafe {
		if strings.Contains(out, u) {
			t.Errorf("the text output holds %q raw:\n%s", u, out)
		}
	}
	for _, want := range []string{
		`fake_file "/etc/motd\u202etxt.sh"`,         // the name, quoted
		"# fake_file[/etc/motd\\u202etxt.sh] will",  // the headline
		`+\x1b]52;c;cGF3bmVk\x07\r\x1b[1Arewritten`, // escape sequences in a diff
		"-\\x1b[31mred\\x1b[0m",
		`+\u2067isolate\u2069`,
		`left as it is (0644\x1b[1A)`,
		"only_if `true \\x1b[8m hidden` passed",
		"cwd /tmp/\\x1b]0;title\\x07 from the guard",
		"plan\\x1b[2J.out",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text output lacks %q:\n%s", want, out)
		}
	}
}

func TestRenderMarkdownKeepsHostileTextInert(t *testing.T) {
	p := hostilePlan(t)
	// A reason kept in the plan (a private live value's) is text from the
	// plan file too.
	for _, r := range p.Resources {
		if sv, ok := r.Current.Values["content"]; ok && r.Kind == "update" {
			sv.Value, sv.Private = nil, "private: see https://evil.example/why @everyone"
			r.Current.Values["content"] = sv
		}
	}
	var b bytes.Buffer
	if err := RenderMarkdown(&b, p, MarkdownOptions{Registry: testRegistry()}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, u := range unsafe {
		if strings.Contains(md, u) {
			t.Errorf("the Markdown holds %q raw", u)
		}
	}
	checkDiffBlocks(t, md)
	// Outside code blocks, nothing the author wrote is active: no HTML of
	// theirs, no link, no image, no mention.
	for i, line := range outsideFences(md) {
		if strings.Contains(line, "<details>") && !strings.HasPrefix(line, "<details><summary><code>") {
			t.Errorf("a <details> that is not toque's own: %s", line)
		}
		line = withoutCode(line)
		for _, bad := range []string{"<img", "](http", "<script", "@everyone", "<summary>hidden", "<summary>fake"} {
			if strings.Contains(line, bad) {
				t.Errorf("line %d outside a code block holds %q: %s", i, bad, line)
			}
		}
	}
	for _, want := range []string{
		"_Note:_ `private: see https://evil.example/why @everyone; the diff shows the planned content in full`",
		"<code>fake_file[/srv/&lt;/code&gt;&lt;img src=x&gt;`[l](https://evil.example)`]</code>",
		"``fake_file[/srv/</code><img src=x>`[l](https://evil.example)`]``",
		"<code>fake_file[/etc/motd\\u202etxt.sh]</code>",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
}

var (
	codeElement = regexp.MustCompile(`<code>[^<]*</code>`)
	backticks   = regexp.MustCompile("`+")
)

// withoutCode removes what Markdown shows verbatim from a line: <code>
// elements (whose content is HTML-escaped) and code spans.
func withoutCode(line string) string {
	line = codeElement.ReplaceAllString(line, "")
	var b strings.Builder
	for {
		loc := backticks.FindStringIndex(line)
		if loc == nil {
			b.WriteString(line)
			return b.String()
		}
		open := line[loc[0]:loc[1]]
		b.WriteString(line[:loc[0]])
		rest := line[loc[1]:]
		end := -1
		for off := 0; ; {
			m := backticks.FindStringIndex(rest[off:])
			if m == nil {
				break
			}
			if m[1]-m[0] == len(open) {
				end = off + m[1]
				break
			}
			off += m[1]
		}
		if end < 0 {
			b.WriteString(open)
			line = rest
			continue
		}
		line = rest[end:]
	}
}

// outsideFences returns the lines of md that are not inside a fenced code
// block, by CommonMark's rule: a fence closes only on a line of at least as
// many backticks as opened it, and nothing else.
func outsideFences(md string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`") == "" {
				fence = ""
			}
			continue
		}
		if m := fenceOpen.FindStringSubmatch(trimmed); m != nil {
			fence = m[1]
			continue
		}
		out = append(out, line)
	}
	return out
}
