package main

import (
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
