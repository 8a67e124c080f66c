package views

import "testing"

func TestEscape(t *testing.T) {
	cases := map[string]string{
		"plain text":                  "plain text",
		"two\nlines\tand tab":         "two\nlines\tand tab",
		"\x1b[2J\x1b[Hcleared":        `\x1b[2J\x1b[Hcleared`,
		"bell\a and cr\r":             `bell\x07 and cr\r`,
		"del\x7f":                     `del\x7f`,
		"csi \u009b31m":               `csi \x9b31m`,
		"admin\u202e nimda":           `admin\u202e nimda`,
		"isolate \u2066x\u2069":       `isolate \u2066x\u2069`,
		"bad \xff utf8":               `bad \xff utf8`,
		"héllo wörld ✓ 日本":            "héllo wörld ✓ 日本",
		"osc \x1b]0;title\x07 set":    `osc \x1b]0;title\x07 set`,
		"rlm \u200f and lrm \u200e x": `rlm \u200f and lrm \u200e x`,
	}
	for in, want := range cases {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeLine("a\nb\tc\x1b"); got != "a\\nb\tc\\x1b" {
		t.Errorf("EscapeLine = %q", got)
	}
}
