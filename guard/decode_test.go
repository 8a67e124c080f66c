package guard

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestDecodeBadInput(t *testing.T) {
	reg := testRegistry()
	cases := []struct {
		name, src string
		parent    string
		summaries []string
		line      int
	}{
		{"unknown interpreter", "guard_interpreter = \"zsh\"\nonly_if = \"true\"", "file", []string{"Unknown guard interpreter"}, 1},
		{"interpreter not a runner", "guard_interpreter = \"file\"\nonly_if = \"true\"", "file", []string{"Not a guard interpreter"}, 1},
		{"interpreter wrong type", "guard_interpreter = 3\nonly_if = \"true\"", "file", []string{"Wrong type for guard_interpreter"}, 1},
		{"null guard", "only_if = null", "file", []string{"Null guard"}, 1},
		{"number guard", "\nnot_if = 42", "file", []string{"Wrong type for guard"}, 2},
		{"null in list", "only_if = [\"true\", null]", "file", []string{"Null guard"}, 1},
		{"nested list", "only_if = [[\"true\"]]", "file", []string{"Nested guard list"}, 1},
		{"unknown key", "only_if = {\n command = \"true\"\n cdw = \"/tmp\"\n}", "file", []string{"Unknown guard parameter"}, 3},
		{"missing command", "only_if = { cwd = \"/tmp\" }", "file", []string{"Missing guard command"}, 1},
		{"command not string", "only_if = { command = { a = 1 } }", "file", []string{"Wrong type for guard command"}, 1},
		{"empty command", "only_if = \"  \"", "file", []string{"Empty guard command"}, 1},
		{"returns 300", "only_if = {\n command = \"true\"\n returns = [0, 300]\n}", "file", []string{"Invalid guard parameter"}, 3},
		{"returns negative", "only_if = { command = \"true\", returns = -1 }", "file", []string{"Invalid guard parameter"}, 1},
		{"umask not octal", "only_if = { command = \"true\", umask = \"9\" }", "file", []string{"Invalid guard parameter"}, 1},
		{"umask too big", "only_if = { command = \"true\", umask = 1000 }", "file", []string{"Invalid guard parameter"}, 1},
		{"timeout zero", "only_if = { command = \"true\", timeout = 0 }", "file", []string{"Invalid guard parameter"}, 1},
		{"environment not a map", "only_if = { command = \"true\", environment = \"A=1\" }", "file", []string{"Invalid guard parameter"}, 1},
		{"null environment value", "only_if = { command = \"true\", environment = { A = null } }", "file", []string{"Invalid guard parameter"}, 1},
		{"null path entry", "only_if = { command = \"true\", path = [null] }", "file", []string{"Invalid guard parameter"}, 1},
		{"null exit code", "only_if = { command = \"true\", returns = [0, null] }", "file", []string{"Invalid guard parameter"}, 1},
		{"relative cwd", "only_if = { command = \"true\", cwd = \"tmp\" }", "file", []string{"Invalid guard parameter"}, 1},
		{"huge timeout", "only_if = { command = \"true\", timeout = 1e300 }", "file", []string{"Invalid guard parameter"}, 1},
		{"flags with default", "only_if = { command = \"true\", flags = [\"-e\"] }", "file", []string{"Guard parameter needs a guard interpreter"}, 1},
		{"parameter the interpreter lacks", "guard_interpreter = \"bash\"\nonly_if = { command = \"true\", architecture = \"i386\" }", "file", []string{"Guard parameter not supported"}, 2},
		{"script needs interpreter", "guard_interpreter = \"script\"\nonly_if = \"true\"", "file", []string{"Guard interpreter needs a property"}, 2},
		{"every error at once", "guard_interpreter = \"zsh\"\nonly_if = null\nnot_if = { command = \"x\", umask = \"8\" }", "file",
			[]string{"Unknown guard interpreter", "Null guard", "Invalid guard parameter"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specs, diags := decodeSrc(t, reg, parentOf(reg, c.parent, "create", nil), c.src, nil)
			if len(diags) != len(c.summaries) {
				t.Fatalf("want %d diagnostics, got %d: %v", len(c.summaries), len(diags), diags)
			}
			for i, d := range diags {
				if d.Summary != c.summaries[i] {
					t.Errorf("diagnostic %d: summary %q, want %q (%s)", i, d.Summary, c.summaries[i], d.Detail)
				}
				if d.Subject == nil {
					t.Errorf("diagnostic %d has no range", i)
				}
			}
			if diags[0].Subject != nil && diags[0].Subject.Start.Line != c.line {
				t.Errorf("first diagnostic at line %d, want %d", diags[0].Subject.Start.Line, c.line)
			}
			if specs != nil {
				t.Errorf("specs returned with errors: %v", specs)
			}
		})
	}
}

func TestDecodeUnknownValuesAreNotErrors(t *testing.T) {
	reg := testRegistry()
	vars := map[string]cty.Value{"host": cty.DynamicVal}
	specs, diags := decodeSrc(t, reg, parentOf(reg, "file", "create", nil),
		"only_if = host.enabled\nnot_if = { command = \"test -d x\", cwd = host.dir }", vars)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(specs) != 1 || specs[0].Kind != NotIf {
		t.Fatalf("specs %+v", specs)
	}
}

