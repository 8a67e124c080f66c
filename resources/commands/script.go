package commands

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// This file holds the script family: `script` (any interpreter) and the
// types with a fixed one — bash, sh, csh, python, perl. powershell_script,
// which wraps its code, is in powershell.go.
//
// How the code reaches the interpreter. Chef writes the code to a temporary
// file and runs `interpreter flags file`. Guards run these types once per
// guard, and the file (create, write, chmod, remove, and the interpreter
// opening it) adds to every run: BenchmarkScriptGuardShape measures sh with
// a temporary file at about 1.2 times a bare `sh -c true`, inline at 1.1
// (more where /tmp is slow). So where the interpreter takes code as an
// argument, the code goes inline instead:
//
//	sh, bash, dash, zsh, ksh      INTERPRETER FLAGS… -c CODE
//	csh, tcsh (one-line code)     INTERPRETER FLAGS… -c CODE
//	perl                          perl FLAGS… -e CODE
//	python, python3, python3.N    python3 FLAGS… -c CODE
//
// The temporary file is still used when the interpreter is not one of those
// (by the basename of a one-word interpreter; "/usr/bin/env bash" is not),
// when the code is larger than MaxInlineCode, contains a NUL byte or starts
// with "#!" (perl honours switches on a #! line only in a file), and where
// inline code would behave differently: csh code of more than one line (csh
// -c runs only the first iteration of a multi-line foreach), perl code with
// __END__ or __DATA__, python code that reads __file__. In a csh file, a
// newline is added to a last line that has none: csh ignores such a line.
// What differs inline
// is only the script's own name ($0 is the shell's name, perl's $0 is "-e",
// python's sys.argv[0] is "-c" and its sys.path[0] is the working directory
// rather than the temporary file's directory).
//
// One more difference: inline code is an argument, visible in the process
// list (ps) while it runs; a temporary file is readable by its owner only.
// So a sensitive resource's code always goes through the file (shellexec.Private).

// MaxInlineCode is the largest code passed as an argument rather than in a
// temporary file (Linux allows 128 KiB per argument).
const MaxInlineCode = 64 << 10

// scriptType is `script` (interpreter == "") or a script type with a fixed
// interpreter.
type scriptType struct {
	runType
	interpreter string
}

// ScriptType returns the built-in "script" type: code run by the
// interpreter its `interpreter` property names.
func ScriptType() resources.Type {
	props := []*resources.Property{
		{Name: "interpreter", Type: cty.String, NonState: true, Required: true, Validate: validateInterpreter,
			Description: "The interpreter: a program name or path, optionally followed by arguments (\"/usr/bin/env ruby\")."},
	}
	props = append(props, scriptProperties()...)
	return newScriptType("", &resources.Schema{
		Name:          "script",
		Description:   "Runs code with the interpreter it names.",
		Properties:    append(props, runProperties()...),
		Actions:       []string{"run"},
		DefaultAction: "run",
	})
}

// BashType returns the built-in "bash" type: code run by bash.
func BashType() resources.Type { return fixedScriptType("bash", "bash", "Runs code with bash.") }

// ShType returns the built-in "sh" type: code run by sh.
func ShType() resources.Type { return fixedScriptType("sh", "sh", "Runs code with sh.") }

// CshType returns the built-in "csh" type: code run by csh.
func CshType() resources.Type { return fixedScriptType("csh", "csh", "Runs code with csh.") }

// PythonType returns the built-in "python" type: code run by python3. There
// is no fallback to `python`, which is Python 2 where it still exists; use
// a script resource with interpreter = "python" for that.
func PythonType() resources.Type {
	return fixedScriptType("python", "python3", "Runs code with python3.")
}

// PerlType returns the built-in "perl" type: code run by perl.
func PerlType() resources.Type { return fixedScriptType("perl", "perl", "Runs code with perl.") }

func fixedScriptType(name, interpreter, description string) resources.Type {
	return newScriptType(interpreter, &resources.Schema{
		Name:          name,
		Description:   description,
		Properties:    append(scriptProperties(), runProperties()...),
		Actions:       []string{"run"},
		DefaultAction: "run",
	})
}

