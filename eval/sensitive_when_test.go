package eval

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// TestSensitiveWhen: a property hides a value that carries a secret (a
// URL with a password) as if the recipe had written sensitive(), and only
// such values.
func TestSensitiveWhen(t *testing.T) {
	fetch := &resources.Schema{
		Name: "fetch",
		Properties: []*resources.Property{
			{Name: "path", Type: cty.String, NameProperty: true},
			{Name: "url", Type: cty.String, NonState: true, SensitiveWhen: func(v cty.Value) bool {
				return strings.Contains(v.AsString(), "@")
			}},
			{Name: "panics", Type: cty.String, NonState: true, SensitiveWhen: func(cty.Value) bool { panic("boom") }},
		},
		Actions: []string{"create"}, DefaultAction: "create",
	}
	reg := resources.NewRegistry(resourcetest.New(fetch))
	dir := writeDir(t, map[string]string{"a.hcl": `
fetch "/a" { url = "https://example.com/a" }
fetch "/b" { url = "https://user:pw@example.com/b" }
fetch "/c" { panics = "x" }
`})
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	scope, _, _ := NewScope(cfg, testHost())
	insts, diags := Resources(cfg, reg, scope)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := map[string]string{"/a": "", "/b": "url", "/c": "panics"}
	for _, inst := range insts {
		if got := strings.Join(inst.SensitiveProps, ","); got != want[inst.Resource.Name] {
			t.Errorf("%s: sensitive %q, want %q (a panicking SensitiveWhen hides the value)", inst.Resource.Name, got, want[inst.Resource.Name])
		}
	}
}