func TestDecodeOrderAndForms(t *testing.T) {
	reg := testRegistry()
	vars := map[string]cty.Value{"node": cty.ObjectVal(map[string]cty.Value{"web": cty.ObjectVal(map[string]cty.Value{"enabled": cty.False})})}
	src := `
not_if  = ["test -f /a", { command = "test -f /b", cwd = "/tmp" }]
only_if = [node.web.enabled, "true"]
`
	specs, diags := decodeSrc(t, reg, parentOf(reg, "file", "create", nil), src, vars)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, s := range specs {
		got = append(got, s.Verdict(true)+" via "+s.Interpreter)
	}
	want := []string{
		"only_if node.web.enabled is true via ",
		"only_if `true` passed via default",
		"not_if `test -f /a` is true via default",
		"not_if `test -f /b` is true via default",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if specs[0].ExprValue == nil || *specs[0].ExprValue {
		t.Errorf("expression value %v, want false", specs[0].ExprValue)
	}
	if specs[3].Values["cwd"].AsString() != "/tmp" || specs[3].Values["command"].AsString() != "test -f /b" {
		t.Errorf("values %v", specs[3].Values)
	}
	if specs[1].Range.Start.Line != 3 {
		t.Errorf("range %v", specs[1].Range)
	}
}

func TestDecodeInterpreterAndInheritance(t *testing.T) {
	reg := testRegistry()
	env := cty.MapVal(map[string]cty.Value{"JAVA_HOME": cty.StringVal("/usr/lib/jvm")})
	cases := []struct {
		name       string
		parentType string
		parent     map[string]cty.Value
		action     string
		src        string
		interp     string
		inherited  string
		overridden string
		values     map[string]string // property → display
	}{
		{"file defaults to default", "file", map[string]cty.Value{"group": cty.StringVal("staff")}, "create", `only_if = "true"`, "default", "", "",
			map[string]string{"command": "true", "timeout": "60"}},
		{"bash defaults to bash and inherits", "bash", map[string]cty.Value{"cwd": cty.StringVal("/opt"), "environment": env, "flags": cty.ListVal([]cty.Value{cty.StringVal("-e")}), "timeout": cty.NumberIntVal(5)}, "run",
			`only_if = "[[ $PWD == /opt ]]"`, "bash", "cwd,environment", "",
			map[string]string{"code": "[[ $PWD == /opt ]]", "cwd": "/opt", "timeout": "60"}},
		{"guard parameter overrides", "bash", map[string]cty.Value{"cwd": cty.StringVal("/var"), "umask": cty.StringVal("0022")}, "run",
			`only_if = { command = "pwd", cwd = "/opt", umask = "77", timeout = 2, returns = 1 }`, "bash", "", "cwd,umask",
			map[string]string{"cwd": "/opt", "umask": "0077", "timeout": "2"}},
		{"default inherits nothing", "bash", map[string]cty.Value{"cwd": cty.StringVal("/opt")}, "run",
			"guard_interpreter = \"default\"\nonly_if = \"pwd\"", "default", "", "", map[string]string{"command": "pwd"}},
		{"non-runner parent with an interpreter inherits nothing", "file", map[string]cty.Value{"group": cty.StringVal("staff")}, "create",
			"guard_interpreter = \"bash\"\nonly_if = \"pwd\"", "bash", "", "", map[string]string{"code": "pwd"}},
		{"script inherits its interpreter; csh guard gets environment", "script", map[string]cty.Value{"interpreter": cty.StringVal("/bin/sh"), "environment": env}, "run",
			"guard_interpreter = \"bash\"\nnot_if = \"x\"", "bash", "environment,interpreter", "", map[string]string{"code": "x"}},
		{"powershell forces boolean conversion and inherits architecture", "powershell_script", map[string]cty.Value{"architecture": cty.StringVal("i386")}, "run",
			`not_if = "$true"`, "powershell_script", "architecture", "", map[string]string{"convert_boolean_return": "true", "architecture": "i386"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specs, diags := decodeSrc(t, reg, parentOf(reg, c.parentType, c.action, c.parent), c.src, nil)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if len(specs) != 1 {
				t.Fatalf("%d specs", len(specs))
			}
			s := specs[0]
			if s.Interpreter != c.interp {
				t.Errorf("interpreter %q, want %q", s.Interpreter, c.interp)
			}
			if got := strings.Join(s.Inherited, ","); got != c.inherited {
				t.Errorf("inherited %q, want %q", got, c.inherited)
			}
			if got := strings.Join(s.Overridden, ","); got != c.overridden {
				t.Errorf("overridden %q, want %q", got, c.overridden)
			}
			for k, want := range c.values {
				v, ok := s.Values[k]
				if !ok {
					t.Errorf("no value %s in %v", k, s.Values)
					continue
				}
				got := ""
				switch v.Type() {
				case cty.String:
					got = v.AsString()
				case cty.Number:
					got = v.AsBigFloat().Text('g', -1)
				case cty.Bool:
					got = "false"
					if v.True() {
						got = "true"
					}
				}
				if got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			for _, k := range []string{"flags", "returns"} {
				if _, ok := c.parent[k]; ok {
					if _, inherited := s.Values[k]; inherited && !strings.Contains(c.src, k) {
						t.Errorf("%s was inherited; it must not be", k)
					}
				}
			}
		})
	}
}

func TestDecodeActionNothingIsNotGuarded(t *testing.T) {
	reg := testRegistry()
	specs, diags := decodeSrc(t, reg, parentOf(reg, "file", "nothing", nil), `only_if = "true"`, nil)
	if diags.HasErrors() || specs != nil {
		t.Fatalf("specs %v, diags %v", specs, diags)
	}
	// Still checked.
	_, diags = decodeSrc(t, reg, parentOf(reg, "file", "nothing", nil), `only_if = null`, nil)
	if !diags.HasErrors() {
		t.Fatal("a null guard on an action-nothing resource was accepted")
	}
}
