package command

import (
	"errors"
	"io"
	"os"

	"golang.org/x/term"
)

// lineEditor is the console's input at a terminal: golang.org/x/term
// reads each line with editing (arrows, Home/End, Ctrl-W, …) and a history
// of the last 100 lines (up and down arrows), drawing the prompt itself.
// The terminal is in raw mode from newLineEditor to close, so everything
// the console writes meanwhile goes through the editor, which turns each
// "\n" into "\r\n" and keeps the line being typed below the output.
type lineEditor struct {
	t   *term.Terminal
	fd  int
	old *term.State
}

// newLineEditor puts the terminal on in into raw mode and returns its
// editor, or an error when in and out are not both terminals (the console
// then reads lines as they come).
func newLineEditor(in, out *os.File) (*lineEditor, error) {
	fd := int(in.Fd())
	if !term.IsTerminal(fd) || !term.IsTerminal(int(out.Fd())) {
		return nil, errors.New("not a terminal")
	}
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, err
	}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{in, out}, "")
	if w, h, err := term.GetSize(int(out.Fd())); err == nil && w > 0 && h > 0 {
		_ = t.SetSize(w, h) // (a terminal of no size keeps 80×24)
	}
	return &lineEditor{t: t, fd: fd, old: old}, nil
}

// readLine reads one line after prompt. Ctrl-D on an empty line and
// Ctrl-C end the input (io.EOF), as Ctrl-D does for piped input.
func (e *lineEditor) readLine(prompt string) (string, error) {
	e.t.SetPrompt(prompt)
	line, err := e.t.ReadLine()
	if errors.Is(err, term.ErrPasteIndicator) {
		err = nil // a pasted line is a line
	}
	return line, err
}

// Write writes through the editor (see lineEditor).
func (e *lineEditor) Write(p []byte) (int, error) { return e.t.Write(p) }

// close puts the terminal back as it was.
func (e *lineEditor) close() {
	if e != nil {
		_ = term.Restore(e.fd, e.old)
	}
}
