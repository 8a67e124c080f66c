package eval

import (
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/resources"
)

// loadTypes loads a recipe directory of files and compiles its types.
func loadTypes(t *testing.T, files map[string]string) (*config.Config, *resources.Registry, hcl.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, files)
	cfg, diags := config.LoadDir(dir, builtin.Registry())
	if diags.HasErrors() {
		return cfg, nil, diags
	}
	reg, d := Types(cfg, builtin.Registry())
	return cfg, reg, append(diags, d...)
}

const iniType = `
resource_type "kv_setting" {
  description = "One key of an INI file."
  property "path" {
    type     = string
    identity = true
  }
  property "key" {
    type          = string
    name_property = true
    regex         = "^[a-z_]+$"
  }
  property "value" {
    type = string
    validation {
      condition     = length(value) < 10
      error_message = "value ${value} is too long"
    }
  }
  property "backup" {
    type          = bool
    desired_state = false
    default       = true
  }
  property "mode" {
    type    = string
    default = "0644"
    allowed = ["0644", "0600"]
  }
  load_current_value {
    interpreter = "bash"
    code        = "echo '{}'"
    timeout     = 5
  }
  action "create" {
    converge_if_changed {
      properties = ["value"]
      code       = "true"
    }
    converge_by "say hello" {
      when = "exists"
      code = "echo hello"
    }
  }
  action "delete" {
    converge_by "remove the key" {
      code = "true"
    }
  }
}
`

func TestTypesCompile(t *testing.T) {
	_, reg, diags := loadTypes(t, map[string]string{"types.hcl": iniType})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	typ, ok := reg.Lookup("kv_setting")
	if !ok {
		t.Fatal("kv_setting is not registered")
	}
	def := typ.(resources.Definer).Def()
	if def.DefaultAction != "create" || len(def.Actions) != 2 || def.Load == nil || def.Load.Type != "bash" {
		t.Fatalf("definition: %+v", def)
	}
	s := typ.Schema()
	key := s.Property("key")
	if !key.NameProperty || !key.Identity || s.Property("backup").IsDesiredState() || !s.Property("value").IsDesiredState() {
		t.Fatalf("property kinds wrong: %+v %+v", key, s.Property("backup"))
	}
	if def.Source.Filename != "types.hcl" || def.Source.Line != 2 {
		t.Fatalf("source %s", def.Source)
	}
	for _, c := range []struct {
		prop string
		v    cty.Value
		bad  string
	}{
		{"key", cty.StringVal("port"), ""},
		{"key", cty.StringVal("Port"), "does not match"},
		{"value", cty.StringVal("short"), ""},
		{"value", cty.StringVal("far too long a value"), "value far too long a value is too long"},
		{"mode", cty.StringVal("0600"), ""},
		{"mode", cty.StringVal("0777"), "not allowed"},
	} {
		err := s.Property(c.prop).Validate(c.v)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s = %#v: %v", c.prop, c.v, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%s = %#v: want an error with %q, got %v", c.prop, c.v, c.bad, err)
		}
	}
}

