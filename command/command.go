package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/cli"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
)

// Version is toque's version, set at build time with
// -ldflags "-X github.com/toquehq/toque/command.Version=…".
var Version = "0.1.0-dev"

// Streams are what Run reads and writes of its process: the standard
// streams, and the environment and working directory.
type Streams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Env is the environment and working directory; the zero Env is the
	// process's own. Tests that run toque in-process set it, so that runs
	// side by side do not share them.
	Env Env
}

// Env is the environment toque's own settings are read from (TOQUE_*,
// NO_COLOR, TERM, XDG_STATE_HOME, XDG_RUNTIME_DIR, HOME) and the directory
// relative paths resolve against. Recipes' env() and the commands toque
// starts still see the process's environment.
type Env struct {
	// LookupEnv is os.LookupEnv when nil.
	LookupEnv func(key string) (string, bool)
	// Dir is the working directory, an absolute path; empty for the
	// process's own.
	Dir string
}

// withDefaults fills what e leaves unset from the process.
func (e Env) withDefaults() Env {
	if e.LookupEnv == nil {
		e.LookupEnv = os.LookupEnv
	}
	return e
}

// Getenv is the value of key, "" when unset.
func (e Env) Getenv(key string) string {
	v, _ := e.LookupEnv(key)
	return v
}

// abs resolves p against the working directory: a relative p is left
// as it is for the process's own.
func (e Env) abs(p string) string {
	if p == "" || filepath.IsAbs(p) || e.Dir == "" {
		return p
	}
	return filepath.Join(e.Dir, p)
}

// Base is what every command gets: streams, a logger, a cancellable context
// and the graceful-stop channel. It is small and read-only on purpose.
type Base struct {
	// Ctx is cancelled by the second SIGINT: abort. Apply uses it while it
	// changes the host (the first SIGINT closes Stop instead).
	Ctx context.Context
	// ReadCtx is cancelled by the first SIGINT too: commands and phases
	// that only read (plan, install, show) stop at once, since nothing is
	// half-changed.
	ReadCtx  context.Context
	Stop     <-chan struct{}
	Streams  Streams
	Logger   hclog.Logger
	Registry *resources.Registry
	// Env is where settings are read from, with the working directory.
	Env Env
	// Chdir is the directory given with the global -chdir option ("" for
	// the working directory); commands resolve their inputs against it.
	Chdir string
	// files are the parsed recipe and policy files, for the snippets of
	// diagnostics; loadConfig adds to it, views read it.
	files map[string]*hcl.File
	// probe, when set, is given each command's flag set by parseFlags,
	// which then ends the command (see completion).
	probe func(*flag.FlagSet)
	// ends are what Run does when the command ends (atEnd), last first.
	ends []func()
}

// atEnd has Run call f when the command ends (a temporary directory to
// remove).
func (b *Base) atEnd(f func()) { b.ends = append(b.ends, f) }

// end calls what atEnd registered, last first.
func (b *Base) end() {
	for i := len(b.ends) - 1; i >= 0; i-- {
		b.ends[i]()
	}
	b.ends = nil
}

// ui builds a cli.Ui over the streams.
func (b *Base) ui() cli.Ui {
	return &cli.BasicUi{Reader: b.Streams.Stdin, Writer: b.Streams.Stdout, ErrorWriter: b.Streams.Stderr}
}

