package command

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/posener/complete"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/policy"
)

// Shell completion works as hashicorp/cli's does (and Terraform's): the
// shell runs toque with COMP_LINE set, and toque prints the candidates
// (posener/complete's predictors, the library hashicorp/cli uses; the
// line is read from Env, not the process, so it runs in-process too). toque builds the
// completion tree itself rather than through cli.CLI.Autocomplete, so that
// -chdir=DIR completes directories and is not offered after a command, and
// installs it itself: hashicorp/cli's installer finds the home directory
// through the user database, not $HOME, so it cannot be pointed elsewhere
// (a test, a managed home); toque writes the same lines it would.

// compLineEnv is the variable a completing shell sets.
const compLineEnv = "COMP_LINE"

// The global flags that install and remove completion (Terraform's names).
const (
	installAutocomplete   = "install-autocomplete"
	uninstallAutocomplete = "uninstall-autocomplete"
)

func isAutocompleteFlag(arg string) bool {
	name := strings.TrimLeft(arg, "-")
	return strings.HasPrefix(arg, "-") && (name == installAutocomplete || name == uninstallAutocomplete)
}

// flagValues predicts the values of flags, by name. A flag not here takes
// any value, or none when it is a boolean.
var flagValues = map[string]complete.Predictor{
	"out":        complete.PredictFiles("*"),
	"attr-file":  complete.PredictFiles("*"),
	"state-dir":  complete.PredictDirs("*"),
	"sign-key":   complete.PredictFiles("*"),
	"verify-key": complete.PredictFiles("*"),
}

// commandArgs predicts a command's arguments: plan files for apply and
// show, recipe files for fmt, a directory for export, a file for keygen.
func commandArgs(name string) complete.Predictor {
	switch name {
	case "apply", "show":
		return predictPlanFiles
	case "fmt":
		return complete.PredictFiles("*.hcl")
	case "export":
		return complete.PredictDirs("*")
	case "keygen", "fleet apply", "fleet show":
		return complete.PredictFiles("*")
	}
	return complete.PredictNothing
}

// predictPlanFiles offers directories, and the files that are plan files.
var predictPlanFiles = complete.PredictFunc(func(a complete.Args) []string {
	var out []string
	for _, p := range complete.PredictFiles("*").Predict(a) {
		if strings.HasSuffix(p, "/") || plan.LooksLikePlanFile(p) {
			out = append(out, p)
		}
	}
	return out
})

// completionTree is what completion knows of toque: the global options,
// and each command with its flags (learnt from the command itself, see
// parseFlags) and arguments. File and directory arguments complete in dir
// ("" for the working directory), where toque will resolve them.
func (b *Base) completionTree(dir string) complete.Command {
	root := complete.Command{
		Sub: complete.Commands{},
		Flags: complete.Flags{
			"-chdir":                    inDir(b.Env.Dir, complete.PredictDirs("*")),
			"-" + installAutocomplete:   complete.PredictNothing,
			"-" + uninstallAutocomplete: complete.PredictNothing,
			"-help":                     complete.PredictNothing,
			"-version":                  complete.PredictNothing,
		},
	}
	// The commands run on a probe base: parseFlags hands their flag set
	// over and ends them before they do anything.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var got *flag.FlagSet
	probe := &Base{
		Ctx: ctx, ReadCtx: ctx,
		Streams:  Streams{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard},
		Logger:   hclog.NewNullLogger(),
		Registry: b.Registry,
		Env:      b.Env,
		files:    map[string]*hcl.File{},
		probe:    func(fs *flag.FlagSet) { got = fs },
	}
	cmds := map[string]complete.Command{}
	for name, factory := range commands(probe) {
		sub := complete.Command{Args: inDir(dir, commandArgs(name)), Flags: complete.Flags{}}
		got = nil
		if cmd, err := factory(); err == nil {
			cmd.Run(nil)
		}
		if got != nil {
			got.VisitAll(func(f *flag.Flag) {
				p := flagValues[f.Name]
				switch {
				case p != nil:
					p = inDir(dir, p)
				case isBoolFlag(f):
					p = complete.PredictNothing
				default:
					p = complete.PredictAnything
				}
				sub.Flags["-"+f.Name] = p
			})
			sub.Flags["-help"] = complete.PredictNothing
		}
		cmds[name] = sub
	}
	// A command of two words ("fleet plan") is a subcommand of the first:
	// the shell completes one word at a time. Hidden ones are left out.
	for name, sub := range cmds {
		if !strings.Contains(name, " ") {
			root.Sub[name] = sub
		}
	}
	for name, sub := range cmds {
		parent, child, nested := strings.Cut(name, " ")
		if !nested || slices.Contains(hiddenCommands, name) {
			continue
		}
		p := root.Sub[parent]
		if p.Sub == nil {
			p.Sub = complete.Commands{}
		}
		p.Sub[child] = sub
		root.Sub[parent] = p
	}
	return root
}

