package main

import (
	"strings"
	"testing"
)

// End-to-end tests of how commands and guards run: their environment,
// argv guards, guards that cannot run correctly, live_stream.

func TestE2EGuardInterpreterWithExpressionGuard(t *testing.T) {
	testBadInput(t, []badInput{
		{"bool guard", "file \"/x\" {\n  content = \"a\"\n  guard_interpreter = \"bash\"\n  only_if = true\n}\n", "bad.hcl:3"},
		{"expression in a list", "execute \"x\" {\n  guard_interpreter = \"default\"\n  not_if = [\"true\", 1 == 1]\n}\n", "bad.hcl:2"},
	})
}

func TestE2EGuardKeyTypoSuggests(t *testing.T) {
	e := newEnv(t)
	e.recipe("bad.hcl", "file \"/x\" {\n  only_if = {\n    comand = \"true\"\n  }\n}\n")
	r := e.must(1, "plan")
	contains(t, "plan", strings.Join(strings.Fields(r.stderr), " "), "bad.hcl:3", `Did you mean "command"?`)
	if strings.Contains(r.stderr, "Missing guard command") {
		t.Errorf("a misspelt command is also reported missing:\n%s", r.stderr)
	}
}
