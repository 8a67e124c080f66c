package files

import (
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// The template type is the file type on rendered content: the same plan,
// the same converge, the extra properties never compared.
func TestTemplateConvergesAsAFile(t *testing.T) {
	typ := TemplateType()
	if _, ok := typ.(resources.Templated); !ok {
		t.Fatal("the template type must implement resources.Templated")
	}
	env := resourcetest.TestEnv(t)
	path := filepath.Join(t.TempDir(), "web.conf")
	vars := cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(80)})
	r := resourcetest.NewRes(t, typ, "create", map[string]any{"path": path, "content": "port 80\n", "source": "web.conf.tpl", "variables": vars, "mode": "0640"})
	step := resourcetest.Apply(t, typ, env, r, resources.Create)
	if got := resourcetest.ChangedProps(step); len(got) != 2 || got[0] != "content" || got[1] != "mode" {
		t.Errorf("create changes %v, want content and mode (source and variables are not state)", got)
	}
	if got := resourcetest.ReadFile(t, path); got != "port 80\n" {
		t.Errorf("content %q", got)
	}
	if resourcetest.PermOf(t, path) != 0o640 {
		t.Errorf("mode %o", resourcetest.PermOf(t, path))
	}
	// The same rendering again: nothing to do, whatever the variables.
	r2 := resourcetest.NewRes(t, typ, "create", map[string]any{"path": path, "content": "port 80\n", "source": "other.tpl", "variables": cty.EmptyObjectVal})
	resourcetest.Apply(t, typ, env, r2, resources.NoOp)
	// A new rendering: an update of the content only.
	r3 := resourcetest.NewRes(t, typ, "create", map[string]any{"path": path, "content": "port 81\n", "source": "web.conf.tpl"})
	step = resourcetest.Apply(t, typ, env, r3, resources.Update)
	if got := resourcetest.ChangedProps(step); len(got) != 1 || got[0] != "content" {
		t.Errorf("update changes %v", got)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "delete", map[string]any{"path": path}), resources.Delete)
}

func TestTemplateVariablesValidation(t *testing.T) {
	p := TemplateType().Schema().Property("variables")
	cases := []struct {
		name string
		v    cty.Value
		ok   bool
	}{
		{"object", cty.ObjectVal(map[string]cty.Value{"a": cty.True}), true},
		{"map", cty.MapVal(map[string]cty.Value{"a": cty.StringVal("x")}), true},
		{"list", cty.ListVal([]cty.Value{cty.True}), false},
		{"string", cty.StringVal("x"), false},
		{"node", cty.ObjectVal(map[string]cty.Value{"node": cty.True}), false},
		{"host", cty.MapVal(map[string]cty.Value{"host": cty.True}), false},
		{"unknown", cty.UnknownVal(cty.DynamicPseudoType), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := p.Validate(c.v); (err == nil) != c.ok {
				t.Errorf("Validate(%#v) = %v, want ok=%v", c.v, err, c.ok)
			}
		})
	}
}

// A template is a file for links and races too: a link at its path is
// not followed unless asked, and then only where no other user could
// have made it.
func TestTemplateOnALink(t *testing.T) {
	typ := TemplateType()
	base := t.TempDir()
	real := filepath.Join(base, "real.conf")
	resourcetest.WriteFile(t, real, "old\n", 0o644)
	link := filepath.Join(base, "web.conf")
	symlink(t, "real.conf", link)
	resourcetest.PlanErr(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"path": link, "content": "new\n", "source": "x.tpl"}), "manage_symlink_source = true")
	resourcetest.Apply(t, typ, resourcetest.TestEnv(t), resourcetest.NewRes(t, typ, "create", map[string]any{"path": link, "content": "new\n", "source": "x.tpl", "manage_symlink_source": true}), resources.Update)
	if resourcetest.ReadFile(t, real) != "new\n" {
		t.Fatal("the link's target was not written")
	}
}
