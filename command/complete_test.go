package command

import (
	"testing"

	"github.com/toquehq/toque/resources"
)

// Completion learns every command's flags from the command itself: each
// must define them and call parseFlags before doing anything else.
func TestCompletionTreeHasEveryCommandsFlags(t *testing.T) {
	b := &Base{Registry: resources.Builtin()}
	tree := b.completionTree()
	if len(tree.Sub) != len(commands(b)) {
		t.Fatalf("%d commands in the tree, want %d", len(tree.Sub), len(commands(b)))
	}
	for name, sub := range tree.Sub {
		if _, ok := sub.Flags["-help"]; !ok {
			t.Errorf("%s: no flags learnt (does it call parseFlags first?)", name)
		}
	}
	for name, flags := range map[string][]string{
		"plan":     {"-out", "-attr", "-attr-file", "-json", "-parallelism"},
		"apply":    {"-auto-approve", "-attr", "-attr-file", "-state-dir", "-expect-digest"},
		"validate": {"-attr", "-attr-file", "-json"},
		"graph":    {"-attr", "-attr-file"},
		"console":  {"-attr", "-attr-file", "-no-color"},
		"show":     {"-json", "-markdown"},
		"fmt":      {"-check", "-recursive"},
	} {
		for _, f := range flags {
			if _, ok := tree.Sub[name].Flags[f]; !ok {
				t.Errorf("%s has no %s in completion", name, f)
			}
		}
	}
}

func TestShellQuoteArg(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/local/bin/toque": "/usr/local/bin/toque",
		"/opt/my tools/toque":  "'/opt/my tools/toque'",
		"/opt/it's/toque":      `'/opt/it'\''s/toque'`,
	} {
		if got := shellQuoteArg(in); got != want {
			t.Errorf("shellQuoteArg(%q) = %q, want %q", in, got, want)
		}
	}
}
