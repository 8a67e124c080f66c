package eval

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
)

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name   string
		recipe string
		want   []string // error summaries
		at     string   // line of the first error ("a.hcl:N")
		detail string   // substring of the first error's detail
		check  func(t *testing.T, insts []*Instance)
	}{
		{
			name: "values, defaults and normalisation",
			recipe: `
default "web" { mode = 420 }
file "/srv/index.html" {
  content   = "<h1>${host.hostname}</h1>"
  mode      = node.web.mode
  backup    = "3"
  tags      = ["a", 1]
  sensitive = true
}
file "/etc/motd" {
  path           = "/etc/motd2"
  mode           = "644"
  content        = null
  action         = ["touch"]
  ignore_failure = "true"
}
account "bob" { uid = 1000 }
`,
			check: func(t *testing.T, insts []*Instance) {
				if len(insts) != 3 {
					t.Fatalf("%d instances", len(insts))
				}
				r := insts[0].Resource
				want := map[string]cty.Value{
					"path":    cty.StringVal("/srv/index.html"),
					"content": cty.StringVal("<h1>web-01</h1>"),
					"mode":    cty.StringVal("0644"),
					"backup":  cty.NumberIntVal(3),
					"tags":    cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("1")}),
				}
				if len(r.Values) != len(want) {
					t.Errorf("values = %#v", r.Values)
				}
				for k, v := range want {
					if !r.Values[k].RawEquals(v) {
						t.Errorf("%s = %#v, want %#v", k, r.Values[k], v)
					}
				}
				if r.Action != "create" || !insts[0].Sensitive || insts[0].IgnoreFailure || r.Address() != "file[/srv/index.html]" {
					t.Errorf("action %q sensitive %v ignore %v", r.Action, insts[0].Sensitive, insts[0].IgnoreFailure)
				}
				r = insts[1].Resource
				if r.Name != "/etc/motd" || r.String("path") != "/etc/motd2" || r.String("mode") != "0644" || r.IsSet("content") {
					t.Errorf("motd = %#v", r.Values)
				}
				if r.Action != "touch" || !insts[1].IgnoreFailure {
					t.Errorf("action %q ignore %v", r.Action, insts[1].IgnoreFailure)
				}
				if insts[2].Resource.String("username") != "bob" || insts[2].Resource.Int("uid") != 1000 {
					t.Errorf("account = %#v", insts[2].Resource.Values)
				}
			},
		},
		{
			name:   "unknown property",
			recipe: "file \"/x\" {\n  contnet = \"hi\"\n}\n",
			want:   []string{"Unknown property"},
			at:     "a.hcl:2",
			detail: `Did you mean "content"?`,
		},
		{
			name:   "unknown property lists the valid ones",
			recipe: "file \"/x\" {\n  colour = \"red\"\n}\n",
			want:   []string{"Unknown property"},
			detail: `"path", "content", "mode", "backup" and "tags"`,
		},
		{
			name:   "wrong type",
			recipe: "file \"/x\" {\n  content = [\"a\"]\n}\n",
			want:   []string{"Wrong type for property"},
			at:     "a.hcl:2",
			detail: "must be string",
		},
		{
			name:   "normalize error",
			recipe: "file \"/x\" {\n  mode = \"rwx\"\n}\n",
			want:   []string{"Invalid value for property"},
			at:     "a.hcl:2",
			detail: "not an octal number",
		},
		{
			name:   "validate error on the label",
			recipe: "file \"relative\" {}\n",
			want:   []string{"Invalid value for property"},
			at:     "a.hcl:1",
			detail: "not absolute",
		},
		{
			name:   "missing required",
			recipe: "\naccount \"bob\" {}\n",
			want:   []string{"Missing required property"},
			at:     "a.hcl:2",
			detail: `"uid"`,
		},
		{
			name:   "null required counts as unset",
			recipe: "account \"bob\" { uid = null }\n",
			want:   []string{"Missing required property"},
		},
		{
			name:   "bad action",
			recipe: "file \"/x\" {\n  action = \"creat\"\n}\n",
			want:   []string{"Unsupported action"},
			at:     "a.hcl:2",
			detail: `Did you mean "create"?`,
		},
		{
			name:   "two actions, run in order",
			recipe: "file \"/x\" {\n  action = [\"create\", \"touch\"]\n}\n",
			check: func(t *testing.T, insts []*Instance) {
				if got := insts[0].Actions; len(got) != 2 || got[0] != "create" || got[1] != "touch" || insts[0].Resource.Action != "create" {
					t.Errorf("actions %q, resource action %q", got, insts[0].Resource.Action)
				}
			},
		},
		{
			name:   "nothing among other actions",
			recipe: "file \"/x\" {\n  action = [\"create\", \"nothing\"]\n}\n",
			want:   []string{"Action nothing stands alone"},
			at:     "a.hcl:2",
		},
		{
			name:   "an unknown action in a list",
			recipe: "file \"/x\" {\n  action = [\"create\", \"tuoch\"]\n}\n",
			want:   []string{"Unsupported action"},
			detail: `Did you mean "touch"?`,
		},
		{
			name:   "action of the wrong type",
			recipe: "file \"/x\" {\n  action = 3\n}\n",
			want:   []string{"Wrong type for action"},
		},
		{
			name:   "sensitive not a bool",
			recipe: "file \"/x\" {\n  sensitive = \"very\"\n}\n",
			want:   []string{"Wrong type for sensitive"},
		},
		{
			name:   "block inside a resource",
			recipe: "file \"/x\" {\n  tags {\n  }\n}\n",
			want:   []string{"Unexpected block"},
			at:     "a.hcl:2",
		},
		{
			name:   "missing node attribute has a range",
			recipe: "default \"web\" { port = 1 }\nfile \"/x\" {\n  content = \"${node.web.nope}\"\n}\n",
			want:   []string{"Unsupported attribute"},
			at:     "a.hcl:3",
		},
		{
			name:   "missing node attribute when nothing was written",
			recipe: "file \"/x\" {\n  content = node.web.port\n}\n",
			want:   []string{"Unsupported attribute"},
			at:     "a.hcl:2",
		},
		{
			name:   "missing host fact",
			recipe: "file \"/x\" {\n  content = host.colour\n}\n",
			want:   []string{"Unsupported attribute"},
			at:     "a.hcl:2",
		},
		{
			name: "every error at once",
			recipe: `
file "/a" { contnet = "x" }
file "/b" { action = "nope" }
account "c" {}
`,
			want: []string{"Unknown property", "Unsupported action", "Missing required property"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"a.hcl": tc.recipe})
			_, insts, diags := plan(t, dir)
			got := summaries(diags)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("errors = %q, want %q\n%s", got, tc.want, diags)
			}
			if len(tc.want) > 0 {
				if tc.at != "" {
					if at := rangeAt(t, diags[0]); at != tc.at {
						t.Errorf("at %s, want %s", at, tc.at)
					}
				}
				if tc.detail != "" && !strings.Contains(diags[0].Detail, tc.detail) {
					t.Errorf("detail %q does not mention %q", diags[0].Detail, tc.detail)
				}
			}
			if tc.check != nil {
				tc.check(t, insts)
			}
		})
	}
}

