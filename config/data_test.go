package config

import (
	"strings"
	"testing"
)

func TestDataBlocks(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string // error summaries
		at    string   // range of the first error
		check func(t *testing.T, c *Config)
	}{
		{
			name: "kept unevaluated, in declaration order, beside resources",
			files: map[string]string{
				"a.hcl": "data \"exec\" \"users\" {\n  command = \"getent passwd\"\n  timeout = node.t\n}\nfile \"/x\" {\n  content = data.exec.users.result.x\n}\n",
				"b.hcl": "data \"users\" \"all\" {}\n",
			},
			check: func(t *testing.T, c *Config) {
				if len(c.Data) != 2 || len(c.Resources) != 1 {
					t.Fatalf("data %d, resources %d", len(c.Data), len(c.Resources))
				}
				d := c.Data[0]
				if d.Type != "exec" || d.Name != "users" || d.Address() != "data.exec.users" || d.DeclRange.Start.Line != 1 {
					t.Errorf("first data block: %+v", d)
				}
				attrs, diags := d.Attributes()
				if diags.HasErrors() || len(attrs) != 2 || attrs["command"] == nil {
					t.Errorf("attributes %v %v", attrs, diags)
				}
				if c.Data[1].Address() != "data.users.all" {
					t.Errorf("second: %s", c.Data[1].Address())
				}
				if got := strings.Join(c.DataTypes(), ","); got != "exec,users" {
					t.Errorf("DataTypes = %s", got)
				}
			},
		},
		{
			name:  "JSON syntax",
			files: map[string]string{"a.hcl.json": `{"data": {"exec": {"x": {"command": "echo {}"}}}}`},
			check: func(t *testing.T, c *Config) {
				if len(c.Data) != 1 || c.Data[0].Address() != "data.exec.x" {
					t.Fatalf("data: %+v", c.Data)
				}
			},
		},
		{
			name:  "one label",
			files: map[string]string{"a.hcl": "data \"exec\" {\n}\n"},
			want:  []string{"Wrong number of block labels"},
			at:    "a.hcl:1",
		},
		{
			name:  "a name that cannot be read as data.TYPE.NAME",
			files: map[string]string{"a.hcl": "data \"exec\" \"a b\" {\n}\n"},
			want:  []string{"Invalid data block label"},
			at:    "a.hcl:1",
		},
		{
			name:  "declared twice",
			files: map[string]string{"a.hcl": "data \"exec\" \"x\" {\n}\n", "b.hcl": "\ndata \"exec\" \"x\" {\n}\n"},
			want:  []string{"Duplicate data block"},
			at:    "b.hcl:2",
		},
		{
			name:  "a nested block",
			files: map[string]string{"a.hcl": "data \"exec\" \"x\" {\n  notifies \"run\" {}\n}\n"},
			check: func(t *testing.T, c *Config) {
				_, diags := c.Data[0].Attributes()
				if len(diags) != 1 || diags[0].Summary != "Unexpected block in a data block" || diags[0].Subject.Start.Line != 2 {
					t.Errorf("diags %v", diags)
				}
			},
		},
		{
			name:  "inside a resource_group",
			files: map[string]string{"a.hcl": "resource_group \"g\" {\n  data \"exec\" \"x\" {}\n}\n"},
			want:  []string{"Unexpected block in a resource group"},
			at:    "a.hcl:2",
		},
		{
			name:  "a resource type cannot be called data",
			files: map[string]string{"a.hcl": "resource_type \"data\" {\n}\n"},
			want:  []string{"Resource type name taken"},
			at:    "a.hcl:1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, diags := LoadDir(writeDir(t, tc.files), testRegistry())
			if got := summaries(diags); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("errors %q, want %q: %v", got, tc.want, diags)
			}
			if tc.at != "" {
				if got := rangeAt(t, diags[0]); got != tc.at {
					t.Errorf("error at %s, want %s", got, tc.at)
				}
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}
