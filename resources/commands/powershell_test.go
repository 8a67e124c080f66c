package commands

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// embeddedCode decodes the code a wrapper carries.
func embeddedCode(t *testing.T, wrapper string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)FromBase64String\('\n(.*?)\n'\)\)`).FindStringSubmatch(wrapper)
	if m == nil {
		t.Fatalf("no base64 block in the wrapper:\n%s", wrapper)
	}
	for _, line := range strings.Split(m[1], "\n") {
		if len(line) > 76 {
			t.Errorf("base64 line of %d characters; want at most 76", len(line))
		}
	}
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(m[1], "\n", ""))
	if err != nil {
		t.Fatalf("decoding the embedded code: %v", err)
	}
	return string(b)
}

func TestPowerShellWrapperEmbedsCode(t *testing.T) {
	cases := []struct{ name, code string }{
		{"empty", ""},
		{"a cmdlet", "Get-Item C:\\"},
		{"braces that do not balance", "if ($x) {\n  Write-Output '}'\n} }"},
		{"comment and here-string terminators", "<# not closed\n'@\n\"@\n#>"},
		{"quotes", `'single' "double" ` + "`backtick"},
		{"unicode", "Write-Output 'héllo — 世界'"},
		{"long", strings.Repeat("Write-Output 1\n", 500)},
		{"CR LF", "Write-Output 1\r\nexit 3\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := PowerShellWrapper(c.code, false)
			if got := embeddedCode(t, w); got != c.code {
				t.Fatalf("embedded code = %q, want %q", got, c.code)
			}
			if c.code != "" && strings.Contains(w, c.code) && len(c.code) > 8 {
				t.Errorf("the code appears verbatim in the wrapper: it must be encoded so it cannot break it")
			}
			if w != PowerShellWrapper(c.code, false) {
				t.Error("the wrapper is not deterministic")
			}
		})
	}
}

func TestPowerShellWrapperText(t *testing.T) {
	on := PowerShellWrapper("$true", true)
	off := PowerShellWrapper("$true", false)
	if !strings.Contains(on, "\n$toqueConvertBooleanReturn = $true\n") || strings.Contains(on, "$toqueConvertBooleanReturn = $false") {
		t.Error("convert_boolean_return true is not recorded as $true")
	}
	if !strings.Contains(off, "\n$toqueConvertBooleanReturn = $false\n") || strings.Contains(off, "$toqueConvertBooleanReturn = $true") {
		t.Error("convert_boolean_return false is not recorded as $false")
	}
	if on == off {
		t.Error("the flag makes no difference")
	}

	// Each step of the result's translation, in order.
	steps := []string{
		"\n$global:LASTEXITCODE = 0",
		"\ntrap [Exception] { [Console]::Error.WriteLine($_.Exception.Message); exit 1 }",
		"\n$toqueConvertBooleanReturn = $true",
		"[System.Text.Encoding]::UTF8.GetString([System.Convert]::FromBase64String(",
		"\n$global:toqueLastSucceeded = $false",
		"\n$toqueBlock = [ScriptBlock]::Create($toqueCode + \"`n\" + '$global:toqueLastSucceeded = $?')",
		"\n$toqueResult = & $toqueBlock",
		"\n$toqueStatus = 1",
		"\nif ($toqueConvertBooleanReturn -and $toqueResult -is [bool]) {",
		"\n    $toqueStatus = [int](-not $toqueResult)",
		"\n} elseif ($global:toqueLastSucceeded) {\n    $toqueStatus = 0",
		"\n} elseif ($null -ne $global:LASTEXITCODE -and $global:LASTEXITCODE -ne 0) {",
		"\n    $toqueStatus = [int]$global:LASTEXITCODE\n}",
		"\nif ($toqueStatus -ne 0 -and ($toqueStatus -band 255) -eq 0) {\n    $toqueStatus = 1\n}",
		"\nWrite-Output $toqueResult\nexit $toqueStatus\n",
	}
	rest := on
	for _, s := range steps {
		i := strings.Index(rest, s)
		if i < 0 {
			t.Fatalf("the wrapper lacks, or has out of order:\n%s\n--- wrapper:\n%s", s, on)
		}
		rest = rest[i+len(s):]
	}
	if rest != "" {
		t.Errorf("text after the final exit: %q", rest)
	}

	// Braces, parentheses and quotes of the wrapper itself balance (the code
	// is encoded, so this holds for any code).
	code := "} ) ' \" {{ (("
	w := PowerShellWrapper(code, true)
	for _, pair := range []string{"{}", "()"} {
		if o, c := strings.Count(w, pair[:1]), strings.Count(w, pair[1:]); o != c {
			t.Errorf("%d %q and %d %q in the wrapper", o, pair[:1], c, pair[1:])
		}
	}
	if strings.Count(w, "'")%2 != 0 {
		t.Error("unbalanced single quotes in the wrapper")
	}
	for _, line := range strings.Split(w, "\n") {
		if strings.Contains(line, "\r") {
			t.Errorf("carriage return in the wrapper line %q", line)
		}
	}
}

