package guard

import (
	"strings"
	"testing"
)

// A misspelt guard key or interpreter gets a suggestion (issue 10.15).
func TestDecodeSuggestsMisspeltNames(t *testing.T) {
	reg := testRegistry()
	cases := []struct {
		name, src string
		summary   string
		line      int
		hint      string
	}{
		{"comand", "only_if = {\n  comand = \"true\"\n}", "Unknown guard parameter", 2, `Did you mean "command"?`},
		{"cwdd", "only_if = {\n  command = \"true\"\n  cwdd = \"/\"\n}", "Unknown guard parameter", 3, `Did you mean "cwd"?`},
		{"enviroment", "not_if = { command = \"true\", enviroment = {} }", "Unknown guard parameter", 1, `Did you mean "environment"?`},
		{"bsh", "guard_interpreter = \"bsh\"\nonly_if = \"true\"", "Unknown guard interpreter", 1, `Did you mean "bash"?`},
		{"far from anything", "only_if = { command = \"true\", xyzzy = 1 }", "Unknown guard parameter", 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, diags := decodeSrc(t, reg, parentOf(reg, "file", "create", nil), c.src, nil)
			var found bool
			for _, d := range diags {
				if d.Summary != c.summary {
					continue
				}
				found = true
				if d.Subject == nil || d.Subject.Start.Line != c.line {
					t.Errorf("diagnostic at %v, want line %d", d.Subject, c.line)
				}
				if c.hint == "" && strings.Contains(d.Detail, "Did you mean") {
					t.Errorf("unexpected suggestion: %s", d.Detail)
				}
				if c.hint != "" && !strings.Contains(d.Detail, c.hint) {
					t.Errorf("detail lacks %q: %s", c.hint, d.Detail)
				}
			}
			if !found {
				t.Fatalf("no %q diagnostic: %v", c.summary, diags)
			}
		})
	}
}
