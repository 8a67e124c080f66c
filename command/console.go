package command

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/mattn/go-isatty"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/host"
)

// ConsoleCommand is `toque console`.
type ConsoleCommand struct {
	*Base
}

func (c *ConsoleCommand) Synopsis() string {
	return "Evaluate expressions as the recipes see them"
}

func (c *ConsoleCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] console [options]

  Evaluates expressions in the scope a recipe's resource properties have:
  node with the merged node attributes (the command line's included),
  host with this host's facts, and every function. provenance(node.PATH)
  and :source PATH say where an attribute's value was written, and
  :source what every level says about it. Type :help inside for more.

  The console reads the recipes and the host's facts, nothing else: it
  evaluates no resource, runs no guard and reads no resource's state.

  At a terminal it prompts, with line editing and a history of the last
  100 lines (up and down arrows); with piped input (echo 'node.web.port' | toque
  console) it prints each value on one line, reports errors as
  diagnostics, and exits 1 at the end if any expression failed.

Options:

  -no-color            No colour (also NO_COLOR=1).
` + attrHelp
}

func (c *ConsoleCommand) Run(args []string) int {
	var col colorFlags
	var attrs attrFlags
	fs := c.newFlagSet("console", c.Help)
	col.register(fs)
	attrs.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() > 0 {
		return c.fail(col.noColor, "console takes no arguments (type expressions at its prompt, or pipe them in); use -chdir=DIR for another directory")
	}
	interactive := false
	if f, ok := c.Streams.Stdin.(*os.File); ok {
		interactive = isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
	}
	// At a terminal, lines are read with editing and history (x/term),
	// the terminal in raw mode until the console ends.
	v := c.view(col.noColor)
	var ed *lineEditor
	if interactive {
		in, _ := c.Streams.Stdin.(*os.File)
		out, _ := c.Streams.Stdout.(*os.File)
		if in != nil && out != nil {
			if e, err := newLineEditor(in, out); err == nil {
				ed = e
				defer ed.close()
				v.Streams.Stdout = ed
				if errf, ok := c.Streams.Stderr.(*os.File); ok && isatty.IsTerminal(errf.Fd()) {
					v.Streams.Stderr = ed
				}
			}
		}
	}
	view := views.NewConsole(v, interactive)

	cfg, _, diags := c.loadConfig(&attrs)
	if cfg == nil || diags.HasErrors() {
		view.Diagnostics(diags)
		return max(views.ExitStatus(diags), ExitError)
	}
	facts, err := host.Detect(c.ReadCtx)
	if err != nil {
		diags = diags.Append(diag.Sourceless(diag.Error, "Cannot read the host's facts", err.Error()))
		view.Diagnostics(diags)
		return views.ExitStatus(diags)
	}
	con, d := eval.NewConsole(cfg, facts.Value())
	diags = diags.Append(d)
	view.Diagnostics(diags)
	if diags.HasErrors() {
		return views.ExitStatus(diags)
	}
	view.Welcome(facts.Hostname)
	s := &consoleSession{base: c.Base, view: view, con: con, ed: ed}
	return s.run(interactive)
}

// stdinName names the console's input in diagnostics: "<stdin>:3:7".
const stdinName = "<stdin>"

// consoleSession reads expressions and commands, one after the other.
type consoleSession struct {
	base *Base
	view *views.Console
	con  *eval.Console
	// input is everything read so far, for the snippets of diagnostics;
	// line is the number of its last line.
	input []byte
	line  int
	// errs are the errors reported so far: piped input exits with their
	// status.
	errs diag.Diagnostics
	// ed reads the lines at a terminal (nil: read them as they come).
	ed *lineEditor
}

// run reads until the input ends, exit, or a Ctrl-C. It returns the exit
// status: with piped input, that of the errors reported (1 when an
// expression failed); at a terminal, where each error was read as it came,
// 0.
func (s *consoleSession) run(interactive bool) int {
	lines := make(chan string)
	readErr := make(chan error, 1)
	// prompts asks the line editor for the next line, with its prompt: it
	// reads only when asked, so that its prompt follows what the line
	// before printed.
	prompts := make(chan string, 1)
	go func() {
		defer close(lines)
		if s.ed != nil {
			for p := range prompts {
				line, err := s.ed.readLine(p)
				if err != nil {
					if errors.Is(err, io.EOF) {
						err = nil
					}
					readErr <- err
					return
				}
				lines <- line
			}
			return
		}
		sc := bufio.NewScanner(s.base.Streams.Stdin)
		sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		readErr <- sc.Err()
	}()

	var pending []byte
	start := hcl.Pos{Line: 1, Column: 1}
	status := func() int {
		if interactive {
			return ExitOK
		}
		return views.ExitStatus(s.errs)
	}
	for {
		if s.ed != nil {
			prompts <- s.view.PromptText(len(pending) > 0)
		} else {
			s.view.Prompt(len(pending) > 0)
		}
		var text string
		var ok bool
		select {
		case text, ok = <-lines:
		case <-s.base.ReadCtx.Done():
			if interactive {
				s.view.End()
				return ExitOK
			}
			s.fail(views.ErrInterrupted)
			return views.ExitStatus(s.errs)
		}
		if !ok {
			if err := <-readErr; err != nil {
				s.fail(diag.Errorf("reading the console's input: %w", err))
			}
			if len(pending) > 0 {
				s.eval(pending, start) // an open bracket: say what is wrong
			}
			s.view.End()
			return status()
		}
		if len(pending) == 0 {
			start = hcl.Pos{Line: s.line + 1, Column: 1, Byte: len(s.input)}
		}
		s.line++
		s.input = append(append(s.input, text...), '\n')
		s.base.files[stdinName] = &hcl.File{Body: hcl.EmptyBody(), Bytes: s.input}

		if len(pending) == 0 {
			done, quit := s.command(strings.TrimSpace(text))
			if quit {
				return status()
			}
			if done {
				continue
			}
		}
		pending = append(append(pending, text...), '\n')
		if open(pending) {
			continue
		}
		if !s.eval(pending, start) {
			return status() // stdout is closed: nobody reads on
		}
		pending = nil
	}
}

// command runs a console command (:help, :source PATH, exit). done is
// false when line is an expression; quit asks to leave.
func (s *consoleSession) command(line string) (done, quit bool) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "":
		return true, false
	case "exit", ":exit", ":quit", ":q":
		return true, true
	case "help", ":help", ":h":
		s.view.Help()
		return true, false
	case ":source", ":s", ":provenance":
		s.source(arg)
		return true, false
	}
	if strings.HasPrefix(name, ":") {
		s.fail(diag.Errorf("the console has no command %s: it has :source PATH, :help and :quit", name).WithKind(views.KindUsage))
		return true, false
	}
	return false, false
}

// source prints what every level says about a path.
func (s *consoleSession) source(arg string) {
	if arg == "" {
		s.fail(diag.Errorf(":source needs an attribute path: :source node.web.port").WithKind(views.KindUsage))
		return
	}
	path, err := eval.ParsePath(arg)
	if err != nil {
		s.fail(diag.Errorf(":source %s: %w", arg, err).WithKind(views.KindUsage))
		return
	}
	srcs := s.con.Sources(path)
	if len(srcs) == 0 {
		s.fail(diag.Sourceless(diag.Error, "Attribute not set", fmt.Sprintf("%s is set by no recipe, policy or command-line attribute.", eval.PathString(path))))
		return
	}
	if err := s.view.Sources(srcs); err != nil && !errors.Is(err, syscall.EPIPE) {
		s.fail(err)
	}
}

// eval parses and evaluates one expression and prints its value. It
// returns false when the value could not be printed (stdout is closed).
func (s *consoleSession) eval(src []byte, start hcl.Pos) bool {
	// Without the last newline, an unfinished expression's error points
	// at the end of its last line.
	src = bytes.TrimSuffix(src, []byte("\n"))
	expr, diags := hclsyntax.ParseExpression(src, stdinName, start)
	if diags.HasErrors() {
		s.fail(diags)
		return true
	}
	v, diags := s.con.Eval(expr)
	if diags.HasErrors() {
		s.fail(diags)
		return true
	}
	if len(diags) > 0 {
		s.view.Diagnostics(diag.Diagnostics{}.Append(diags))
	}
	if err := s.view.Value(v); err != nil {
		if !errors.Is(err, syscall.EPIPE) {
			s.fail(err)
		}
		return false
	}
	return true
}

// fail reports an error and remembers that one happened.
func (s *consoleSession) fail(item any) {
	diags := diag.Diagnostics{}.Append(item)
	for _, d := range diags {
		if d.Severity == diag.Error {
			s.errs = append(s.errs, d)
		}
	}
	s.view.Diagnostics(diags)
}

// open reports whether src ends inside a bracket, a template sequence or
// a heredoc: the expression goes on on the next line.
func open(src []byte) bool {
	depth := 0
	toks, _ := hclsyntax.LexExpression(src, stdinName, hcl.InitialPos)
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl, hclsyntax.TokenOHeredoc:
			depth++
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCHeredoc:
			depth--
		}
	}
	return depth > 0
}