func TestPowerShellCommandSpec(t *testing.T) {
	cases := []struct {
		name    string
		vals    map[string]any
		convert bool
		flags   []string
	}{
		{"defaults", map[string]any{"code": "Get-Date"}, false, PowerShellFlags},
		{"convert_boolean_return set", map[string]any{"code": "$true", "convert_boolean_return": true}, true, PowerShellFlags},
		{"convert_boolean_return false", map[string]any{"code": "$true", "convert_boolean_return": false}, false, PowerShellFlags},
		{"user flags first", map[string]any{"code": "1", "flags": "-Version 7"}, false, append([]string{"-Version", "7"}, PowerShellFlags...)},
		{"architecture recorded", map[string]any{"code": "1", "architecture": "i386"}, false, PowerShellFlags},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := PowerShellScriptType()
			r := resourcetest.RunRes(t, typ, "p", c.vals)
			spec, err := typ.(resources.Runner).CommandSpec(r)
			if err != nil {
				t.Fatal(err)
			}
			if len(spec.Argv) != 0 || len(spec.Interpreter) != 1 || (spec.Interpreter[0] != "pwsh" && spec.Interpreter[0] != "powershell") {
				t.Fatalf("argv %q, interpreter %q", spec.Argv, spec.Interpreter)
			}
			if strings.Join(spec.Flags, " ") != strings.Join(c.flags, " ") || spec.Flags[len(spec.Flags)-1] != "-File" {
				t.Errorf("flags = %q, want %q", spec.Flags, c.flags)
			}
			if spec.ScriptSuffix != ".ps1" {
				t.Errorf("suffix = %q", spec.ScriptSuffix)
			}
			if spec.Script != PowerShellWrapper(r.String("code"), c.convert) {
				t.Errorf("the script is not PowerShellWrapper(code, %v)", c.convert)
			}
			if r.IsSet("architecture") && r.String("architecture") != "i386" {
				t.Error("architecture not recorded")
			}
		})
	}

	// A guard's resource: convert_boolean_return set in code, honoured.
	typ := PowerShellScriptType()
	g := resources.NewResource(typ.Schema(), "guard", "", map[string]cty.Value{"code": cty.StringVal("$false"), "convert_boolean_return": cty.True})
	spec, err := typ.(resources.Runner).CommandSpec(g)
	if err != nil || spec.Script != PowerShellWrapper("$false", true) {
		t.Errorf("guard resource: %v; script converts = %v", err, strings.Contains(spec.Script, "= $true\n"))
	}

	if err := typ.Schema().Property("architecture").Validate(cty.StringVal("arm")); err == nil {
		t.Error("architecture arm: want an error")
	}
}

func TestPowerShellInterpreterChoice(t *testing.T) {
	only := t.TempDir()
	resourcetest.WriteFile(t, filepath.Join(only, "powershell"), "#!/bin/sh\nexit 0\n", 0o755)
	both := t.TempDir()
	resourcetest.WriteFile(t, filepath.Join(both, "powershell"), "#!/bin/sh\nexit 0\n", 0o755)
	resourcetest.WriteFile(t, filepath.Join(both, "pwsh"), "#!/bin/sh\nexit 0\n", 0o755)
	none := t.TempDir()
	cases := []struct {
		name string
		vals map[string]any
		want string
	}{
		{"only powershell, by path", map[string]any{"path": []string{only}, "environment": map[string]string{"PATH": none}}, "powershell"},
		{"only powershell, by PATH", map[string]any{"environment": map[string]string{"PATH": only}}, "powershell"},
		{"both", map[string]any{"path": []string{both}}, "pwsh"},
		{"neither: pwsh is named in the error", map[string]any{"environment": map[string]string{"PATH": none}}, "pwsh"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.vals["code"] = "1"
			typ := PowerShellScriptType()
			spec, err := typ.(resources.Runner).CommandSpec(resourcetest.RunRes(t, typ, "p", c.vals))
			if err != nil {
				t.Fatal(err)
			}
			if spec.Interpreter[0] != c.want {
				t.Fatalf("interpreter = %q, want %q", spec.Interpreter[0], c.want)
			}
		})
	}
	t.Run("missing pwsh fails clearly", func(t *testing.T) {
		typ := PowerShellScriptType()
		r := resourcetest.RunRes(t, typ, "p", map[string]any{"code": "1", "environment": map[string]string{"PATH": none}})
		st, step := resourcetest.Plan(t, typ, r)
		err := resources.ConvergeStep(context.Background(), typ, resourcetest.TestEnv(t), r, st, step)
		var nf *shellexec.NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), `interpreter "pwsh"`) {
			t.Fatalf("error = %v", err)
		}
	})
}

// TestPowerShellLive runs the wrapper in a real pwsh.
func TestPowerShellLive(t *testing.T) {
	testenv.MustHave(t, testenv.Pwsh)
	cases := []struct {
		name    string
		code    string
		convert bool
		exit    int
		out     string
	}{
		{"true converted", "$true", true, 0, "True"},
		{"false converted", "$false", true, 1, "False"},
		{"comparison converted", "1 -eq 2", true, 1, ""},
		{"false not converted", "$false", false, 0, "False"},
		{"explicit exit", "exit 3", true, 3, ""},
		{"native exit code", "bash -c 'exit 5'", false, 5, ""},
		{"native failure then success", "bash -c 'exit 5'; Write-Output ok", false, 0, "ok"},
		{"failed cmdlet", "Get-Item /nonexistent/toque", false, 1, ""},
		{"exception", "throw 'boom'", true, 1, ""},
		{"parse error", "if (", true, 1, ""},
		{"several values are not a bool", "$true; $true", true, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := PowerShellScriptType()
			r := resourcetest.RunRes(t, typ, "p", map[string]any{"code": c.code, "convert_boolean_return": c.convert, "returns": []int{0, 1, 3, 5}})
			res, err := runSpec(t, typ, r)
			if err != nil && res == nil {
				t.Fatal(err)
			}
			if res.ExitCode != c.exit {
				t.Fatalf("exit = %d, want %d\nstdout: %s\nstderr: %s", res.ExitCode, c.exit, res.Stdout, res.Stderr)
			}
			if c.out != "" && !strings.Contains(res.Stdout, c.out) {
				t.Errorf("stdout = %q, want %q", res.Stdout, c.out)
			}
		})
	}
}
