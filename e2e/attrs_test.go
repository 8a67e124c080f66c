package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const attrsRecipe = `
default "web" {
  port      = 80
  upstreams = ["a"]
}
override "web" {
  user = "www"
}
file "ROOT/web.conf" {
  content = "port=${node.web.port} up=${join(",", node.web.upstreams)} user=${node.web.user} pw=${node.db.password}\n"
}
file "ROOT/plain.conf" {
  content = "port=${node.web.port}\n"
}
`

// Attributes from -attr and -attr-file sit above the recipes' defaults
// and below their overrides, say where they came from, are recorded in
// the plan (apply needs none of them again), and a sensitive one stays
// out of every output.
func TestE2EAttributesFromTheCommandLine(t *testing.T) {
	e := newEnv(t)
	e.recipe("web.hcl", attrsRecipe)
	e.recipe("prod.json", "{\n  \"web\": {\n    \"port\": 8080,\n    \"upstreams\": [\"x\", \"y\"]\n  }\n}\n")
	e.recipe("secrets.attrs", "db = {\n  password = sensitive(\"hunter2-cli\")\n}\n")
	flags := []string{"-attr-file=prod.json", "-attr-file", "secrets.attrs", "-attr", "web.user=nobody", "-attr", "web.port=9090", "-attr-file=prod.json"}

	r := e.must(0, append([]string{"plan", "-out=plan.out"}, flags...)...)
	if !strings.Contains(r.stdout, "port=8080\n") {
		t.Errorf("plan does not show the attribute file's port (the later -attr-file wins over -attr):\n%s", r)
	}
	if strings.Contains(r.stderr, "Warning") {
		t.Errorf("plan warns:\n%s", r)
	}
	outputs := map[string]string{"plan": r.stdout + r.stderr}
	outputs["show"] = e.must(0, "show", "plan.out").stdout
	outputs["show -json"] = e.must(0, "show", "-json", "plan.out").stdout
	outputs["show -markdown"] = e.must(0, "show", "-markdown", "plan.out").stdout
	outputs["plan -json"] = e.must(0, append([]string{"plan", "-json"}, flags...)...).stdout
	for name, out := range outputs {
		if strings.Contains(out, "hunter2-cli") {
			t.Errorf("%s shows the sensitive value:\n%s", name, out)
		}
	}

	var shown struct {
		Attributes []struct {
			Path, Level, Source string
			Value               any
			Sensitive           bool
		}
	}
	if err := json.Unmarshal([]byte(outputs["show -json"]), &shown); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range shown.Attributes {
		v, _ := json.Marshal(a.Value)
		got[a.Path] = a.Level + " " + a.Source + " " + string(v)
		if a.Sensitive {
			got[a.Path] += " sensitive"
		}
	}
	want := map[string]string{
		"web.port":      "normal -attr-file prod.json:3 8080",
		"web.upstreams": `normal -attr-file prod.json:4 ["x","y"]`,
		"web.user":      "override web.hcl:7 \"www\"",
		"db.password":   "normal -attr-file secrets.attrs:2 null sensitive",
	}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("show -json: %s is %q, want %q", path, got[path], w)
		}
	}

	// apply needs none of the flags: the plan holds what they gave.
	e.must(0, "apply", "plan.out")
	if c := e.read("web.conf"); c != "port=8080 up=x,y user=www pw=hunter2-cli\n" {
		t.Errorf("applied %q", c)
	}
	r = e.must(1, "apply", "-attr", "web.port=1", "plan.out")
	if !strings.Contains(r.stderr, "apply PLANFILE takes no -attr") {
		t.Errorf("apply PLANFILE -attr:\n%s", r)
	}
}

// validate, graph and apply without a plan file take the flags too.
func TestE2EAttributesOnEveryCommand(t *testing.T) {
	e := newEnv(t)
	e.recipe("web.hcl", attrsRecipe)
	e.must(1, "validate") // node.db.password is written nowhere
	e.must(0, "validate", "-attr", `db.password=sensitive("x")`)
	e.must(0, "graph", "-attr", `db.password=sensitive("x")`)
	e.must(0, "apply", "-auto-approve", "-attr", "db.password=pw", "-attr", "web.port=1234")
	if c := e.read("plain.conf"); c != "port=1234\n" {
		t.Errorf("applied %q", c)
	}
}

