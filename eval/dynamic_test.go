package eval

import (
	"strings"
	"testing"

	"github.com/toquehq/toque/resources"
)

// dynamicType makes two properties and two converge_by steps with
// dynamic blocks (one with a nested dynamic validation).
const dynamicType = `
resource_type "app" {
  property "name" {
    type          = string
    name_property = true
  }
  dynamic "property" {
    for_each = { user = "nobody", group = "nogroup" }
    labels   = [property.key]
    content {
      type          = string
      default       = property.value
      desired_state = false
      dynamic "validation" {
        for_each = toset(["x"])
        content {
          condition     = value != validation.value
          error_message = "not ${validation.value}"
        }
      }
    }
  }
  load_current_value {
    code = "echo '{}'"
  }
  action "create" {
    converge_by "first" {
      code = "true"
    }
    dynamic "converge_by" {
      for_each = ["restart", "check"]
      labels   = [converge_by.value]
      content {
        code = "echo ${converge_by.value}"
      }
    }
  }
}
`

func TestDynamicBlocksInTypes(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		want  []string // error summaries
		at    string
		check func(t *testing.T, reg *resources.Registry)
	}{
		{
			name: "properties and converge_by steps",
			src:  dynamicType + "app \"web\" {\n  user = \"www\"\n}\n",
			check: func(t *testing.T, reg *resources.Registry) {
				typ, ok := reg.Lookup("app")
				if !ok {
					t.Fatal("no type app")
				}
				var props []string
				for _, p := range typ.Schema().Properties {
					props = append(props, p.Name)
				}
				if got := strings.Join(props, " "); got != "name group user" {
					t.Errorf("properties %q", got)
				}
				if d := typ.Schema().Property("group").Default; d.AsString() != "nogroup" {
					t.Errorf("default of group %#v", d)
				}
				def := typ.(resources.Definer).Def()
				var steps []string
				for _, s := range def.Action("create").Steps {
					steps = append(steps, s.Description)
				}
				if got := strings.Join(steps, " "); got != "first restart check" {
					t.Errorf("steps %q", got)
				}
			},
		},
		{
			name: "a generated validation",
			src:  dynamicType + "app \"web\" {\n  user = \"x\"\n}\n",
			want: []string{"Invalid value for property"},
			at:   "a.hcl:40",
		},
		{
			name: "a dynamic action",
			src:  "resource_type \"t\" {\n  dynamic \"action\" {\n    for_each = {}\n    content {}\n  }\n}\n",
			want: []string{"Unsupported dynamic block type"},
			at:   "a.hcl:2",
		},
		{
			name: "a dynamic child resource",
			src:  "resource_type \"t\" {\n  action \"create\" {\n    dynamic \"file\" {\n      for_each = {}\n      content {}\n    }\n  }\n}\n",
			want: []string{"Unsupported dynamic block type"},
			at:   "a.hcl:3",
		},
		{
			name: "a property made twice",
			src:  "resource_type \"t\" {\n  property \"a\" {\n    type = string\n  }\n  dynamic \"property\" {\n    for_each = toset([\"a\"])\n    labels = [property.value]\n    content {\n      type = string\n    }\n  }\n}\n",
			want: []string{"Property declared twice"},
			at:   "a.hcl:5",
		},
		{
			name: "a for_each that is not a collection",
			src:  "resource_type \"t\" {\n  dynamic \"property\" {\n    for_each = 3\n    labels = [\"x\"]\n    content {\n      type = string\n    }\n  }\n}\n",
			want: []string{"Invalid dynamic for_each value"},
			at:   "a.hcl:3",
		},
		{
			name: "node is not there",
			src:  "resource_type \"t\" {\n  dynamic \"property\" {\n    for_each = node.props\n    labels = [property.key]\n    content {\n      type = string\n    }\n  }\n}\n",
			want: []string{"Variables not allowed"},
			at:   "a.hcl:3",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, reg, diags := loadTypes(t, map[string]string{"a.hcl": c.src})
			if !diags.HasErrors() && len(c.want) > 0 {
				scope, _, d := NewScope(cfg, testHost())
				diags = append(diags, d...)
				_, d = Resources(cfg, reg, scope)
				diags = append(diags, d...)
			}
			if got := summaries(diags); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("errors %q, want %q\n%s", got, c.want, diags)
			}
			if len(c.want) > 0 {
				if got := rangeAt(t, firstError(diags)); got != c.at {
					t.Errorf("first error at %s, want %s", got, c.at)
				}
				return
			}
			c.check(t, reg)
		})
	}
}
