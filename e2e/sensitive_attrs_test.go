package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A node attribute written with sensitive(), and every attribute a
// sensitive resource reads, stay out of every output; what is computed
// from them is hidden too. Only the plan file keeps the desired values
// apply needs.
func TestE2ESensitiveAttributes(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
default "db" {
  password = sensitive("hunter2-attr")
  user     = "app-user-secret"
  host     = "db.internal"
}
file "ROOT/app.conf" {
  content = "host=${node.db.host}\npassword=${node.db.password}\n"
}
file "ROOT/plain.conf" {
  content = "host=${node.db.host}\n"
}
file "ROOT/user.conf" {
  content   = node.db.user
  sensitive = true
}
execute "check" {
  command = "true"
  only_if = "test ${node.db.password} != x"
}
`)
	r := e.must(0, "plan", "-out=plan.out")
	outputs := map[string]string{"plan": r.stdout + r.stderr}
	outputs["show"] = e.must(0, "show", "plan.out").stdout
	outputs["show -json"] = e.must(0, "show", "-json", "plan.out").stdout
	outputs["show -markdown"] = e.must(0, "show", "-markdown", "plan.out").stdout
	outputs["plan -json"] = e.must(0, "plan", "-json").stdout
	for name, out := range outputs {
		for _, secret := range []string{"hunter2-attr", "app-user-secret"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s shows %q:\n%s", name, secret, out)
			}
		}
	}
	if !strings.Contains(outputs["plan"], "host=db.internal") {
		t.Errorf("a resource reading only plain attributes is hidden too:\n%s", outputs["plan"])
	}
	if !strings.Contains(outputs["show -json"], `"sensitive": true`) {
		t.Errorf("show -json does not mark the sensitive attributes:\n%s", outputs["show -json"])
	}
	e.must(0, "apply", "plan.out")
	b, _ := os.ReadFile(filepath.Join(e.root, "app.conf"))
	if string(b) != "host=db.internal\npassword=hunter2-attr\n" {
		t.Errorf("applied content %q", b)
	}
}

// A diagnostic about an expression reading a sensitive attribute does not
// show its value.
func TestE2ESensitiveAttributeInADiagnostic(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
default "db" {
  name = sensitive("secret-name")
  tag  = "plain-tag"
}
file "ROOT/x" {
  content = node.db.name + 1
}
file "ROOT/y" {
  content = node.db.tag + 1
}
`)
	r := e.must(1, "validate")
	if strings.Contains(r.stderr, "secret-name") || !strings.Contains(r.stderr, "node.db.name has a sensitive value") {
		t.Errorf("validate:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, `node.db.tag is "plain-tag"`) {
		t.Errorf("a plain value is not shown:\n%s", r.stderr)
	}
}
