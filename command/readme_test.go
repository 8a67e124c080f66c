package command

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// The README's quickstart, run as it is written (every /tmp path moved
// into the test's scratch directory): its toque commands keep the site,
// toque's state and the host-wide lock under that scratch directory, so
// that run as root it creates nothing in /var/lib/toque or /run/toque.
// Toque settings it does not give are unset, as on a fresh machine.
func TestReadmeQuickstartKeepsItsStateInItsScratch(t *testing.T) {
	block := readmeQuickstart(t)
	scratch := t.TempDir()
	moved := func(s string) string { return strings.ReplaceAll(s, "/tmp/", scratch+"/") }
	vars := map[string]string{"NO_COLOR": "1", "TOQUE_LOG": ""}
	var runs [][]string
	for _, line := range block {
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = moved(v)
			}
			continue
		}
		for _, cmd := range strings.Split(line, "&&") {
			words := strings.Fields(cmd)
			if len(words) > 0 && words[0] == "./toque" {
				for i := range words {
					words[i] = moved(words[i])
				}
				runs = append(runs, words[1:])
			}
		}
	}
	if len(runs) < 2 {
		t.Fatalf("the README's quickstart runs %d toque commands; want a plan and its apply:\n%s", len(runs), strings.Join(block, "\n"))
	}
	for _, k := range testutil.ToqueStateEnv {
		if _, ok := vars[k]; !ok {
			vars[k] = "" // as on a machine where nothing sets it
		}
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Dir: repo, LookupEnv: func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, v != ""
		}
		return os.LookupEnv(k)
	}}
	testutil.MustBeUnder(t, scratch, "the quickstart's state directory", stateDir(env, ""))
	testutil.MustBeUnder(t, scratch, "the quickstart's host-wide apply lock", hostLock(env))
	if v, ok := vars["QUICKSTART_ROOT"]; ok {
		t.Setenv("QUICKSTART_ROOT", v) // recipes' env() reads the process's
	} else {
		t.Fatalf("the README's quickstart does not say where the site goes (QUICKSTART_ROOT):\n%s", strings.Join(block, "\n"))
	}
	testutil.MustBeUnder(t, scratch, "the quickstart's site", vars["QUICKSTART_ROOT"])
	for _, args := range runs {
		code, stdout, stderr := runWithEnv(env, args)
		if code != ExitOK {
			t.Fatalf("toque %s: exit %d\n%s\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir(env, ""), "reports", "last.json")); err != nil {
		t.Errorf("the quickstart's apply left no report in its state directory: %v", err)
	}
}

// readmeQuickstart is the first sh block of README.md that runs the
// quickstart example, one line each (continuations joined).
func readmeQuickstart(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && line == "```sh":
			in, block = true, nil
		case in && line == "```":
			if strings.Contains(strings.Join(block, "\n"), "examples/quickstart") {
				return block
			}
			in = false
		case in:
			if n := len(block); n > 0 && strings.HasSuffix(block[n-1], "\\") {
				block[n-1] = strings.TrimSuffix(block[n-1], "\\") + " " + strings.TrimSpace(line)
			} else {
				block = append(block, line)
			}
		}
	}
	t.Fatal("README.md has no sh block that runs examples/quickstart")
	return nil
}
