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

	"github.com/agext/levenshtein"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/mattn/go-isatty"

	"github.com/toquehq/toque/resources"
)

// Version is toque's version, set at build time with
// -ldflags "-X github.com/toquehq/toque/command.Version=…".
var Version = "0.1.0-dev"

// Exit codes. They are documented in the README.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitChanges     = 2 // plan -detailed-exitcode: the plan has changes
	ExitStale       = 3 // apply: the host no longer matches the plan
	ExitLockHeld    = 4 // apply: another apply holds the lock
	ExitInterrupted = 5 // apply: stopped by a signal before finishing
)

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
// NO_COLOR, TERM, XDG_STATE_HOME, HOME) and the directory relative paths
// resolve against. Recipes' env() and the commands toque starts still see
// the process's environment.
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
	base := &Base{Ctx: ctx, ReadCtx: readCtx, Stop: stop, Streams: streams, Logger: logger, Registry: resources.Builtin(), Env: env}

	// Global options come before the subcommand, as in Terraform.
	for len(args) > 0 && strings.HasPrefix(args[0], "-chdir") {
		dir := strings.TrimPrefix(strings.TrimPrefix(args[0], "-chdir"), "=")
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

	c := &cli.CLI{
		Name:        "toque",
		Version:     Version,
		Args:        args,
		HelpWriter:  streams.Stdout,
		ErrorWriter: streams.Stderr,
		Commands: map[string]cli.CommandFactory{
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
		},
		HelpFunc: helpFunc,
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if _, ok := c.Commands[args[0]]; !ok {
			names := make([]string, 0, len(c.Commands))
			for n := range c.Commands {
				names = append(names, n)
			}
			hint := ""
			if s := closest(args[0], names); s != "" {
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

// enabled reports whether w should get colour: only on a terminal, and
// never with -no-color or NO_COLOR set.
func (c *colorFlags) enabled(env Env, w io.Writer) bool {
	if c.noColor || env.Getenv("NO_COLOR") != "" || env.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// newFlagSet makes a flag set that reports errors on stderr and prints the
// command's help for -help.
func (b *Base) newFlagSet(name string, help func() string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { fmt.Fprintln(b.Streams.Stderr, help()) }
	return fs
}

// parseFlags parses args; it returns a status to exit with when parsing
// ended the command (help or a bad flag), or -1 to go on.
func (b *Base) parseFlags(fs *flag.FlagSet, args []string, help func() string) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(b.Streams.Stdout, strings.TrimSpace(help()))
			return ExitOK
		}
		fmt.Fprintf(b.Streams.Stderr, "Error: %s\n\n%s\n", err, strings.TrimSpace(help()))
		return ExitError
	}
	return -1
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

// errorf prints a one-line error.
func (b *Base) errorf(format string, args ...any) {
	fmt.Fprintf(b.Streams.Stderr, "Error: "+format+"\n", args...)
}

// showDiags renders diagnostics with FILE:LINE:COL and source snippets.
func (b *Base) showDiags(diags hcl.Diagnostics, files map[string]*hcl.File, color bool) {
	if len(diags) == 0 {
		return
	}
	p := &diagPrinter{w: b.Streams.Stderr, files: files, color: color, width: 100, wd: b.workDir()}
	p.print(diags)
}

// stateDir picks the state directory: -state-dir, else TOQUE_STATE_DIR,
// else /var/lib/toque as root, else the XDG state directory.
func (b *Base) stateDir(flagValue string) string {
	if flagValue != "" {
		return b.Env.abs(flagValue)
	}
	if v := b.Env.Getenv("TOQUE_STATE_DIR"); v != "" {
		return b.Env.abs(v)
	}
	if os.Geteuid() == 0 {
		return "/var/lib/toque"
	}
	if v := b.Env.Getenv("XDG_STATE_HOME"); v != "" {
		return filepath.Join(b.Env.abs(v), "toque")
	}
	if home := b.Env.Getenv("HOME"); home != "" {
		return filepath.Join(home, ".local", "state", "toque")
	}
	return filepath.Join(os.TempDir(), "toque-state")
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
  -chdir=DIR   Read recipes from DIR and resolve every path against it.
  -version     Print the version (also 'toque version').
  -help        Show this help; 'toque COMMAND -help' shows a command's.

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

// closest is the name nearest to given by edit distance, if it is near
// enough to be a likely typo.
func closest(given string, names []string) string {
	best, bestDist := "", 0
	for _, n := range names {
		d := levenshtein.Distance(given, n, nil)
		if d <= 2 && (best == "" || d < bestDist) {
			best, bestDist = n, d
		}
	}
	return best
}