func isBoolFlag(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// inDir makes a file predictor complete in dir (absolute; "" for the
// process's working directory): a relative word is looked up in dir, and
// the candidates are given back relative to it.
func inDir(dir string, p complete.Predictor) complete.Predictor {
	if dir == "" || p == nil {
		return p
	}
	return complete.PredictFunc(func(a complete.Args) []string {
		if filepath.IsAbs(a.Last) {
			return p.Predict(a)
		}
		last := a.Last
		a.Last = filepath.Join(dir, last)
		if last == "" || strings.HasSuffix(last, "/") {
			a.Last += "/"
		}
		var out []string
		for _, c := range p.Predict(a) {
			switch rel, ok := strings.CutPrefix(c, dir+"/"); {
			case c == dir+"/" || c == dir:
				out = append(out, "./")
			case ok:
				out = append(out, rel)
			}
		}
		return out
	})
}

// completeLine prints the completions of the line in COMP_LINE (up to
// COMP_POINT), as posener/complete does, but reading them from Env. After
// -chdir=DIR, file arguments complete in DIR, where toque resolves them.
func (b *Base) completeLine() int {
	line := b.Env.Getenv(compLineEnv)
	if p, err := strconv.Atoi(b.Env.Getenv("COMP_POINT")); err == nil && p >= 0 && p < len(line) {
		line = line[:p]
	}
	a := compArgs(line)
	dir := ""
	if len(a.Completed) > 0 {
		switch chdir, ok := strings.CutPrefix(a.Completed[0], "-chdir="); {
		case ok:
			dir = chdir
		case a.Completed[0] == "-chdir" && len(a.Completed) > 1:
			dir = a.Completed[1]
		}
	}
	if dir != "" || b.Env.Dir != "" {
		dir = b.Env.abs(dir)
		if abs, err := filepath.Abs(dir); err == nil && isDir(abs) {
			dir = abs
		} else {
			dir = ""
		}
	}
	tree := b.completionTree(dir)
	for _, option := range tree.Predict(a) {
		if strings.HasPrefix(option, a.Last) {
			fmt.Fprintln(b.Streams.Stdout, option)
		}
	}
	return ExitOK
}

// compArgs splits a command line as posener/complete does: the words
// after the command; the last is the one being typed ("" after a space),
// and a last word NAME=VALUE completes VALUE after NAME.
func compArgs(line string) complete.Args {
	parts := strings.Fields(line)
	if strings.HasSuffix(line, " ") || line == "" {
		parts = append(parts, "")
	}
	if n := len(parts); n > 0 {
		parts = append(parts[:n-1], strings.Split(parts[n-1], "=")...)
	}
	var a complete.Args
	if len(parts) > 0 {
		a.All = parts[1:]
		a.Completed = a.All[:len(a.All)-1]
		if len(a.All) == 0 {
			a.Completed = nil
		}
	}
	if len(parts) > 0 {
		a.Last = parts[len(parts)-1]
	}
	if len(a.Completed) > 0 {
		a.LastCompleted = a.Completed[len(a.Completed)-1]
	}
	return a
}

// autocomplete installs or removes completion in the user's shells:
// toque -install-autocomplete, toque -uninstall-autocomplete.
func (b *Base) autocomplete(args []string) int {
	install := strings.TrimLeft(args[0], "-") == installAutocomplete
	if len(args) > 1 {
		return b.fail(false, "%s takes nothing else (got %q): toque %s", args[0], strings.Join(args[1:], " "), args[0])
	}
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err != nil {
		return b.fail(false, "cannot tell where the toque binary is, for the shells to run it: %s", err)
	}
	home := b.Env.Getenv("HOME")
	if home == "" {
		return b.fail(false, "cannot find your home directory: HOME is not set")
	}
	configHome := b.Env.Getenv("XDG_CONFIG_HOME")
	if configHome == "" {
		configHome = filepath.Join(home, ".config")
	}
	shells := findShells(home, configHome)
	var diags diag.Diagnostics
	if len(shells) == 0 && !install {
		// Nothing to remove completion from: done.
		views.Messages{V: b.view(false)}.Autocomplete(false, nil)
		return ExitOK
	}
	if len(shells) == 0 {
		diags = diags.Append(diag.Sourceless(diag.Error, "No shell configuration found",
			fmt.Sprintf("toque completes bash, zsh and fish, and installs completion in their configuration files, but found none of %s. Create your shell's file, then run toque %s again.",
				strings.Join(shellCandidates(home, configHome), ", "), args[0])).WithKind(views.KindUsage))
		b.view(false).Diagnostics(diags)
		return views.ExitStatus(diags)
	}
	var changes []views.ShellChange
	for _, sh := range shells {
		changed, err := sh.apply(install, bin)
		if err != nil {
			diags = diags.Append(diag.Errorf("%s: %w", sh.path, err))
			continue
		}
		changes = append(changes, views.ShellChange{Shell: sh.name, Path: sh.path, Changed: changed})
	}
	views.Messages{V: b.view(false)}.Autocomplete(install, changes)
	b.view(false).Diagnostics(diags)
	return views.ExitStatus(diags)
}

// shell is one shell's completion set-up: a line in an rc file (bash,
// zsh) or a file of its own (fish).
type shell struct {
	name string
	path string
}

// bashFiles are where bash's completion line goes: the first of them that
// exists, as posener/complete picks.
func bashFiles() []string {
	if runtime.GOOS == "darwin" {
		return []string{".bash_profile"}
	}
	return []string{".bashrc", ".bash_profile", ".bash_login", ".profile"}
}

// findShells lists the shells whose configuration exists in home.
func findShells(home, configHome string) []shell {
	var out []shell
	for _, name := range bashFiles() {
		p := filepath.Join(home, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			out = append(out, shell{"bash", p})
			break
		}
	}
	if p := filepath.Join(home, ".zshrc"); isRegular(p) {
		out = append(out, shell{"zsh", p})
	}
	if d := filepath.Join(configHome, "fish"); isDir(d) {
		out = append(out, shell{"fish", filepath.Join(d, "completions", "toque.fish")})
	}
	return out
}

func shellCandidates(home, configHome string) []string {
	var out []string
	for _, name := range append(bashFiles(), ".zshrc") {
		out = append(out, filepath.Join(home, name))
	}
	return append(out, filepath.Join(configHome, "fish")+"/")
}

func isRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// toqueCompleteLine matches a completion line for toque, whatever binary
// it names: the one to replace on install, and to remove on uninstall.
var toqueCompleteLine = regexp.MustCompile(`^complete (-o nospace )?-C .+ toque$`)

// bashCompInit makes zsh understand bash's complete.
const bashCompInit = "autoload -U +X bashcompinit && bashcompinit"

// apply installs (or removes) completion for sh; changed is false when
// there was nothing to do.
func (sh shell) apply(install bool, bin string) (changed bool, err error) {
	if sh.name == "fish" {
		return sh.applyFish(install, bin)
	}
	line := "complete -C " + views.ShellQuote(bin) + " toque"
	if sh.name == "zsh" {
		line = "complete -o nospace -C " + views.ShellQuote(bin) + " toque"
	}
	return editFile(sh.path, func(src []byte) []byte {
		lines := strings.Split(string(src), "\n")
		var out []string
		found := false
		for _, l := range lines {
			if toqueCompleteLine.MatchString(l) {
				if install && !found && l == line {
					out = append(out, l)
					found = true
				}
				// toque's line for another binary, or a second one, or
				// uninstall: out it goes, with the blank line install
				// put before it.
				if len(out) > 0 && out[len(out)-1] == "" {
					out = out[:len(out)-1]
				}
				continue
			}
			out = append(out, l)
		}
		if install && !found {
			if len(out) > 0 && out[len(out)-1] == "" {
				out = out[:len(out)-1]
			}
			var add []string
			if sh.name == "zsh" && !containsLine(out, bashCompInit) {
				add = append(add, bashCompInit)
			}
			out = append(append(append(out, ""), add...), line, "")
		}
		return []byte(strings.Join(out, "\n"))
	})
}

// fishCompletion is fish's completion file for toque.
func fishCompletion(bin string) string {
	return fmt.Sprintf(`
function __complete_toque
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    %s
end
complete -f -c toque -a "(__complete_toque)"
`, views.ShellQuote(bin))
}

func (sh shell) applyFish(install bool, bin string) (bool, error) {
	want := []byte(fishCompletion(bin))
	have, err := os.ReadFile(sh.path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if !install {
		if !exists || !bytes.Contains(have, []byte("__complete_toque")) {
			return false, nil // not ours: left alone
		}
		return true, os.Remove(sh.path)
	}
	if exists && bytes.Equal(have, want) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(sh.path), 0o755); err != nil {
		return false, err
	}
	return true, policy.WriteFileAtomic(sh.path, want, 0o644)
}

func containsLine(lines []string, line string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// editFile rewrites the file at path (following a symbolic link, so a
// dotfile manager's link stays a link) with edit's result, atomically and
// with its mode kept; changed is false when edit changed nothing.
func editFile(path string, edit func([]byte) []byte) (changed bool, err error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, err
	}
	st, err := os.Stat(real)
	if err != nil {
		return false, err
	}
	src, err := os.ReadFile(real)
	if err != nil {
		return false, err
	}
	out := edit(src)
	if bytes.Equal(out, src) {
		return false, nil
	}
	return true, policy.WriteFileAtomic(real, out, st.Mode().Perm())
}
