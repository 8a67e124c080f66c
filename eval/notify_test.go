package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
)

// evalBuiltin loads dir with the built-in types and evaluates it against
// the test host.
func evalBuiltin(t *testing.T, dir string) (*config.Config, []*Instance, hcl.Diagnostics) {
	t.Helper()
	reg := builtin.Registry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		return cfg, nil, diags
	}
	reg, d := Types(cfg, reg)
	if diags = append(diags, d...); diags.HasErrors() {
		return cfg, nil, diags
	}
	scope, _, d := NewScope(cfg, testHost())
	diags = append(diags, d...)
	insts, d := Resources(cfg, reg, scope)
	return cfg, insts, append(diags, d...)
}

func TestNotifications(t *testing.T) {
	cases := []struct {
		name   string
		recipe string
		want   []string // error summaries
		at     string   // range of the first error
		detail string
		edges  []string // Notification.String(), when no errors
	}{
		{
			name: "notifies and subscribes",
			recipe: `
file "/a" {
  content = "a"
  notifies "run" {
    resource = "execute[reload]"
  }
  notifies "run" {
    resource = "execute[pre]"
    timing   = "before"
  }
}
execute "reload" {
  action = "nothing"
}
execute "pre" {
  action = "nothing"
}
execute "watch" {
  action = "nothing"
  subscribes "run" {
    resource = "file[/a]"
    timing   = "immediately"
  }
}
`,
			edges: []string{
				"file[/a] -> execute[reload] (run, delayed)",
				"file[/a] -> execute[pre] (run, before)",
				"file[/a] -> execute[watch] (run, immediately)",
			},
		},
		{
			name:   "missing target",
			recipe: "file \"/a\" {\n  notifies \"run\" {\n    resource = \"execute[relaod]\"\n  }\n}\nexecute \"reload\" {}\n",
			want:   []string{"Notification to a resource that does not exist"},
			at:     "a.hcl:3",
			detail: `Did you mean "execute[reload]"?`,
		},
		{
			name:   "unknown action",
			recipe: "file \"/a\" {\n  notifies \"restart\" {\n    resource = \"execute[x]\"\n  }\n}\nexecute \"x\" {}\n",
			want:   []string{"Unsupported notification action"},
			at:     "a.hcl:2",
			detail: "a.hcl:6",
		},
		{
			name:   "notifies itself",
			recipe: "file \"/a\" {\n  notifies \"create\" {\n    resource = \"file[/a]\"\n  }\n}\n",
			want:   []string{"Resource notifies itself"},
			at:     "a.hcl:2",
		},
		{
			name:   "unknown timing",
			recipe: "file \"/a\" {\n  notifies \"run\" {\n    resource = \"execute[x]\"\n    timing = \"later\"\n  }\n}\nexecute \"x\" {}\n",
			want:   []string{"Invalid notification timing"},
			at:     "a.hcl:4",
		},
		{
			name:   "bad reference",
			recipe: "file \"/a\" {\n  notifies \"run\" {\n    resource = \"execute.x\"\n  }\n}\n",
			want:   []string{"Invalid resource reference"},
			at:     "a.hcl:3",
		},
		{
			name: "before cycle",
			recipe: `
execute "a" {
  notifies "run" {
    resource = "execute[b]"
    timing   = "before"
  }
}
execute "b" {
  notifies "run" {
    resource = "execute[a]"
    timing   = "immediately"
  }
}
`,
			want:   []string{"Notification cycle"},
			at:     "a.hcl:9",
			detail: "execute[a] -> (run, before) execute[b] -> (run, immediately) execute[a]",
		},
		{
			name: "a delayed cycle is fine",
			recipe: `
execute "a" {
  notifies "run" {
    resource = "execute[b]"
  }
}
execute "b" {
  notifies "run" {
    resource = "execute[a]"
  }
}
`,
			edges: []string{"execute[a] -> execute[b] (run, delayed)", "execute[b] -> execute[a] (run, delayed)"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"a.hcl": c.recipe})
			_, insts, diags := evalBuiltin(t, dir)
			if got := summaries(diags); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("errors %q, want %q: %s", got, c.want, diags)
			}
			if len(c.want) > 0 {
				if got := rangeAt(t, diags[0]); got != c.at {
					t.Errorf("first error at %s, want %s", got, c.at)
				}
				if !strings.Contains(diags[0].Detail, c.detail) {
					t.Errorf("detail %q lacks %q", diags[0].Detail, c.detail)
				}
				return
			}
			var got []string
			for _, inst := range insts {
				for _, e := range inst.Notifies {
					got = append(got, e.String())
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.edges, "\n") {
				t.Errorf("edges:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.edges, "\n"))
			}
		})
	}
}

