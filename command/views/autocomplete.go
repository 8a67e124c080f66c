package views

import "fmt"

// ShellChange is what toque -install-autocomplete (or -uninstall-) did to
// one shell's configuration.
type ShellChange struct {
	// Shell is "bash", "zsh" or "fish"; Path the file changed.
	Shell, Path string
	// Changed is false when there was nothing to do (installed already,
	// or not installed).
	Changed bool
}

// Autocomplete says what -install-autocomplete or -uninstall-autocomplete
// did, shell by shell.
func (m Messages) Autocomplete(install bool, changes []ShellChange) {
	w := m.V.Streams.Stdout
	if !install && len(changes) == 0 {
		fmt.Fprintln(w, "Completion is not installed: toque found no bash, zsh or fish configuration to remove it from.")
		return
	}
	changed := false
	for _, c := range changes {
		path := EscapeLine(c.Path)
		switch {
		case install && c.Changed:
			fmt.Fprintf(w, "Installed completion for %s in %s.\n", c.Shell, path)
		case install:
			fmt.Fprintf(w, "Completion for %s is installed already in %s.\n", c.Shell, path)
		case c.Changed:
			fmt.Fprintf(w, "Removed completion for %s from %s.\n", c.Shell, path)
		default:
			fmt.Fprintf(w, "Completion for %s is not installed in %s.\n", c.Shell, path)
		}
		changed = changed || c.Changed
	}
	if install && changed {
		fmt.Fprintln(w, "Open a new shell to use it: toque <TAB> completes commands, options, plan files and directories.")
	}
}