func TestEvaluateJSONSyntax(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.hcl.json": `{
  "default": {"web": {"port": 8080, "tls": {"enabled": true}}},
  "override": {"web": {"port": 9090}},
  "file": {
    "/b": {"content": "${node.web.port} on ${host.hostname}", "mode": 420, "action": "touch"},
    "/a": {
      "content": "a",
      "notifies": {"touch": {"resource": "file[/b]", "timing": "immediately"}},
      "only_if": "${node.web.tls.enabled}"
    }
  },
  "account": {"bob": {"uid": "7"}}
}`,
	})
	cfg, insts, diags := plan(t, dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, i := range insts {
		got = append(got, i.Resource.Address())
	}
	if strings.Join(got, " ") != "file[/b] file[/a] account[bob]" {
		t.Errorf("order = %v", got)
	}
	b := insts[0].Resource
	if b.String("content") != "9090 on web-01" || b.String("mode") != "0644" || b.Action != "touch" {
		t.Errorf("file[/b] = %#v %s", b.Values, b.Action)
	}
	a := cfg.Resources[1]
	if len(a.Meta.Notifies) != 1 || a.Meta.Notifies[0].Action != "touch" || !a.Meta.HasGuards() {
		t.Errorf("file[/a] meta = %+v", a.Meta)
	}
	if insts[2].Resource.Int("uid") != 7 {
		t.Errorf("uid = %#v", insts[2].Resource.Values)
	}

	// Errors in JSON point into the JSON file.
	dir = writeDir(t, map[string]string{"a.hcl.json": "{\n  \"file\": {\"/x\": {\n    \"contnet\": \"x\"}}\n}\n"})
	_, _, diags = plan(t, dir)
	if got := summaries(diags); len(got) != 1 || got[0] != "Unknown property" {
		t.Fatalf("errors = %q", got)
	}
	if at := rangeAt(t, diags[0]); at != "a.hcl.json:3" {
		t.Errorf("at %s", at)
	}
}

func TestTemplateAndFileRelativeToRecipe(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.hcl": `
default "web" { port = 8080 }
file "/etc/web.conf" {
  content = templatefile("templates/web.conf.tpl", { port = node.web.port, names = ["a", "b"] })
}
file "/etc/motd" {
  content = "${file("motd.txt")}${fileexists("nope") ? "!" : "?"}${basename(abspath("motd.txt"))}"
}
`,
		"templates/web.conf.tpl": "listen ${port}\n%{ for n in names ~}\nserver ${upper(n)}\n%{ endfor ~}\n",
		"motd.txt":               "hello\n",
	})
	_, insts, diags := plan(t, dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := insts[0].Resource.String("content"); got != "listen 8080\nserver A\nserver B\n" {
		t.Errorf("template = %q", got)
	}
	if got := insts[1].Resource.String("content"); got != "hello\n?motd.txt" {
		t.Errorf("file = %q", got)
	}
}

func TestTemplateErrorsPointIntoTemplate(t *testing.T) {
	cases := []struct {
		name, tpl, want, at string
	}{
		{"unknown variable", "line one\nport ${prot}\n", "Unknown variable", "web.tpl:2"},
		{"syntax error", "a\nb\n%{ if }\n", "Invalid expression", "web.tpl:3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{
				"a.hcl":   "file \"/x\" {\n  content = templatefile(\"web.tpl\", { port = 1 })\n}\n",
				"web.tpl": tc.tpl,
			})
			cfg, _, diags := plan(t, dir)
			got := summaries(diags)
			if len(got) == 0 || got[0] != tc.want {
				t.Fatalf("errors = %q\n%s", got, diags)
			}
			if at := rangeAt(t, diags[0]); at != tc.at {
				t.Errorf("at %s, want %s", at, tc.at)
			}
			if !strings.Contains(diags[0].Detail, "a.hcl:2") {
				t.Errorf("detail %q does not name the call", diags[0].Detail)
			}
			if _, ok := cfg.Parser.Files()[filepath.Join(dir, "web.tpl")]; !ok {
				t.Error("template not added to the parser's files for snippets")
			}
		})
	}
}

func TestFileErrors(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.hcl": "file \"/x\" {\n  content = file(\"missing.txt\")\n}\n",
	})
	_, _, diags := plan(t, dir)
	if got := summaries(diags); len(got) != 1 || got[0] != "Invalid function argument" {
		t.Fatalf("errors = %q\n%s", got, diags)
	}
	if !strings.Contains(diags[0].Detail, "missing.txt") || rangeAt(t, diags[0]) != "a.hcl:2" {
		t.Errorf("diag = %s", diags[0])
	}
}

func TestValidateWithoutHost(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.hcl": `
default "web" {
  name = "www.${host.fqdn}"
  port = 80
}
file "/etc/hostname" {
  content = "${host.hostname}\n"
  mode    = host.cpus > 1 ? "0644" : "0600"
  action  = host.os == "linux" ? "create" : "nothing"
}
file "/etc/web" {
  content = node.web.name
  backup  = node.web.port
}
account "x" { uid = host.cpus }
`,
	})
	reg := testRegistry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	scope := &Scope{Node: unknownNode(t, cfg), Host: cty.DynamicVal}
	insts, diags := Resources(cfg, reg, scope)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(insts) != 3 {
		t.Fatalf("%d instances", len(insts))
	}
	r := insts[0].Resource
	if r.Values["content"].IsKnown() || r.Values["mode"].IsKnown() || r.Action != "create" {
		t.Errorf("hostname = %#v %s", r.Values, r.Action)
	}
	if v := r.Values["content"]; v.Type() != cty.String {
		t.Errorf("unknown content has type %s, want string", v.Type().FriendlyName())
	}
	r = insts[1].Resource
	if r.Values["content"].IsKnown() || !r.Values["backup"].RawEquals(cty.NumberIntVal(80)) {
		t.Errorf("web = %#v", r.Values)
	}

	// With host.Unknown(), a fact that does not exist is still an error.
	dir = writeDir(t, map[string]string{"a.hcl": "file \"/x\" {\n  content = host.hostnme\n}\n"})
	cfg = mustLoad(t, dir)
	_, diags = Resources(cfg, reg, &Scope{Node: unknownNode(t, cfg), Host: host.Unknown()})
	if got := summaries(diags); len(got) != 1 || got[0] != "Unsupported attribute" || rangeAt(t, diags[0]) != "a.hcl:2" {
		t.Errorf("errors = %q", got)
	}

	// A wrong type is still caught without the host.
	dir = writeDir(t, map[string]string{"a.hcl": "file \"/x\" {\n  content = [host.hostname]\n  mode = \"bad\"\n}\n"})
	cfg, diags = config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = Resources(cfg, reg, &Scope{Node: unknownNode(t, cfg), Host: cty.DynamicVal})
	if got := summaries(diags); strings.Join(got, "|") != "Wrong type for property|Invalid value for property" {
		t.Errorf("errors = %q", got)
	}
}

func TestEvaluateBlockDirect(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": "file \"/x\" { content = \"y\" }\n"})
	reg := testRegistry()
	cfg := mustLoad(t, dir)
	typ, _ := reg.Lookup("file")
	inst, diags := Block(cfg.Resources[0], typ, &Scope{Node: cty.EmptyObjectVal, Host: testHost()}, reg)
	if diags.HasErrors() || inst == nil || inst.Resource.String("content") != "y" || inst.Block != cfg.Resources[0] || inst.Type != typ {
		t.Fatalf("inst %+v diags %s", inst, diags)
	}
}