func TestTemplateRendering(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		want    []string // error summaries
		at      string   // FILE:LINE of the first error
		content string   // the rendered content, when no errors
	}{
		{
			name: "source with variables, node, host, if and for",
			files: map[string]string{
				"a.hcl": `
default "web" { port = 8080 }
template "/etc/web.conf" {
  source    = "web.conf.tpl"
  variables = { port = node.web.port, ups = ["a", "b"], tls = true }
}
`,
				"web.conf.tpl": "listen ${port} on ${host.hostname} (${node.web.port})\n%{ for u in ups ~}\nup ${u}\n%{ endfor ~}\n%{ if tls }tls on%{ else }tls off%{ endif }\n",
			},
			content: "listen 8080 on web-01 (8080)\nup a\nup b\ntls on\n",
		},
		{
			name: "inline template sees the variables",
			files: map[string]string{"a.hcl": `
template "/etc/x" {
  variables        = { name = "x" }
  content_template = <<-EOT
    name = ${name}
    os = ${host.os}
  EOT
}
`},
			content: "name = x\nos = linux\n",
		},
		{
			name:  "missing variable in the template file",
			files: map[string]string{"a.hcl": "template \"/etc/x\" {\n  source = \"t.tpl\"\n  variables = { port = 1 }\n}\n", "t.tpl": "a\nport = ${prot}\n"},
			want:  []string{"Unknown variable"},
			at:    "t.tpl:2",
		},
		{
			name:  "syntax error in the template file",
			files: map[string]string{"a.hcl": "template \"/etc/x\" {\n  source = \"t.tpl\"\n}\n", "t.tpl": "a\nb ${ 1 + }\n"},
			at:    "t.tpl:2",
		},
		{
			name:  "wrong type in the template",
			files: map[string]string{"a.hcl": "template \"/etc/x\" {\n  source = \"t.tpl\"\n  variables = { l = [1] }\n}\n", "t.tpl": "x = ${l}\n"},
			want:  []string{"Invalid template interpolation value"},
			at:    "t.tpl:1",
		},
		{
			name:  "unreadable template",
			files: map[string]string{"a.hcl": "template \"/etc/x\" {\n\n  source = \"nope.tpl\"\n}\n"},
			want:  []string{"Cannot read the template"},
			at:    "a.hcl:3",
		},
		{
			name:  "missing variable inline",
			files: map[string]string{"a.hcl": "template \"/etc/x\" {\n  content_template = \"${nope}\"\n}\n"},
			want:  []string{"Unknown variable"},
			at:    "a.hcl:2",
		},
		{
			name:  "content is not settable",
			files: map[string]string{"a.hcl": "template \"/etc/x\" {\n  content_template = \"x\"\n  content = \"y\"\n}\n"},
			want:  []string{"A template's content is rendered"},
			at:    "a.hcl:3",
		},
		{
			name:  "no template",
			files: map[string]string{"a.hcl": "template \"/etc/x\" {\n  mode = \"0644\"\n}\n"},
			want:  []string{"Missing template"},
			at:    "a.hcl:1",
		},
		{
			name:  "two templates",
			files: map[string]string{"a.hcl": "template \"/etc/x\" {\n  source = \"t\"\n  content_template = \"x\"\n}\n", "t": "x"},
			want:  []string{"Two templates given"},
			at:    "a.hcl:3",
		},
		{
			name:  "variables called node",
			files: map[string]string{"a.hcl": "template \"/etc/x\" {\n  content_template = \"x\"\n  variables = { node = 1 }\n}\n"},
			want:  []string{"Invalid value for property"},
			at:    "a.hcl:3",
		},
		{
			name:    "delete needs no template",
			files:   map[string]string{"a.hcl": "template \"/etc/x\" {\n  action = \"delete\"\n}\n"},
			content: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, c.files)
			cfg, insts, diags := evalBuiltin(t, dir)
			if !diags.HasErrors() && c.at != "" {
				t.Fatalf("no error, want one at %s", c.at)
			}
			if diags.HasErrors() {
				if c.at == "" {
					t.Fatalf("errors: %s", diags)
				}
				if c.want != nil {
					if got := summaries(diags); strings.Join(got, "|") != strings.Join(c.want, "|") {
						t.Fatalf("errors %q, want %q: %s", got, c.want, diags)
					}
				}
				if got := rangeAt(t, diags[0]); got != c.at {
					t.Errorf("first error at %s, want %s: %s", got, c.at, diags)
				}
				// The template file is known to the parser, for snippets.
				if f := diags[0].Subject.Filename; filepath.Ext(f) != ".hcl" {
					if _, ok := cfg.Parser.Files()[f]; !ok {
						t.Errorf("%s is not in the parser's files", f)
					}
				}
				return
			}
			got := insts[0].Resource.Get("content")
			if c.content == "" {
				if insts[0].Resource.IsSet("content") {
					t.Errorf("content set: %#v", got)
				}
				return
			}
			if got.Type() != cty.String || got.AsString() != c.content {
				t.Errorf("content = %#v, want %q", got, c.content)
			}
		})
	}
}