func TestTypesBadInput(t *testing.T) {
	typ := func(body string) string {
		return "resource_type \"thing\" {\n" + body + "\n  action \"create\" {\n    converge_by \"x\" { code = \"true\" }\n  }\n}\n"
	}
	cases := []struct {
		name    string
		files   map[string]string
		summary string
	}{
		{"meta-argument property", map[string]string{"t.hcl": typ(`property "only_if" { type = string }`)}, "Property name is a meta-argument"},
		{"action property", map[string]string{"t.hcl": typ(`property "action" { type = string }`)}, "Property name is a meta-argument"},
		{"exists property", map[string]string{"t.hcl": typ(`property "exists" { type = bool }`)}, "Reserved property name"},
		{"no type", map[string]string{"t.hcl": typ(`property "a" {}`)}, "Missing property type"},
		{"bad type", map[string]string{"t.hcl": typ(`property "a" { type = strang }`)}, "Invalid type specification"},
		{"default of wrong type", map[string]string{"t.hcl": typ(`property "a" {
  type = number
  default = "x"
}`)}, "Default of the wrong type"},
		{"default not allowed", map[string]string{"t.hcl": typ(`property "a" {
  type = string
  default = "c"
  allowed = ["a", "b"]
}`)}, "Invalid default"},
		{"bad regex", map[string]string{"t.hcl": typ(`property "a" {
  type = string
  regex = "("
}`)}, "Invalid regular expression"},
		{"two name properties", map[string]string{"t.hcl": typ(`property "a" {
  type = string
  name_property = true
}
property "b" {
  type = string
  name_property = true
}`)}, "Two name properties"},
		{"name property not a string", map[string]string{"t.hcl": typ(`property "a" {
  type = number
  name_property = true
}`)}, "Name property is not a string"},
		{"env clash", map[string]string{"t.hcl": typ(`property "a" { type = string }
property "A" { type = string }`)}, "Two properties with one environment variable"},
		{"property twice", map[string]string{"t.hcl": typ(`property "a" { type = string }
property "a" { type = string }`)}, "Property declared twice"},
		{"built-in name", map[string]string{"t.hcl": `resource_type "file" {
  action "create" {
    converge_by "x" { code = "true" }
  }
}`}, "Resource type name taken"},
		{"declared twice", map[string]string{"a.hcl": typ(""), "b.hcl": typ("")}, "Resource type declared twice"},
		{"no actions", map[string]string{"t.hcl": `resource_type "thing" {}`}, "Resource type without actions"},
		{"unknown default action", map[string]string{"t.hcl": typ(`default_action = "crate"`)}, "Unknown default action"},
		{"action nothing", map[string]string{"t.hcl": `resource_type "thing" {
  action "nothing" {
    converge_by "x" { code = "true" }
  }
}`}, "Invalid action name"},
		{"unknown covered property", map[string]string{"t.hcl": `resource_type "thing" {
  action "create" {
    converge_if_changed {
      properties = ["nope"]
      code       = "true"
    }
  }
}`}, "Unknown property"},
		{"identity covered", map[string]string{"t.hcl": `resource_type "thing" {
  property "p" {
    type     = string
    identity = true
  }
  action "create" {
    converge_if_changed {
      properties = ["p"]
      code       = "true"
    }
  }
}`}, "Property is not desired state"},
		{"converge_by without description", map[string]string{"t.hcl": `resource_type "thing" {
  action "create" {
    converge_by "" { code = "true" }
  }
}`}, "A converge_by block needs a description"},
		{"bad when", map[string]string{"t.hcl": `resource_type "thing" {
  action "create" {
    converge_by "x" {
      when = "sometimes"
      code = "true"
    }
  }
}`}, "Invalid when"},
		{"script without code", map[string]string{"t.hcl": `resource_type "thing" {
  action "create" {
    converge_by "x" { timeout = 3 }
  }
}`}, "Missing required argument"},
		{"bad script value", map[string]string{"t.hcl": `resource_type "thing" {
  action "create" {
    converge_by "x" {
      code = "true"
      cwd  = "relative"
    }
  }
}`}, "Invalid value for property"},
		{"unknown child type", map[string]string{"t.hcl": `resource_type "thing" {
  action "create" {
    fil "x" { path = "/x" }
  }
}`}, "Unknown resource type"},
		{"child with unknown property", map[string]string{"t.hcl": `resource_type "thing" {
  property "p" { type = string }
  action "create" {
    file "x" {
      path    = new_resource.p
      contnet = "x"
    }
  }
}`}, "Unknown property"},
		{"child reads an undeclared property", map[string]string{"t.hcl": `resource_type "thing" {
  property "p" { type = string }
  action "create" {
    file "x" {
      path = new_resource.q
    }
  }
}`}, "Unsupported attribute"},
		{"recursive type", map[string]string{"t.hcl": `resource_type "web_site" {
  action "create" {
    web_page "index" {}
  }
}
resource_type "web_page" {
  action "create" {
    web_site "again" {}
  }
}`}, "Resource type contains itself"},
		{"directly recursive type", map[string]string{"t.hcl": `resource_type "matryoshka" {
  action "create" {
    matryoshka "inner" {}
  }
}`}, "Resource type contains itself"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, diags := loadTypes(t, c.files)
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			var got []string
			for _, d := range diags {
				got = append(got, d.Summary)
				if d.Summary == c.summary {
					if d.Subject == nil {
						t.Errorf("%q has no source range", d.Summary)
					}
					return
				}
			}
			t.Fatalf("want %q, got %q", c.summary, got)
		})
	}
}