// Run is toque's entry point after signal set-up: it parses global options,
// picks the command and returns the exit status.
func Run(ctx context.Context, stop <-chan struct{}, args []string, streams Streams) int {
	env := streams.Env.withDefaults()
	logger, closeLog, err := newLogger(env, streams.Stderr)
	if err != nil {
		fmt.Fprintf(streams.Stderr, "Error: %s\n", err)
		return ExitError
	}
	defer closeLog()

	readCtx, cancelRead := context.WithCancel(ctx)
	defer cancelRead()
	go func() {
		select {
		case <-stop:
			cancelRead()
		case <-readCtx.Done():
		}
	}()
	// The types' downloads go where this command's environment says,
	// not the process's (an in-process run has its own).
	dl := downloadDir(env)
	base := &Base{Ctx: resources.WithDownloadDir(ctx, dl), ReadCtx: resources.WithDownloadDir(readCtx, dl), Stop: stop, Streams: streams, Logger: logger, Registry: builtin.Registry(), Env: env, files: map[string]*hcl.File{}}
	defer base.end()

	// A shell asking for completions (bash's complete -C, and what
	// -install-autocomplete sets up for zsh and fish) sets COMP_LINE.
	if env.Getenv(compLineEnv) != "" {
		return base.completeLine()
	}

	// Global options come before the subcommand, as in Terraform.
	for len(args) > 0 && strings.HasPrefix(args[0], "-chdir") {
		dir := strings.TrimPrefix(strings.TrimPrefix(args[0], "-chdir"), "=")
		if args[0] == "-chdir" && len(args) > 1 {
			// -chdir DIR, as Go's flags (and completion) write it.
			dir, args = args[1], args[1:]
		}
		if dir == "" {
			fmt.Fprintln(streams.Stderr, "Error: -chdir needs a directory: toque -chdir=DIR COMMAND")
			return ExitError
		}
		st, err := os.Stat(env.abs(dir))
		if err != nil || !st.IsDir() {
			fmt.Fprintf(streams.Stderr, "Error: -chdir: %s is not a directory\n", dir)
			return ExitError
		}
		abs, _ := filepath.Abs(env.abs(dir))
		base.Chdir = abs
		args = args[1:]
	}
	if len(args) > 0 && (args[0] == "-version" || args[0] == "--version" || args[0] == "-v") {
		args[0] = "version"
	}

	if len(args) > 0 && isAutocompleteFlag(args[0]) {
		return base.autocomplete(args)
	}

	c := &cli.CLI{
		Name:        "toque",
		Version:     Version,
		Args:        args,
		HelpWriter:  streams.Stdout,
		ErrorWriter: streams.Stderr,
		Commands:    commands(base),
		HelpFunc:    helpFunc,

		HiddenCommands: hiddenCommands,
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if _, ok := c.Commands[args[0]]; !ok {
			names := make([]string, 0, len(c.Commands))
			for n := range c.Commands {
				names = append(names, n)
			}
			hint := ""
			if s := words.Closest(args[0], names); s != "" {
				hint = fmt.Sprintf(" Did you mean %q?", s)
			}
			fmt.Fprintf(streams.Stderr, "Error: toque has no command named %q.%s Run 'toque -help' for the list.\n", args[0], hint)
			return ExitError
		}
	}
	status, err := c.Run()
	if err != nil {
		fmt.Fprintf(streams.Stderr, "Error: %s\n", err)
		return ExitError
	}
	return status
}

// commands lists toque's commands, made over base.
func commands(base *Base) map[string]cli.CommandFactory {
	return map[string]cli.CommandFactory{
		"plan":     func() (cli.Command, error) { return &PlanCommand{Base: base}, nil },
		"apply":    func() (cli.Command, error) { return &ApplyCommand{Base: base}, nil },
		"show":     func() (cli.Command, error) { return &ShowCommand{Base: base}, nil },
		"validate": func() (cli.Command, error) { return &ValidateCommand{Base: base}, nil },
		"fmt":      func() (cli.Command, error) { return &FmtCommand{Base: base}, nil },
		"version":  func() (cli.Command, error) { return &VersionCommand{Base: base}, nil },
		"install":  func() (cli.Command, error) { return &InstallCommand{Base: base}, nil },
		"update":   func() (cli.Command, error) { return &UpdateCommand{Base: base}, nil },
		"export":   func() (cli.Command, error) { return &ExportCommand{Base: base}, nil },
		"graph":    func() (cli.Command, error) { return &GraphCommand{Base: base}, nil },
		"console":  func() (cli.Command, error) { return &ConsoleCommand{Base: base}, nil },
		"keygen":   func() (cli.Command, error) { return &KeygenCommand{Base: base}, nil },

		"fleet":       func() (cli.Command, error) { return &FleetCommand{Base: base}, nil },
		"fleet plan":  func() (cli.Command, error) { return &FleetPlanCommand{Base: base}, nil },
		"fleet show":  func() (cli.Command, error) { return &FleetShowCommand{Base: base}, nil },
		"fleet apply": func() (cli.Command, error) { return &FleetApplyCommand{Base: base}, nil },
		"fleet hosts": func() (cli.Command, error) { return &FleetHostsCommand{Base: base}, nil },
		"fleet agent": func() (cli.Command, error) { return &FleetAgentCommand{Base: base}, nil },
	}
}

