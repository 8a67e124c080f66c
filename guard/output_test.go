package guard

import (
	"context"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"
)

// A guard's output reaches reviewers (the Markdown plan shows it): what a
// hostile command prints cannot drive their terminal.
func TestGuardOutputIsEscaped(t *testing.T) {
	specs := decodeReal(t, "file", nil, false, `only_if = "printf 'ok\\n\\033]0;owned\\007\\033[31mred\\r\\tx\\n'; printf 'err\\033[2J\\n' >&2"`)
	o := Run(context.Background(), builtin.Registry(), specs[0], nil)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	want := "ok\n" + `\x1b]0;owned\x07\x1b[31mred\r` + "\tx\n" + `err\x1b[2J`
	if o.Output != want {
		t.Errorf("output %q, want %q", o.Output, want)
	}
	if strings.ContainsAny(o.Output, "\x1b\a\r") {
		t.Errorf("raw control characters in %q", o.Output)
	}
}
