package config

import (
	"strings"
	"testing"
)

func TestMetaOfInstancesAndGroups(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string // error summaries
		at    string   // range of the first error
		check func(t *testing.T, c *Config)
	}{
		{
			name: "for_each, count and dynamic blocks are kept unevaluated",
			files: map[string]string{"a.hcl": `file "v" {
  for_each = node.sites
  path = "/s/${each.key}"
  dynamic "notifies" {
    for_each = node.hooks
    labels = ["run"]
    content {
      resource = notifies.value
    }
  }
}
file "n" {
  count = 3
  path = "/n/${count.index}"
}
`},
			check: func(t *testing.T, c *Config) {
				v, n := c.Resources[0], c.Resources[1]
				if v.Meta.ForEach == nil || v.Meta.Count != nil || len(v.Meta.Dynamic) != 1 || !v.Meta.Expands() {
					t.Errorf("meta of file[v]: %+v", v.Meta)
				}
				if n.Meta.Count == nil || !n.Meta.Expands() {
					t.Errorf("meta of file[n]: %+v", n.Meta)
				}
				if attrs, _ := v.Attributes(); len(attrs) != 1 || attrs["path"] == nil {
					t.Errorf("attributes of file[v]: %v", attrs)
				}
			},
		},
		{
			name:  "count and for_each together",
			files: map[string]string{"a.hcl": "file \"x\" {\n  for_each = {}\n  count = 1\n}\n"},
			want:  []string{"Invalid combination of count and for_each"},
			at:    "a.hcl:3",
		},
		{
			name:  "a dynamic block of something but notifies",
			files: map[string]string{"a.hcl": "file \"x\" {\n  dynamic \"only_if\" {\n    for_each = {}\n    content {}\n  }\n}\n"},
			want:  []string{"Unsupported dynamic block type"},
			at:    "a.hcl:2",
		},
		{
			name: "a group's resources keep their addresses",
			files: map[string]string{"a.hcl": `resource_group "core" {
  only_if = true
  not_if  = "test -e /x"
  notifies "run" {
    resource = "file[/after]"
  }
  file "/a" {}
  file "/b" {
    only_if = false
  }
}
file "/after" {}
`},
			check: func(t *testing.T, c *Config) {
				if len(c.Groups) != 1 || len(c.Resources) != 3 {
					t.Fatalf("groups %d, resources %d", len(c.Groups), len(c.Resources))
				}
				g := c.Groups[0]
				if g.Name != "core" || g.OnlyIf == nil || g.NotIf == nil || len(g.Notifies) != 1 || g.Size != 2 || g.Address() != "resource_group[core]" {
					t.Errorf("group %+v", g)
				}
				if c.Resources[0].Group != g || c.Resources[1].Group != g || c.Resources[2].Group != nil {
					t.Errorf("members wrong")
				}
				if c.Resources[1].Address() != "file[/b]" || c.Resources[1].Meta.OnlyIf == nil {
					t.Errorf("member %s", c.Resources[1].Address())
				}
			},
		},
		{
			name: "a group in JSON",
			files: map[string]string{"a.hcl.json": `{"resource_group": {"core": {
  "only_if": "${true}",
  "file": {"/a": {}}
}}}`},
			check: func(t *testing.T, c *Config) {
				if len(c.Groups) != 1 || len(c.Resources) != 1 || c.Resources[0].Group != c.Groups[0] || c.Groups[0].OnlyIf == nil {
					t.Errorf("groups %+v resources %+v", c.Groups, c.Resources)
				}
			},
		},
		{
			name:  "an argument groups do not take",
			files: map[string]string{"a.hcl": "resource_group \"g\" {\n  action = \"delete\"\n  file \"/a\" {}\n}\n"},
			want:  []string{"Unsupported argument in a resource group"},
			at:    "a.hcl:2",
		},
		{
			name:  "a nested group",
			files: map[string]string{"a.hcl": "resource_group \"g\" {\n  resource_group \"h\" {}\n}\n"},
			want:  []string{"Nested resource group"},
			at:    "a.hcl:2",
		},
		{
			name:  "attributes in a group",
			files: map[string]string{"a.hcl": "resource_group \"g\" {\n  default \"x\" {\n    y = 1\n  }\n}\n"},
			want:  []string{"Unexpected block in a resource group"},
			at:    "a.hcl:2",
		},
		{
			name:  "an unknown type in a group",
			files: map[string]string{"a.hcl": "resource_group \"g\" {\n  fiel \"/a\" {}\n}\n"},
			want:  []string{"Unknown resource type"},
			at:    "a.hcl:2",
		},
		{
			name:  "two groups of one name",
			files: map[string]string{"a.hcl": "resource_group \"g\" {}\nresource_group \"g\" {}\n"},
			want:  []string{"Duplicate resource group"},
			at:    "a.hcl:2",
		},
		{
			name:  "a resource in a group and outside",
			files: map[string]string{"a.hcl": "resource_group \"g\" {\n  file \"/a\" {}\n}\nfile \"/a\" {}\n"},
			want:  []string{"Duplicate resource"},
			at:    "a.hcl:4",
		},
		{
			name:  "a group without a name",
			files: map[string]string{"a.hcl": "resource_group {\n}\n"},
			want:  []string{"Wrong number of block labels"},
			at:    "a.hcl:1",
		},
		{
			name:  "a type may not be called resource_group",
			files: map[string]string{"a.hcl": "resource_type \"resource_group\" {\n}\n"},
			want:  []string{"Resource type name taken"},
			at:    "a.hcl:1",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, diags := LoadDir(writeDir(t, c.files), testRegistry())
			if got := summaries(diags); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("errors %q, want %q\n%s", got, c.want, diags)
			}
			if len(c.want) > 0 {
				if got := rangeAt(t, diags[0]); got != c.at {
					t.Errorf("first error at %s, want %s", got, c.at)
				}
				return
			}
			if c.check != nil {
				c.check(t, cfg)
			}
		})
	}
}