// hiddenCommands are left out of the help: the agent is what toque fleet
// runs on the hosts.
var hiddenCommands = []string{"fleet agent"}

// newLogger builds the hclog logger from TOQUE_LOG and TOQUE_LOG_PATH. With
// neither set, logging is off.
func newLogger(env Env, stderr io.Writer) (hclog.Logger, func(), error) {
	levelName := env.Getenv("TOQUE_LOG")
	path := env.Getenv("TOQUE_LOG_PATH")
	if levelName == "" && path == "" {
		return hclog.NewNullLogger(), func() {}, nil
	}
	level := hclog.Info
	if levelName != "" {
		level = hclog.LevelFromString(levelName)
		if level == hclog.NoLevel {
			return nil, nil, fmt.Errorf("TOQUE_LOG=%s: want one of trace, debug, info, warn, error", levelName)
		}
	}
	out := stderr
	closeFn := func() {}
	if path != "" {
		f, err := os.OpenFile(env.abs(path), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("TOQUE_LOG_PATH: %w", err)
		}
		out = f
		closeFn = func() { f.Close() }
	}
	return hclog.New(&hclog.LoggerOptions{Name: "toque", Level: level, Output: out}), closeFn, nil
}

// colorFlags holds -no-color and decides whether to colour a stream.
type colorFlags struct {
	noColor bool
}

func (c *colorFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.noColor, "no-color", false, "Disable colour in the output.")
}

// newFlagSet makes a flag set that reports errors on stderr and prints the
// command's help for -help.
func (b *Base) newFlagSet(name string, help func() string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // parseFlags says what went wrong, once
	return fs
}

// parseFlags parses args; it returns a status to exit with when parsing
// ended the command (help or a bad flag), or -1 to go on.
//
// Every command calls it, with every flag it takes defined, before it does
// anything else: shell completion learns a command's flags by running it
// on a base whose probe gets the flag set, which ends the command here.
func (b *Base) parseFlags(fs *flag.FlagSet, args []string, help func() string) int {
	if b.probe != nil {
		b.probe(fs)
		return ExitOK
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(b.Streams.Stdout, strings.TrimSpace(help()))
			return ExitOK
		}
		return b.fail(false, "%s Run 'toque %s -help' for its options.", flagError(fs, err), fs.Name())
	}
	return -1
}

// flagError words a flag package error for people: "plan has no option
// -outt. Did you mean -out?", "-parallelism wants a whole number, not
// "x"."
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		hint := ""
		if s := words.Closest(name, names); s != "" {
			hint = fmt.Sprintf(" Did you mean -%s?", s)
		}
		return fmt.Sprintf("%s has no option -%s.%s", fs.Name(), name, hint)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("-%s needs a value: -%s=VALUE.", name, name)
	}
	// invalid value "x" for flag -parallelism: …
	// invalid boolean value "x" for -json: …
	for _, prefix := range []string{"invalid value ", "invalid boolean value "} {
		rest, ok := strings.CutPrefix(msg, prefix)
		if !ok {
			continue
		}
		val, tail, ok := strings.Cut(rest, " for ")
		if !ok {
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(tail, "flag "), "-"), ":")
		want := "a valid value"
		if f := fs.Lookup(name); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case bool:
					want = "true or false"
				case int, int64, uint, uint64:
					want = "a whole number"
				case float64:
					want = "a number"
				case time.Duration:
					want = "a duration such as 30s or 5m"
				}
			}
		}
		return fmt.Sprintf("-%s wants %s, not %s.", name, want, val)
	}
	return msg + "."
}

