package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// complete runs the binary as a completing shell does (complete -C:
// COMP_LINE set, the command name and words as arguments) in dir.
func (e *env) complete(dir, line string) []string {
	e.t.Helper()
	cmd := exec.Command(toqueBin, "toque", "", "")
	cmd.Dir = dir
	cmd.Env = []string{"COMP_LINE=" + line, "COMP_POINT=" + strconv.Itoa(len(line))}
	r := e.runCmd(cmd)
	if r.code != 0 {
		e.t.Fatalf("completing %q: %s", line, r)
	}
	got := strings.Fields(r.stdout)
	sort.Strings(got)
	return got
}

// Completion offers commands, each command's own flags, plan files for
// apply and show, and directories for -chdir (in whose directory file
// arguments then complete).
func TestE2ECompletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("web.hcl", `file "ROOT/x" { content = "x" }`)
	e.must(0, "plan", "-out=saved.plan")
	e.recipe("notes.txt", "not a plan")
	if err := os.Mkdir(filepath.Join(e.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Dir(e.dir)

	cases := []struct {
		dir, line string
		want      []string
	}{
		{base, "toque ", []string{"apply", "console", "export", "fmt", "graph", "install", "keygen", "plan", "show", "update", "validate", "version"}},
		{base, "toque -", []string{"-chdir", "-help", "-install-autocomplete", "-uninstall-autocomplete", "-version"}},
		{base, "toque -chdir=re", []string{"recipes/", "recipes/sub/"}},
		{base, "toque -chdir=recipes con", []string{"console"}},
		{base, "toque plan -attr", []string{"-attr", "-attr-file"}},
		{base, "toque apply -a", []string{"-attr", "-attr-file", "-auto-approve"}},
		{e.dir, "toque apply ", []string{"./", "saved.plan", "sub/"}},
		{e.dir, "toque show s", []string{"saved.plan", "sub/"}},
		{base, "toque -chdir=recipes apply ", []string{"./", "saved.plan", "sub/"}},
		{base, "toque -chdir recipes show sa", []string{"saved.plan"}},
		{e.dir, "toque plan -attr-file n", []string{"notes.txt"}},
	}
	for _, tc := range cases {
		got := e.complete(tc.dir, tc.line)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

// -install-autocomplete writes what hashicorp/cli's installer writes, in
// the files of $HOME (a temporary one here: never the machine's), once;
// -uninstall-autocomplete takes it out again and leaves the rest.
func TestE2EInstallAutocomplete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := t.TempDir()
	config := filepath.Join(home, "config")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + config}
	write := func(rel, content string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The binary: what the shells will run is the executable's path.
	toque := func(want int, args ...string) result {
		t.Helper()
		cmd := exec.Command(toqueBin, args...)
		cmd.Env = env
		r := e.runCmd(cmd)
		if r.code != want {
			t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
		}
		return r
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(home, rel))
		if err != nil {
			return "(missing)"
		}
		return string(b)
	}

	// No shell configuration at all: nothing to install into.
	r := toque(1, "-install-autocomplete")
	if !strings.Contains(r.stderr, "No shell configuration found") {
		t.Errorf("without rc files: %s", r)
	}
	// ... and nothing to remove from: that is no error.
	if r := toque(0, "-uninstall-autocomplete"); !strings.Contains(r.stdout, "Completion is not installed") {
		t.Errorf("uninstall without rc files: %s", r)
	}

	write("dotfiles/bashrc", "export A=1\n")
	if err := os.Symlink(filepath.Join(home, "dotfiles/bashrc"), filepath.Join(home, ".bashrc")); err != nil {
		t.Fatal(err)
	}
	write(".zshrc", "setopt nocorrect")
	if err := os.MkdirAll(filepath.Join(config, "fish"), 0o755); err != nil {
		t.Fatal(err)
	}

	r = toque(0, "-install-autocomplete")
	for _, want := range []string{"Installed completion for bash in " + filepath.Join(home, ".bashrc"), "for zsh", "for fish"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("install does not say %q: %s", want, r)
		}
	}
	bashrc := read(".bashrc")
	if want := "export A=1\n\ncomplete -C " + toqueBin + " toque\n"; bashrc != want {
		t.Errorf(".bashrc = %q, want %q", bashrc, want)
	}
	if fi, err := os.Lstat(filepath.Join(home, ".bashrc")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf(".bashrc is no longer a link: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(home, "dotfiles/bashrc")); fi.Mode().Perm() != 0o600 {
		t.Errorf("bashrc mode %v, want 0600 kept", fi.Mode().Perm())
	}
	if want := "setopt nocorrect\n\nautoload -U +X bashcompinit && bashcompinit\ncomplete -o nospace -C " + toqueBin + " toque\n"; read(".zshrc") != want {
		t.Errorf(".zshrc = %q, want %q", read(".zshrc"), want)
	}
	if fish := read("config/fish/completions/toque.fish"); !strings.Contains(fish, "__complete_toque") || !strings.Contains(fish, toqueBin) {
		t.Errorf("toque.fish = %q", fish)
	}

	// Again: nothing changes.
	r = toque(0, "-install-autocomplete")
	if !strings.Contains(r.stdout, "Completion for bash is installed already") || read(".bashrc") != bashrc {
		t.Errorf("a second install: %s\n.bashrc = %q", r, read(".bashrc"))
	}

	r = toque(0, "-uninstall-autocomplete")
	if !strings.Contains(r.stdout, "Removed completion for bash") {
		t.Errorf("uninstall: %s", r)
	}
	if got := read(".bashrc"); got != "export A=1\n" {
		t.Errorf(".bashrc after uninstall = %q", got)
	}
	if got := read(".zshrc"); strings.Contains(got, "complete -o nospace") || !strings.HasPrefix(got, "setopt nocorrect\n") {
		t.Errorf(".zshrc after uninstall = %q", got)
	}
	if got := read("config/fish/completions/toque.fish"); got != "(missing)" {
		t.Errorf("toque.fish after uninstall = %q", got)
	}
	toque(1, "-install-autocomplete", "plan")
}
