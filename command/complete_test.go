package command

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/posener/complete"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/plan"
)

// Completion learns every command's flags from the command itself: each
// must define them and call parseFlags before doing anything else.
func TestCompletionTreeHasEveryCommandsFlags(t *testing.T) {
	b := &Base{Registry: builtin.Registry()}
	tree := b.completionTree("")
	// Two-word commands (fleet plan) are under their first word; hidden
	// ones are not offered.
	all := map[string]complete.Command{}
	for name, sub := range tree.Sub {
		all[name] = sub
		for child, s := range sub.Sub {
			all[name+" "+child] = s
		}
	}
	if len(all)+len(hiddenCommands) != len(commands(b)) {
		t.Fatalf("%d commands in the tree and %d hidden, want %d", len(all), len(hiddenCommands), len(commands(b)))
	}
	for name, sub := range all {
		if _, ok := sub.Flags["-help"]; !ok {
			t.Errorf("%s: no flags learnt (does it call parseFlags first?)", name)
		}
	}
	for name, flags := range map[string][]string{
		"plan":        {"-out", "-attr", "-attr-file", "-json", "-parallelism"},
		"apply":       {"-auto-approve", "-attr", "-attr-file", "-state-dir", "-expect-digest"},
		"validate":    {"-attr", "-attr-file", "-json"},
		"graph":       {"-attr", "-attr-file"},
		"console":     {"-attr", "-attr-file", "-no-color"},
		"show":        {"-json", "-markdown"},
		"fmt":         {"-check", "-recursive"},
		"fleet plan":  {"-limit", "-out", "-sign-key", "-inventory"},
		"fleet apply": {"-limit", "-json", "-verify-key", "-result"},
	} {
		for _, f := range flags {
			if _, ok := all[name].Flags[f]; !ok {
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
		if got := views.ShellQuote(in); got != want {
			t.Errorf("views.ShellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// Completion reads its line from Env and completes files in Env's
// working directory, or -chdir's, without changing the process's.
func TestCompleteLineInEnvDir(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "recipes")
	if err := os.MkdirAll(filepath.Join(sub, "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := plan.Write(filepath.Join(sub, "saved.plan"), &plan.Plan{FormatVersion: plan.FormatVersion}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	for line, want := range map[string]string{
		"toque -chdir=re":                "recipes/ recipes/nested/",
		"toque -chdir=recipes apply ":    "./ nested/ saved.plan",
		"toque -chdir recipes show sa":   "saved.plan",
		"toque -chdir=recipes plan -out": "-out",
	} {
		var out bytes.Buffer
		vars := map[string]string{"COMP_LINE": line, "COMP_POINT": strconv.Itoa(len(line))}
		code := Run(context.Background(), make(chan struct{}), []string{"toque", "", ""}, Streams{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard,
			Env: Env{Dir: dir, LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }},
		})
		got := strings.Fields(out.String())
		sort.Strings(got)
		if code != 0 || strings.Join(got, " ") != want {
			t.Errorf("%q: exit %d, %q, want %q", line, code, got, want)
		}
	}
	if now, _ := os.Getwd(); now != wd {
		t.Errorf("completion changed the working directory to %s", now)
	}
}
