package guard

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// guard_interpreter with an expression guard is an error pointing at
// guard_interpreter, as Chef raises "guard_interpreter does not support
// blocks" (issue 10.2), unless it names the resource's default.
func TestDecodeGuardInterpreterWithExpression(t *testing.T) {
	reg := testRegistry()
	// validate knows the type of host.enabled but not its value.
	vars := map[string]cty.Value{"host": cty.ObjectVal(map[string]cty.Value{"enabled": cty.UnknownVal(cty.Bool)})}
	cases := []struct {
		name, parent, action, src string
		wantErr                   bool
	}{
		{"bool only_if", "file", "create", "guard_interpreter = \"bash\"\nonly_if = true", true},
		{"bool not_if", "file", "create", "\nguard_interpreter = \"bash\"\nnot_if = 1 == 2", true},
		{"in a list with a script", "file", "create", "guard_interpreter = \"bash\"\nonly_if = [\"true\", true]", true},
		{"unknown expression", "file", "create", "guard_interpreter = \"bash\"\nonly_if = host.enabled", true},
		{"default on a runner", "bash", "run", "guard_interpreter = \"default\"\nonly_if = true", true},
		{"action nothing is still checked", "file", "nothing", "guard_interpreter = \"bash\"\nonly_if = true", true},
		{"the default named", "file", "create", "guard_interpreter = \"default\"\nonly_if = true", false},
		{"a runner's own type", "bash", "run", "guard_interpreter = \"bash\"\nnot_if = false", false},
		{"script guards only", "file", "create", "guard_interpreter = \"bash\"\nonly_if = [\"true\", { command = \"true\" }]", false},
		{"null guard_interpreter", "file", "create", "guard_interpreter = null\nonly_if = true", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specs, diags := decodeSrc(t, reg, parentOf(reg, c.parent, c.action, nil), c.src, vars)
			if !c.wantErr {
				if diags.HasErrors() {
					t.Fatal(diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary != "Guard interpreter with an expression guard" {
				t.Fatalf("want one \"Guard interpreter with an expression guard\", got %v", diags)
			}
			d := diags[0]
			// It points at guard_interpreter, whatever line that is on.
			line := 1
			if c.src[0] == '\n' {
				line = 2
			}
			if d.Subject == nil || d.Subject.Filename != "test.hcl" || d.Subject.Start.Line != line {
				t.Errorf("subject %v, want test.hcl:%d", d.Subject, line)
			}
			if specs != nil {
				t.Errorf("specs returned with an error: %v", specs)
			}
		})
	}
}
