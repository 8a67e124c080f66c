package accounts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/resources"
)

// controlValues are a comment, home and shell holding a control
// character, as HCL escapes write them: a tab, a C0 control, an escape
// (which drives a terminal), DEL, and two C1 controls (NEL and CSI, which
// some terminals obey too).
var controlValues = []struct{ name, hcl, value string }{
	{"tab", `\t`, "\t"},
	{"C0", `\u0001`, "\x01"},
	{"escape", `\u001b[31m`, "\x1b[31m"},
	{"DEL", `\u007f`, "\x7f"},
	{"NEL", `\u0085`, "\u0085"},
	{"CSI", `\u009b2J`, "\u009b2J"},
}

// A user's comment, home or shell holding a control character is refused
// when the recipe is validated (no host read, nothing run), with a
// diagnostic on the attribute, instead of failing useradd at apply after
// earlier resources changed the host. Printable text, accents and spaces
// included, is accepted.
func TestUserControlCharactersRefusedAtValidate(t *testing.T) {
	reg := resources.NewRegistry(UserType(), GroupType())
	for _, prop := range []string{"comment", "home", "shell"} {
		for _, c := range controlValues {
			t.Run(prop+" "+c.name, func(t *testing.T) {
				prefix := ""
				if prop != "comment" {
					prefix = "/x"
				}
				src := fmt.Sprintf("user \"toq\" {\n  uid = 4242\n  %s = \"%s%s\"\n}\n", prop, prefix, c.hcl)
				diags := validateRecipe(t, reg, src)
				if len(diags) != 1 || diags[0].Summary != "Invalid value for property" {
					t.Fatalf("want one error, Invalid value for property; got %d: %v", len(diags), diags)
				}
				if s := diags[0].Subject; s == nil || s.Start.Line != 3 || s.Start.Column < 3+len(prop) {
					t.Errorf("the error is not on the %s attribute: %v", prop, diags[0].Subject)
				}
				if d := diags[0].Detail; !strings.Contains(d, "control character") || strings.IndexFunc(d, unicode.IsControl) >= 0 {
					t.Errorf("detail %q: want it to name the control character, escaped", d)
				}
			})
		}
	}
	ok := "user \"toq\" {\n  comment = \"Zoë Müller-Łukasz, room 4 (ops) \\\"on call\\\"\"\n  home = \"/home/zoë ops\"\n  shell = \"/bin/sh\"\n}\n"
	if diags := validateRecipe(t, reg, ok); len(diags) != 0 {
		t.Errorf("printable values refused: %v", diags)
	}
}

// validateRecipe loads and evaluates src as toque validate does (the host
// unknown), and returns the error diagnostics.
func validateRecipe(t *testing.T, reg *resources.Registry, src string) hcl.Diagnostics {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	attrs, diags := eval.Attributes(cfg, host.Unknown())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = eval.Resources(cfg, reg, &eval.Scope{Node: attrs.Node(), Host: host.Unknown()})
	var errs hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	return errs
}

// Why: the real useradd refuses a comment or home holding a C0 control
// or DEL, so such a value reaching apply fails there. Run against a
// throwaway root (--prefix); what toque refuses besides (C1 controls, a
// shell) would reach a terminal through finger, ls or a login prompt.
func TestUseraddRefusesControlCharacters(t *testing.T) {
	root := accountsRoot(t)
	typ := UserType()
	// The root works: a printable comment is written.
	if out, err := exec.Command("useradd", "--prefix", root, "--comment", "Zoë Müller, room 4", "toqok").CombinedOutput(); err != nil {
		t.Fatalf("useradd of a printable comment: %v: %s", err, out)
	}
	for i, c := range controlValues[:4] {
		for _, prop := range []string{"comment", "home"} {
			flag, v := "--comment", "a"+c.value+"b"
			if prop == "home" {
				flag, v = "--home-dir", "/home/a"+c.value+"b"
			}
			before := dbDigest(t, root)
			out, err := exec.Command("useradd", "--prefix", root, flag, v, fmt.Sprintf("toq%d", i)).CombinedOutput()
			if err == nil {
				t.Errorf("useradd accepted %s %q", prop, v)
			}
			t.Logf("useradd %s %q: %v: %s", prop, v, err, strings.TrimSpace(string(out)))
			if dbDigest(t, root) != before {
				t.Errorf("the failed useradd changed the databases")
			}
			if err := normalizeAndValidate(typ.Schema().Property(prop), cty.StringVal(v)); err == nil {
				t.Errorf("toque accepts %s %q, which useradd refuses", prop, v)
			}
		}
	}
}

func normalizeAndValidate(p *resources.Property, v cty.Value) error {
	var err error
	if p.Normalize != nil {
		if v, err = p.Normalize(v); err != nil {
			return err
		}
	}
	if p.Validate != nil {
		return p.Validate(v)
	}
	return nil
}