// A value nothing reads gets a warning that suggests what is read.
func TestE2EUnreadAttributeWarns(t *testing.T) {
	e := newEnv(t)
	e.recipe("web.hcl", attrsRecipe)
	e.recipe("prod.json", "{\n  \"web\": {\n    \"prot\": 8080\n  }\n}\n")
	r := e.must(0, "validate", "-attr-file=prod.json", "-attr", "db.password=x")
	for _, want := range []string{"Warning: No recipe reads node.web.prot", "on prod.json:3:5", "Did you mean node.web.port?"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("validate does not say %q:\n%s", want, r)
		}
	}
}

// Malformed flags and files are errors that name the flag, or the file
// and line, and nothing runs.
func TestE2EBadAttributeArguments(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		args  []string
		want  []string
	}{
		{name: "no =", args: []string{"-attr", "web.port"}, want: []string{`-attr "web.port" has no "="`}},
		{name: "an empty path", args: []string{"-attr", "=8080"}, want: []string{`-attr "=8080" has an empty path`}},
		{name: "a value that does not parse", args: []string{"-attr", "web.upstreams=[1,"}, want: []string{"Missing expression", "on -attr web.upstreams:1:18", "web.upstreams=[1,"}},
		{name: "a missing file", args: []string{"-attr-file=nope.json"}, want: []string{"Cannot read an attribute file", "-attr-file nope.json: there is no such file"}},
		{name: "malformed JSON", files: map[string]string{"bad.json": "{\n  \"web\": {\"port\": 80,}\n}\n"}, args: []string{"-attr-file=bad.json"}, want: []string{"on bad.json:2:"}},
		{name: "malformed HCL", files: map[string]string{"bad.attrs": "web = {\n  port = \n}\n"}, args: []string{"-attr-file=bad.attrs"}, want: []string{"on bad.attrs:2:"}},
		{
			name:  "a map in one file, a value in another",
			files: map[string]string{"a.json": "{\n  \"web\": {\"tls\": {\"on\": true}}\n}\n", "b.attrs": "\nweb = { tls = false }\n"},
			args:  []string{"-attr-file=a.json", "-attr-file=b.attrs"},
			want:  []string{"Attribute given as a map and as a value", "on b.attrs:2:", "node.web.tls is a value here, but a map at -attr-file a.json:2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.recipe("web.hcl", attrsRecipe)
			for name, src := range tc.files {
				e.recipe(name, src)
			}
			for _, cmd := range [][]string{{"plan"}, {"apply", "-auto-approve"}, {"validate"}} {
				r := e.must(1, append(cmd, tc.args...)...)
				for _, w := range tc.want {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("%s: stderr does not say %q:\n%s", cmd[0], w, r)
					}
				}
				if _, err := os.Stat(filepath.Join(e.root, "web.conf")); err == nil {
					t.Fatalf("%s ran with a bad argument", cmd[0])
				}
			}
		})
	}
}

// A value written with sensitive() on the command line is not shown by
// the diagnostics about it either.
func TestE2ESensitiveAttributeArgumentInDiagnostics(t *testing.T) {
	e := newEnv(t)
	e.recipe("web.hcl", attrsRecipe)
	r := e.must(0, "validate", "-attr", "db.password=x", "-attr", `web.unread=sensitive("hunter2-unread")`)
	if !strings.Contains(r.stderr, "No recipe reads node.web.unread") || strings.Contains(r.stderr, "hunter2") {
		t.Errorf("unread sensitive -attr:\n%s", r)
	}
	r = e.must(1, "validate", "-attr", `db.password=sensitive("hunter2-broken"`)
	if !strings.Contains(r.stderr, "on -attr db.password:1:13") || strings.Contains(r.stderr, "hunter2") {
		t.Errorf("malformed sensitive -attr:\n%s", r)
	}
}