// path resolves p against -chdir, else the working directory.
func (b *Base) path(p string) string {
	if p == "" || filepath.IsAbs(p) || b.Chdir == "" {
		return b.Env.abs(p)
	}
	return filepath.Join(b.Chdir, p)
}

// workDir is the directory recipes are read from.
func (b *Base) workDir() string {
	if b.Chdir != "" {
		return b.Chdir
	}
	if b.Env.Dir != "" {
		return b.Env.Dir
	}
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return wd
}

// view is the base view over the command's streams: colour on a terminal
// unless noColor (or NO_COLOR, TERM=dumb), paths relative to the working
// directory, snippets from the parsed files.
func (b *Base) view(noColor bool) *views.View {
	v := views.NewView(views.Streams{Stdout: b.Streams.Stdout, Stderr: b.Streams.Stderr}, noColor, b.Env.Getenv)
	v.Workdir = b.workDir()
	v.Files = b.files
	v.Registry = b.Registry
	return v
}

// fail prints diagnostics made of a one-line error (usage, a bad
// argument) with the base view, and returns the exit status they give.
func (b *Base) fail(noColor bool, format string, args ...any) int {
	diags := diag.Diagnostics{}.Append(diag.Errorf(format, args...).WithKind(views.KindUsage))
	b.view(noColor).Diagnostics(diags)
	return views.ExitStatus(diags)
}

// stateDir picks the state directory: -state-dir, else TOQUE_STATE_DIR,
// else /var/lib/toque as root, else the XDG state directory.
func stateDir(env Env, flagValue string) string {
	if flagValue != "" {
		return env.abs(flagValue)
	}
	if v := env.Getenv("TOQUE_STATE_DIR"); v != "" {
		return env.abs(v)
	}
	if os.Geteuid() == 0 {
		return "/var/lib/toque"
	}
	if v := env.Getenv("XDG_STATE_HOME"); v != "" {
		return filepath.Join(env.abs(v), "toque")
	}
	if home := env.Getenv("HOME"); home != "" {
		return filepath.Join(home, ".local", "state", "toque")
	}
	return filepath.Join(os.TempDir(), "toque-state")
}

// HostLockEnv names the host-wide apply lock file, instead of the default
// hostLock picks.
const HostLockEnv = "TOQUE_HOST_LOCK"

// hostLock picks the host-wide apply lock: TOQUE_HOST_LOCK, else
// /run/toque/apply.lock as root, else toque/apply.lock in the user's
// runtime directory ($XDG_RUNTIME_DIR), else toque-UID/apply.lock in the
// temporary directory. A normal user's applies exclude each other, not
// root's: they cannot change what root's change.
func hostLock(env Env) string {
	if v := env.Getenv(HostLockEnv); v != "" {
		return env.abs(v)
	}
	uid := os.Geteuid()
	if uid == 0 {
		return "/run/toque/apply.lock"
	}
	if v := env.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(v) {
		return filepath.Join(v, "toque", "apply.lock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("toque-%d", uid), "apply.lock")
}

// helpFunc is toque's top-level help: the global options, then the
// commands, as Terraform lays it out.
func helpFunc(commands map[string]cli.CommandFactory) string {
	names := make([]string, 0, len(commands))
	width := 0
	for name := range commands {
		names = append(names, name)
		width = max(width, len(name))
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(`Usage: toque [global options] <command> [options] [args]

toque converges this host to the state its HCL recipes describe:
'toque plan -out=plan.out' saves a reviewable plan, 'toque apply plan.out'
carries out exactly that plan.

Global options (before the command):
  -chdir=DIR                Read recipes from DIR and resolve every path
                            against it.
  -version                  Print the version (also 'toque version').
  -help                     Show this help; 'toque COMMAND -help' shows a
                            command's.
  -install-autocomplete     Install completion of toque's commands, options
                            and files for bash, zsh and fish (whichever
                            have a configuration file in your home).
  -uninstall-autocomplete   Remove it.

Commands:
`)
	for _, name := range names {
		synopsis := ""
		if f, err := commands[name](); err == nil && f != nil {
			synopsis = f.Synopsis()
		}
		fmt.Fprintf(&b, "  %-*s  %s\n", width, name, synopsis)
	}
	return b.String()
}
