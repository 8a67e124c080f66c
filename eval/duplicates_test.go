package eval

import (
	"strings"
	"testing"
)

func TestDuplicateIdentities(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // summaries of the errors, in order
		detail    string
	}{
		{"same path under two names", "file \"/s/a\" { content = \"a\" }\nfile \"other\" {\n  path = \"/s/a\"\n  content = \"b\"\n}\n",
			[]string{"Two resources manage the same path"}, `file[other] and file[/s/a] (declared at`},
		{"a file and a template at one path", "file \"/s/a\" { content = \"a\" }\ntemplate \"/s/a\" { source = \"t.tpl\" }\n",
			[]string{"Two resources manage the same path"}, `template[/s/a] and file[/s/a]`},
		{"a link where a directory is", "directory \"/s/d\" {}\nlink \"/s/d\" { to = \"/s/e\" }\n",
			[]string{"Two resources manage the same path"}, `link[/s/d] and directory[/s/d]`},
		{"guarded alternatives", "file \"prod\" {\n  path = \"/s/motd\"\n  content = \"p\"\n  only_if = host.os == \"linux\"\n}\nfile \"dev\" {\n  path = \"/s/motd\"\n  content = \"d\"\n  not_if = host.os == \"linux\"\n}\n",
			nil, ""},
		{"a notification target", "file \"/s/a\" { content = \"a\" }\nfile \"reset\" {\n  path = \"/s/a\"\n  content = \"\"\n  action = \"nothing\"\n}\n",
			nil, ""},
		{"the same command twice", "execute \"a\" { command = \"true\" }\nexecute \"b\" { command = \"true\" }\n", nil, ""},
		{"different paths", "file \"/s/a\" { content = \"a\" }\nfile \"/s/b\" { content = \"a\" }\n", nil, ""},
		{"one identity of a custom type twice", kvType + "kv \"port\" {\n  path = \"/s/app.ini\"\n  value = \"80\"\n}\nkv \"other\" {\n  key = \"port\"\n  path = \"/s/app.ini\"\n  value = \"81\"\n}\n",
			[]string{"Two resources manage the same kv"}, `kv[other] and kv[port] (declared at`},
		{"another identity of a custom type", kvType + "kv \"port\" {\n  path = \"/s/app.ini\"\n}\nkv \"port2\" {\n  key = \"port\"\n  path = \"/s/other.ini\"\n}\n", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"a.hcl": c.src, "t.tpl": "x"})
			_, _, diags := evalBuiltin(t, dir)
			got := summaries(diags)
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("errors %q, want %q\n%s", got, c.want, diags)
			}
			if c.detail != "" && !strings.Contains(diags[0].Detail, c.detail) {
				t.Errorf("detail %q lacks %q", diags[0].Detail, c.detail)
			}
		})
	}
}

func TestDecimalModeWarns(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": "file \"/s/a\" {\n  content = \"a\"\n  mode = 644\n}\n"})
	_, insts, diags := evalBuiltin(t, dir)
	if diags.HasErrors() || len(diags) != 1 || diags[0].Summary != "Value probably not what was meant" || rangeAt(t, diags[0]) != "a.hcl:3" {
		t.Fatalf("diagnostics %v", diags)
	}
	// A warning only: the value is still the numeric mode.
	if got := insts[0].Resource.Values["mode"].AsString(); got != "1204" {
		t.Errorf("mode %q", got)
	}
}

// kvType is a custom type whose identity is a path and a key.
const kvType = `resource_type "kv" {
  property "key" {
    type          = string
    name_property = true
  }
  property "path" {
    type     = string
    identity = true
  }
  property "value" {
    type = string
  }
  load_current_value {
    code = "echo '{}'"
  }
  action "create" {
    converge_if_changed {
      code = "true"
    }
  }
}
`
