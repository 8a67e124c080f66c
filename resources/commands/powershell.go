package commands

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// PowerShellFlags are the flags every powershell_script run gets, after the
// resource's own flags; the wrapper script's path follows -File.
var PowerShellFlags = []string{"-NoLogo", "-NonInteractive", "-NoProfile", "-ExecutionPolicy", "Bypass", "-File"}

// powerShellType is the built-in "powershell_script" type. Its code runs
// inside a generated wrapper (PowerShellWrapper) that turns the code's
// result into the exit code, in a .ps1 temporary file: pwsh -File needs
// one, so it is never inline.
type powerShellType struct{ runType }

// PowerShellScriptType returns the built-in "powershell_script" type.
func PowerShellScriptType() resources.Type {
	props := append(scriptProperties(),
		&resources.Property{Name: "architecture", Type: cty.String, NonState: true, Validate: props.OneOf("architecture", "x86_64", "i386"),
			Description: "\"x86_64\" or \"i386\": the process architecture on Windows; elsewhere it is only validated and recorded."},
		&resources.Property{Name: "convert_boolean_return", Type: cty.Bool, NonState: true, Default: cty.False,
			Description: "When the code's result is a PowerShell bool, exit 0 for $true and 1 for $false (always on for guards)."},
	)
	t := &powerShellType{runType{schema: &resources.Schema{
		Name:          "powershell_script",
		Description:   "Runs PowerShell code with pwsh.",
		Properties:    append(props, runProperties()...),
		Actions:       []string{"run"},
		DefaultAction: "run",
	}}}
	t.self = t
	return t
}

// CommandSpec is `pwsh FLAGS… -NoLogo -NonInteractive -NoProfile
// -ExecutionPolicy Bypass -File WRAPPER.ps1`, the wrapper holding the code.
// The interpreter is pwsh, or powershell when only that is in the PATH the
// process will get (the one host read CommandSpec makes: a stat per PATH
// directory, no process).
func (t *powerShellType) CommandSpec(r *resources.Resource) (shellexec.Spec, error) {
	spec, err := baseSpec(r)
	if err != nil {
		return spec, err
	}
	if !r.IsSet("code") {
		return spec, errors.New("code is not set")
	}
	flags, err := flagList(r)
	if err != nil {
		return spec, err
	}
	spec.Interpreter = []string{powerShellInterpreter(spec)}
	spec.Flags = append(flags, PowerShellFlags...)
	spec.Script = PowerShellWrapper(r.String("code"), r.Bool("convert_boolean_return"))
	spec.ScriptSuffix = ".ps1"
	return spec, nil
}

// powerShellInterpreter is "pwsh" unless only "powershell" is found in the
// PATH spec will run with: toque's own, or the standard one of a child run
// as another user (shellexec.Environ). When that environment cannot be
// known (an unknown user), it is "pwsh": running it reports the user.
func powerShellInterpreter(spec shellexec.Spec) string {
	probe := spec
	probe.Argv, probe.Interpreter = []string{"pwsh"}, nil
	env, err := shellexec.Environ(probe)
	if err != nil {
		return "pwsh"
	}
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	dirs := filepath.SplitList(path)
	if findExecutable(dirs, "pwsh") || !findExecutable(dirs, "powershell") {
		return "pwsh"
	}
	return "powershell"
}

func findExecutable(dirs []string, name string) bool {
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return true
		}
	}
	return false
}

// PowerShellWrapper returns the PowerShell script that runs code and exits
// with a code that says how it went, as Chef's powershell_script wrapper
// does:
//
//   - with convertBooleanReturn, when the code's result (its output) is a
//     single PowerShell bool: $true exits 0, $false exits 1;
//   - otherwise, when the code's last statement succeeded ($?): 0;
//   - otherwise, when $LASTEXITCODE (the exit code of the last native
//     program, reset to 0 first) is not 0: that code;
//   - otherwise 1. A terminating error (an exception, a parse error in the
//     code) prints its message to standard error and exits 1; `exit N` in
//     the code exits N.
//
// The last command decides, as in sh: a native program that failed early
// does not fail code whose last statement succeeded.
//
// The code is embedded base64-encoded (UTF-8) and turned into a script
// block at run time, so no content of it — braces, quotes, "#>", "'@" —
// can break the wrapper. It runs in a child scope. Its output is written
// after it ends, and exit codes that a POSIX exit status would wrap to 0
// (256, -256…) become 1.
func PowerShellWrapper(code string, convertBooleanReturn bool) string {
	convert := "$false"
	if convertBooleanReturn {
		convert = "$true"
	}
	enc := base64.StdEncoding.EncodeToString([]byte(code))
	var lines []string
	for len(enc) > 76 {
		lines = append(lines, enc[:76])
		enc = enc[76:]
	}
	lines = append(lines, enc)

	var b strings.Builder
	b.WriteString(`# Written by toque for a powershell_script resource: runs the code of the
# resource (below, base64-encoded UTF-8) and turns its result into the exit
# code.

# $LASTEXITCODE is unset until a native program runs: start it at 0.
$global:LASTEXITCODE = 0

# A terminating error exits 1 with its message; without this trap it would
# exit 0.
trap [Exception] { [Console]::Error.WriteLine($_.Exception.Message); exit 1 }

$toqueConvertBooleanReturn = ` + convert + `
$toqueCode = [System.Text.Encoding]::UTF8.GetString([System.Convert]::FromBase64String('
`)
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString(`
'))

# Run the code in a child scope; the last line records whether its last
# statement succeeded.
$global:toqueLastSucceeded = $false
$toqueBlock = [ScriptBlock]::Create($toqueCode + "` + "`n" + `" + '$global:toqueLastSucceeded = $?')
$toqueResult = & $toqueBlock

$toqueStatus = 1
if ($toqueConvertBooleanReturn -and $toqueResult -is [bool]) {
    # convert_boolean_return: $true exits 0, $false exits 1.
    $toqueStatus = [int](-not $toqueResult)
} elseif ($global:toqueLastSucceeded) {
    $toqueStatus = 0
} elseif ($null -ne $global:LASTEXITCODE -and $global:LASTEXITCODE -ne 0) {
    # The last statement failed: the exit code of a native program says how.
    $toqueStatus = [int]$global:LASTEXITCODE
}
# An exit status is taken modulo 256: do not let a failure wrap to 0.
if ($toqueStatus -ne 0 -and ($toqueStatus -band 255) -eq 0) {
    $toqueStatus = 1
}

Write-Output $toqueResult
exit $toqueStatus
`)
	return b.String()
}
