package shellexec

import (
	"path/filepath"
	"regexp"
	"strings"
)

// IsCsh reports whether base names a C shell (csh, tcsh, bsd-csh).
func IsCsh(base string) bool { return base == "csh" || base == "tcsh" || base == "bsd-csh" }

var pythonName = regexp.MustCompile(`^python[23]?(\.[0-9]+)?$`)

// IsPython reports whether base names a Python interpreter (python,
// python3, python3.11).
func IsPython(base string) bool { return pythonName.MatchString(base) }

// InlineArgFlag is the flag that makes the interpreter called base run code
// given as an argument, or "" when it is not one toque knows.
func InlineArgFlag(base string) string {
	switch base {
	case "sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "bsd-csh":
		return "-c"
	case "perl":
		return "-e"
	}
	if pythonName.MatchString(base) {
		return "-c"
	}
	return ""
}

// Private is spec for a sensitive resource: code passed inline (an
// argument anyone can read in the process list while it runs) moves into the
// temporary script file, which only its owner can read. Other specs are
// returned as they are.
func Private(spec Spec) Spec {
	n := len(spec.Argv)
	if n < 3 || !IsInlineArgv(spec.Argv) {
		return spec
	}
	code := spec.Argv[n-1]
	interp := spec.Argv[:n-2]
	if IsCsh(filepath.Base(interp[0])) && code != "" && !strings.HasSuffix(code, "\n") {
		code += "\n" // csh ignores a last line that does not end in a newline
	}
	spec.Interpreter = append([]string(nil), interp...)
	spec.Flags = nil
	spec.Script = code
	spec.Argv = nil
	return spec
}

// IsInlineArgv reports whether argv runs code inline: an interpreter
// toque knows, its inline flag, and the code.
func IsInlineArgv(argv []string) bool {
	f := InlineArgFlag(filepath.Base(argv[0]))
	return f != "" && argv[len(argv)-2] == f
}