func TestTemplateDirInPolicyMode(t *testing.T) {
	cb := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Not a cookbook: a folder called recipes is a recipe folder.
	if got, want := config.TemplateDir(filepath.Join(cb, "recipes")), filepath.Join(cb, "recipes"); got != want {
		t.Errorf("config.TemplateDir = %s, want %s", got, want)
	}
	must(os.WriteFile(filepath.Join(cb, "metadata.hcl"), []byte("name = \"cb\"\nversion = \"1.0.0\"\n"), 0o644))
	if got, want := config.TemplateDir(filepath.Join(cb, "recipes")), filepath.Join(cb, "templates"); got != want {
		t.Errorf("config.TemplateDir = %s, want %s", got, want)
	}
	if got, want := config.TemplateDir(cb), filepath.Join(cb, "templates"); got != want {
		t.Errorf("config.TemplateDir(cookbook root) = %s, want %s", got, want)
	}
	if other := t.TempDir(); config.TemplateDir(other) != other {
		t.Errorf("config.TemplateDir(%s) = %s", other, config.TemplateDir(other))
	}
	// A recipe in a cookbook's recipes/ reads templates/.
	must(os.MkdirAll(filepath.Join(cb, "recipes"), 0o755))
	must(os.MkdirAll(filepath.Join(cb, "templates"), 0o755))
	must(os.WriteFile(filepath.Join(cb, "templates", "x.tpl"), []byte("v=${v}"), 0o644))
	must(os.WriteFile(filepath.Join(cb, "recipes", "default.hcl"), []byte("template \"/etc/x\" {\n  source = \"x.tpl\"\n  variables = { v = 1 }\n}\n"), 0o644))
	_, insts, diags := evalBuiltin(t, filepath.Join(cb, "recipes"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := insts[0].Resource.String("content"); got != "v=1" {
		t.Errorf("content = %q", got)
	}
}
