package guard

import (
	"context"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
)

// decodeReal decodes guards against toque's real built-in types, for a
// parent of type parentType with the given settings.
func decodeReal(t *testing.T, parentType string, parent map[string]cty.Value, sensitive bool, src string) []*Spec {
	t.Helper()
	reg := builtin.Registry()
	f, diags := hclsyntax.ParseConfig([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	typ, _ := reg.Lookup(parentType)
	in := Input{Registry: reg, Ctx: &hcl.EvalContext{}, Sensitive: sensitive,
		Parent: resources.NewResource(typ.Schema(), "parent", typ.Schema().DefaultAction, parent)}
	in.Source = func(r hcl.Range) string { return string(r.SliceBytes(f.Bytes)) }
	for name, a := range f.Body.(*hclsyntax.Body).Attributes {
		switch name {
		case "only_if":
			in.OnlyIf = a.Expr
		case "not_if":
			in.NotIf = a.Expr
		case "guard_interpreter":
			in.GuardInterpreter = a.Expr
		}
	}
	specs, diags := Decode(in)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return specs
}

// A guard that cannot run as written — a shell syntax error, a bad test
// expression — exits 2: still false, but with a warning that quotes the
// first line of stderr (issue 10.8).
func TestExit2FromAShellWarns(t *testing.T) {
	const broken = "may be broken rather than false"
	cases := []struct {
		name, parentType, src string
		sensitive             bool
		exit                  int
		pass                  bool     // the condition holds
		warn                  []string // substrings; nil: no warning
		noWarn                []string
	}{
		{"sh syntax error", "file", `only_if = "if then"`, false, 2, false, []string{"exit 2: a shell", broken, "Syntax error"}, nil},
		{"test with a bad expression", "file", `only_if = "[ a = ]"`, false, 2, false, []string{broken, "[: "}, nil},
		{"bash syntax error", "bash", `not_if = "if [[ x"`, false, 2, false, []string{"exit 2: a shell", "bash"}, nil},
		{"execute string", "execute", `only_if = "(("`, false, 2, false, []string{broken}, nil},
		{"exit 2 without stderr", "file", `only_if = "exit 2"`, false, 2, false, []string{broken}, []string{": "}},
		{"first stderr line only", "file", `only_if = "echo; echo '  first  ' >&2; echo second >&2; exit 2"`, false, 2, false, []string{broken + ": first"}, []string{"second"}},
		{"escape sequences are escaped", "file", `only_if = "printf 'x\\033]0;pwned\\007\\033[2K\\r\\342\\200\\256y\\n' >&2; exit 2"`, false, 2, false,
			[]string{`x\x1b]0;pwned\x07\x1b[2K\r\u202ey`}, []string{"\x1b", "\a", "\r", "\u202e"}},
		{"long line is cut", "file", `only_if = "printf '%0300d\\n' 0 >&2; exit 2"`, false, 2, false, []string{strings.Repeat("0", 200) + "…"}, []string{strings.Repeat("0", 201)}},
		{"sensitive hides stderr", "file", `only_if = "echo s3cret >&2; exit 2"`, true, 2, false, []string{broken, "hidden"}, []string{"s3cret"}},
		{"2 is allowed", "file", `only_if = { command = "echo oops >&2; exit 2", returns = [0, 2] }`, false, 2, true, nil, nil},
		{"not a shell", "python", `only_if = "import sys; sys.exit(2)"`, false, 2, false, nil, nil},
		{"exit 1 is a plain false", "file", `only_if = "echo no >&2; exit 1"`, false, 1, false, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specs := decodeReal(t, c.parentType, nil, c.sensitive, c.src)
			o := Run(context.Background(), builtin.Registry(), specs[0], hclog.NewNullLogger())
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			if o.Condition != c.pass || o.ExitCode == nil || *o.ExitCode != c.exit {
				t.Fatalf("condition %v, exit %v; want %v, exit %d (output %q)", o.Condition, o.ExitCode, c.pass, c.exit, o.Output)
			}
			if c.warn == nil && o.Warning != "" {
				t.Errorf("unexpected warning %q", o.Warning)
			}
			for _, w := range c.warn {
				if !strings.Contains(o.Warning, w) {
					t.Errorf("warning %q lacks %q", o.Warning, w)
				}
			}
			for _, w := range c.noWarn {
				if strings.Contains(strings.TrimPrefix(o.Warning, "exit 2: "), w) {
					t.Errorf("warning %q holds %q", o.Warning, w)
				}
			}
		})
	}
}

func TestExit2WarningPrograms(t *testing.T) {
	cases := []struct {
		spec shellexec.Spec
		want bool
	}{
		{shellexec.Spec{Argv: []string{"/bin/sh", "-c", "x"}}, true},
		{shellexec.Spec{Interpreter: []string{"/usr/bin/env", "bash"}}, true},
		{shellexec.Spec{Interpreter: []string{"dash"}}, true},
		{shellexec.Spec{Argv: []string{"test", "-f", "x"}}, true},
		{shellexec.Spec{Argv: []string{"/usr/bin/["}}, true},
		{shellexec.Spec{Argv: []string{"grep", "-q", "x", "f"}}, false},
		{shellexec.Spec{Interpreter: []string{"/usr/bin/env"}}, false},
		{shellexec.Spec{Argv: []string{"perl", "-e", "exit 2"}}, false},
		{shellexec.Spec{}, false},
	}
	for _, c := range cases {
		if got := exit2Warning(c.spec, "err", false) != ""; got != c.want {
			t.Errorf("%v: warns %v, want %v", c.spec.Argv, got, c.want)
		}
	}
}