// scriptProperties are `code` and `flags`, shared by every script type.
func scriptProperties() []*resources.Property {
	return []*resources.Property{
		{Name: "code", Type: cty.String, NonState: true, Required: true,
			Description: "The code the interpreter runs."},
		{Name: "flags", Type: cty.DynamicPseudoType, NonState: true, Normalize: NormalizeFlags,
			Description: "Arguments put between the interpreter and the code: a string split at spaces, or a list of strings."},
	}
}

func newScriptType(interpreter string, s *resources.Schema) *scriptType {
	t := &scriptType{runType: runType{schema: s}, interpreter: interpreter}
	t.self = t
	return t
}

// CommandSpec is the process of a script resource: the code inline where
// the interpreter allows (see the top of script.go), else in a temporary
// file.
func (t *scriptType) CommandSpec(r *resources.Resource) (shellexec.Spec, error) {
	spec, err := baseSpec(r)
	if err != nil {
		return spec, err
	}
	interp := []string{t.interpreter}
	if t.interpreter == "" {
		interp = strings.Fields(r.String("interpreter"))
		if len(interp) == 0 {
			return spec, errors.New("interpreter is not set")
		}
	}
	flags, err := flagList(r)
	if err != nil {
		return spec, err
	}
	if !r.IsSet("code") {
		return spec, errors.New("code is not set")
	}
	code := r.String("code")
	if flag := inlineFlag(interp, code); flag != "" {
		spec.Argv = append(append(append([]string{}, interp...), flags...), flag, code)
		return spec, nil
	}
	if shellexec.IsCsh(filepath.Base(interp[0])) && code != "" && !strings.HasSuffix(code, "\n") {
		// csh ignores a last line that does not end in a newline.
		code += "\n"
	}
	spec.Interpreter = interp
	spec.Flags = flags
	spec.Script = code
	return spec, nil
}

// NormalizeFlags checks `flags`: a string is kept as it is (it is split at
// white space when run), a list or tuple becomes a list of strings.
func NormalizeFlags(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return v, nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		if strings.IndexByte(v.AsString(), 0) >= 0 {
			return cty.NilVal, errors.New("flags must not contain a NUL byte")
		}
		return v, nil
	case t.IsListType() || t.IsTupleType():
		xs, err := props.ToStrings(v, "flags")
		if err != nil {
			return cty.NilVal, err
		}
		return props.StringListVal(xs), nil
	}
	return cty.NilVal, fmt.Errorf("flags must be a string or a list of strings, not %s", t.FriendlyName())
}

// flagList is r's flags as arguments.
func flagList(r *resources.Resource) ([]string, error) {
	if !r.IsSet("flags") {
		return nil, nil
	}
	v, err := NormalizeFlags(r.Values["flags"])
	if err != nil {
		return nil, err
	}
	if v.Type() == cty.String {
		return strings.Fields(v.AsString()), nil
	}
	return props.StringList(v), nil
}

func validateInterpreter(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := v.AsString()
	switch {
	case strings.TrimSpace(s) == "":
		return errors.New("interpreter must not be empty")
	case strings.IndexByte(s, 0) >= 0:
		return errors.New("interpreter must not contain a NUL byte")
	}
	return nil
}

// inlineFlag returns the flag to pass code inline to the interpreter interp
// (its argv), or "" when the code must go in a temporary file.
func inlineFlag(interp []string, code string) string {
	if len(interp) != 1 || len(code) > MaxInlineCode || strings.IndexByte(code, 0) >= 0 || strings.HasPrefix(code, "#!") {
		return ""
	}
	base := filepath.Base(interp[0])
	flag := shellexec.InlineArgFlag(base)
	switch {
	case flag == "":
		return ""
	case shellexec.IsCsh(base):
		if strings.Contains(strings.TrimRight(code, "\n"), "\n") {
			return ""
		}
	case base == "perl":
		if strings.Contains(code, "__END__") || strings.Contains(code, "__DATA__") {
			return ""
		}
	case shellexec.IsPython(base):
		if strings.Contains(code, "__file__") {
			return ""
		}
	}
	return flag
}