func TestTypeCycleNamesTheChain(t *testing.T) {
	_, _, diags := loadTypes(t, map[string]string{"t.hcl": `resource_type "web_site" {
  action "create" {
    web_page "index" {}
  }
}
resource_type "web_page" {
  action "create" {
    web_site "again" {}
  }
}`})
	for _, d := range diags {
		if d.Summary == "Resource type contains itself" {
			if !strings.Contains(d.Detail, "web_site -> web_page -> web_site") {
				t.Fatalf("the chain is not named: %s", d.Detail)
			}
			return
		}
	}
	t.Fatalf("no cycle reported: %v", diags)
}

func TestChildResourcesExpand(t *testing.T) {
	cfg, reg, diags := loadTypes(t, map[string]string{"t.hcl": `
resource_type "web_site" {
  property "root" {
    type     = string
    identity = true
  }
  property "port" {
    type    = number
    default = 8080
  }
  property "token" {
    type      = string
    sensitive = true
  }
  action "create" {
    directory "docroot" {
      path = "${new_resource.root}/${new_resource.name}"
    }
    file "conf" {
      path    = "${new_resource.root}/${new_resource.name}.conf"
      content = "port ${new_resource.port}\n"
      notifies "run" {
        resource = "execute[reload]"
      }
    }
    file "secret" {
      path    = "${new_resource.root}/${new_resource.name}.token"
      content = new_resource.token
    }
    execute "reload" {
      command = "true"
      action  = "nothing"
    }
  }
}
`, "main.hcl": `
web_site "blog" {
  root  = "/srv"
  token = "t0k3n"
}
`})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	scope, _, d := NewScope(cfg, host.Unknown())
	if d.HasErrors() {
		t.Fatal(d)
	}
	insts, d := Resources(cfg, reg, scope)
	if d.HasErrors() {
		t.Fatal(d)
	}
	var addrs []string
	for _, inst := range Flatten(insts) {
		addrs = append(addrs, inst.Address())
	}
	want := "web_site[blog] web_site[blog].directory[docroot] web_site[blog].file[conf] web_site[blog].file[secret] web_site[blog].execute[reload]"
	if strings.Join(addrs, " ") != want {
		t.Fatalf("addresses\n got %s\nwant %s", strings.Join(addrs, " "), want)
	}
	kids := insts[0].Children
	if got := kids[0].Resource.Values["path"].AsString(); got != "/srv/blog" {
		t.Errorf("docroot path %q", got)
	}
	if got := kids[1].Resource.Values["content"].AsString(); got != "port 8080\n" {
		t.Errorf("conf content %q (the parent's default port)", got)
	}
	if len(kids[1].Notifies) != 1 || kids[1].Notifies[0].Target.Address() != "web_site[blog].execute[reload]" {
		t.Errorf("the sibling notification was not resolved: %v", kids[1].Notifies)
	}
	if len(kids[2].SensitiveProps) != 1 || kids[2].SensitiveProps[0] != "content" {
		t.Errorf("a child reading a sensitive property is not sensitive: %v", kids[2].SensitiveProps)
	}
	if kids[0].Parent != insts[0] || kids[0].ParentStep != 0 {
		t.Errorf("parent not recorded")
	}
}
