package eval

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
)

// cliArgs builds the command line's attribute arguments: "web.port=8080"
// is an -attr, "@NAME" an -attr-file NAME of files (written to a temp
// directory).
func cliArgs(t *testing.T, files map[string]string, args ...string) ([]AttributeArg, hcl.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out []AttributeArg
	var diags hcl.Diagnostics
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "@"); ok {
			arg, d := AttrFile(name, filepath.Join(dir, name))
			diags = append(diags, d...)
			if !d.HasErrors() {
				out = append(out, arg)
			}
			continue
		}
		arg, err := AttrFlag(a, dir)
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: err.Error()})
			continue
		}
		out = append(out, arg)
	}
	return out, diags
}

// writesOf lists writes as "path = value (source)", with "(sensitive)"
// for a sensitive one.
func writesOf(ws []config.AttributeWrite) []string {
	var out []string
	for _, w := range ws {
		s := fmt.Sprintf("%s = %s (%s)", strings.Join(w.Path, "."), w.Value.GoString(), config.Leaf{Range: w.Range, Origin: w.Origin}.Source(nil))
		if w.Sensitive {
			s += " (sensitive)"
		}
		if w.Level != config.LevelNormal {
			s += " at " + w.Level
		}
		out = append(out, s)
	}
	return out
}

func TestCommandLineAttributes(t *testing.T) {
	str := func(s string) string { return cty.StringVal(s).GoString() }
	num := func(n int64) string { return cty.NumberIntVal(n).GoString() }
	cases := []struct {
		name  string
		files map[string]string
		args  []string
		want  []string // writesOf
		diags []string // summaries, when the arguments are bad
	}{
		{
			name: "numbers, bools and lists are values",
			args: []string{"web.port=8080", "web.tls=true", `web.hosts=["a", "b"]`, "web.off=-1"},
			want: []string{
				"web.port = " + num(8080) + " (-attr web.port)",
				"web.tls = cty.True (-attr web.tls)",
				`web.hosts = cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}) (-attr web.hosts)`,
				"web.off = " + num(-1) + " (-attr web.off)",
			},
		},
		{
			name: "a map is split key by key",
			args: []string{`web={ port = 8080, tls = { on = true } }`},
			want: []string{"web.port = " + num(8080) + " (-attr web)", "web.tls.on = cty.True (-attr web)"},
		},
		{
			name: "words are strings, Terraform-style",
			args: []string{"web.server=nginx", "web.host=example.com", "web.version=1.7.0", "web.root=/srv/www", "web.date=2024-01-02", "web.greeting=hello world", "web.url=http://x/y", "web.empty="},
			want: []string{
				"web.server = " + str("nginx") + " (-attr web.server)",
				"web.host = " + str("example.com") + " (-attr web.host)",
				"web.version = " + str("1.7.0") + " (-attr web.version)",
				"web.root = " + str("/srv/www") + " (-attr web.root)",
				"web.date = " + str("2024-01-02") + " (-attr web.date)",
				"web.greeting = " + str("hello world") + " (-attr web.greeting)",
				"web.url = " + str("http://x/y") + " (-attr web.url)",
				"web.empty = " + str("") + " (-attr web.empty)",
			},
		},
		{
			name: "a leading zero keeps a mode a string",
			args: []string{"web.mode=0755", `web.quoted="0644"`},
			want: []string{"web.mode = " + str("0755") + " (-attr web.mode)", "web.quoted = " + str("0644") + " (-attr web.quoted)"},
		},
		{
			name: "functions, sensitive() among them",
			args: []string{`db.password=sensitive("s3cret")`, `db.user=upper("app")`, `db={ pw = sensitive("x"), name = "n" }`},
			want: []string{
				"db.password = " + str("s3cret") + " (-attr db.password) (sensitive)",
				"db.user = " + str("APP") + " (-attr db.user)",
				"db.pw = " + str("x") + " (-attr db) (sensitive)",
				"db.name = " + str("n") + " (-attr db)",
			},
		},
		{
			name: "a quoted key",
			args: []string{`sites["example.com"].port=443`},
			want: []string{"sites.example.com.port = " + num(443) + ` (-attr sites["example.com"].port)`},
		},
		{
			name:  "files in HCL and JSON, each leaf at its line",
			files: map[string]string{"base.hcl": "web = {\n  port = 80\n  tls  = sensitive(true)\n}\nlevel = \"base\"\n", "prod.json": "{\n  \"web\": {\n    \"port\": 8080,\n    \"name\": \"${not.a.template}\"\n  }\n}\n"},
			args:  []string{"@base.hcl", "@prod.json", "web.port=9090"},
			want: []string{
				"web.port = " + num(80) + " (-attr-file base.hcl:2)",
				"web.tls = cty.True (-attr-file base.hcl:3) (sensitive)",
				"level = " + str("base") + " (-attr-file base.hcl:5)",
				"web.port = " + num(8080) + " (-attr-file prod.json:3)",
				"web.name = " + str("${not.a.template}") + " (-attr-file prod.json:4)",
				"web.port = " + num(9090) + " (-attr web.port)",
			},
		},
		{
			name:  "a map where another argument gave a value",
			files: map[string]string{"a.json": `{"web": {"tls": {"on": true}}}`, "b.json": "{\n  \"web\": {\"tls\": false}\n}"},
			args:  []string{"@a.json", "@b.json"},
			diags: []string{"Attribute given as a map and as a value"},
		},
		{
			name:  "a value where another argument gave a map",
			files: map[string]string{"a.hcl": `web = "off"`},
			args:  []string{"@a.hcl", "web.port=1"},
			diags: []string{"Attribute given as a map and as a value"},
		},
		{
			name:  "the same value twice is fine, the last one wins",
			files: map[string]string{"a.hcl": `web = { port = 1 }`},
			args:  []string{"@a.hcl", "web.port=2"},
			want:  []string{"web.port = " + num(1) + " (-attr-file a.hcl:1)", "web.port = " + num(2) + " (-attr web.port)"},
		},
		{
			name:  "malformed -attr",
			args:  []string{"web.port", "=8080", "web..port=1", "web[0]=1", "web.hosts=[1,", `web.x=upper(`, `web.y={ a = }`},
			diags: []string{`-attr "web.port" has no "=": write -attr 'PATH=VALUE', as in -attr 'web.port=8080'`, `-attr "=8080" has an empty path: write -attr 'PATH=VALUE', as in -attr 'web.port=8080'`, "-attr \"web..port=1\": web..port is not an attribute path: write its keys joined by dots (web.port), with [\"…\"] around a key that holds a dot or a space (sites[\"example.com\"].port)", "-attr \"web[0]=1\": web[0] indexes a list, and lists are set whole: give the whole list, as in -attr 'web.hosts=[\"a\", \"b\"]'", "Missing expression", "Missing expression", "Invalid expression"},
		},
		{
			name:  "an -attr value that reads a variable",
			args:  []string{`web.hosts=[nginx]`},
			diags: []string{"Variables not allowed"},
		},
		{
			name:  "a file that reads host",
			files: map[string]string{"a.hcl": "web = { name = host.fqdn }\n"},
			args:  []string{"@a.hcl"},
			diags: []string{"Attribute files cannot read variables"},
		},
		{
			name:  "a file with a block",
			files: map[string]string{"a.hcl": "web {\n  port = 1\n}\n"},
			args:  []string{"@a.hcl"},
			diags: []string{`Unexpected "web" block`},
		},
		{
			name:  "a missing file",
			args:  []string{"@nope.json"},
			diags: []string{"Cannot read an attribute file"},
		},
		{
			name:  "malformed JSON",
			files: map[string]string{"bad.json": "{\n  \"web\": {\"port\": 80,}\n}\n"},
			args:  []string{"@bad.json"},
			diags: []string{"Trailing comma in object"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, diags := cliArgs(t, tc.files, tc.args...)
			writes, d := CommandLineAttributes(args)
			diags = append(diags, d...)
			if len(tc.diags) > 0 || diags.HasErrors() {
				if got := summaries(diags); strings.Join(got, "\n") != strings.Join(tc.diags, "\n") {
					t.Fatalf("diagnostics:\n%s\nwant:\n%s\n%v", strings.Join(got, "\n"), strings.Join(tc.diags, "\n"), diags)
				}
				return
			}
			if got := writesOf(writes); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A malformed file's error points at its line.
func TestCommandLineAttributesErrorsPointAtTheFile(t *testing.T) {
	_, diags := cliArgs(t, map[string]string{"bad.json": "{\n  \"web\": {\"port\": 80,}\n}\n"}, "@bad.json")
	if len(diags) == 0 || diags[0].Subject == nil || diags[0].Subject.Filename != "bad.json" || diags[0].Subject.Start.Line != 2 {
		t.Fatalf("diagnostics %v, want one at bad.json:2", diags)
	}
	args, _ := cliArgs(t, nil, "web.hosts=[1,")
	_, diags = CommandLineAttributes(args)
	if len(diags) == 0 || diags[0].Subject == nil || diags[0].Subject.Filename != "-attr web.hosts" || !strings.Contains(diags[0].Detail, "-attr 'web.hosts=[1,'") {
		t.Fatalf("diagnostics %v, want one in -attr web.hosts naming the argument", diags)
	}
}

// Command-line values sit at the normal level: above every default,
// below every override, and sensitive ones stay so.
func TestCommandLineAttributesPrecedence(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": `
default "web" {
  port = 80
  root = "/srv"
}
override "web" {
  user = "www"
}
`})
	cfg := mustLoad(t, dir)
	args, diags := cliArgs(t, nil, "web.port=8080", "web.user=nobody", `db.password=sensitive("pw")`)
	writes, d := CommandLineAttributes(args)
	if diags = append(diags, d...); diags.HasErrors() {
		t.Fatal(diags)
	}
	cfg.CommandLine = writes
	scope, attrs, diags := NewScope(cfg, host.Unknown())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, l := range attrs.Leaves() {
		got = append(got, fmt.Sprintf("%s %s %s", strings.Join(l.Path, "."), l.Level, l.Source(cfg.DisplayPath)))
	}
	want := []string{"db.password normal -attr db.password", "web.port normal -attr web.port", "web.root default a.hcl:4", "web.user override a.hcl:7"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("leaves:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !scope.Covers([]string{"db", "password"}) || scope.Covers([]string{"web", "port"}) {
		t.Errorf("sensitive paths %v", scope.Sensitive)
	}
}

func TestUnreadAttributes(t *testing.T) {
	cases := []struct {
		name    string
		recipes map[string]string
		args    []string
		want    []string // summary: detail's hint
	}{
		{
			name:    "a typo gets a did-you-mean",
			recipes: map[string]string{"a.hcl": `file "/tmp/x" { content = "${node.web.port}" }`},
			args:    []string{"web.prot=1", "web.port=2"},
			want:    []string{"No recipe reads node.web.prot: Did you mean node.web.port?"},
		},
		{
			name:    "a whole unread map is one warning",
			recipes: map[string]string{"a.hcl": `file "/tmp/x" { content = "${node.web.port}" }`},
			args:    []string{`database={ host = "h", port = 1 }`},
			want:    []string{"No recipe reads node.database: "},
		},
		{
			name:    "reading a map reads what it holds",
			recipes: map[string]string{"a.hcl": `file "/tmp/x" { content = jsonencode(node.web) }`},
			args:    []string{"web.anything.deep=1"},
		},
		{
			name:    "reading node whole reads everything",
			recipes: map[string]string{"a.hcl": `file "/tmp/x" { content = jsonencode(node) }`},
			args:    []string{"zzz=1"},
		},
		{
			name:    "guards and notifications read too",
			recipes: map[string]string{"a.hcl": "execute \"x\" {\n  command = \"true\"\n  only_if = node.feature.on\n}\n"},
			args:    []string{"feature.on=true"},
		},
		{
			name:    "a data block's arguments read too",
			recipes: map[string]string{"a.hcl": "data \"exec\" \"sites\" {\n  command = \"cat ${node.web.sites_file}\"\n}\n"},
			args:    []string{"web.sites_file=/etc/sites.json"},
		},
		{
			name: "a template file reads too",
			recipes: map[string]string{
				"a.hcl":         `template "/tmp/x" { source = "site.conf.tpl" }`,
				"site.conf.tpl": "listen ${node.web.port}\n",
			},
			args: []string{"web.port=1", "web.prot=2"},
			want: []string{"No recipe reads node.web.prot: Did you mean node.web.port?"},
		},
		{
			name:    "a path written with node. says so",
			recipes: map[string]string{"a.hcl": `file "/tmp/x" { content = "${node.web.port}" }`},
			args:    []string{"node.web.port=1"},
			want:    []string{"No recipe reads node.node: Attribute paths are written without node.: did you mean node.web.port?"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDir(t, tc.recipes)
			reg := builtin.Registry()
			cfg, diags := config.LoadDir(dir, reg)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			args, diags := cliArgs(t, nil, tc.args...)
			writes, d := CommandLineAttributes(args)
			if diags = append(diags, d...); diags.HasErrors() {
				t.Fatal(diags)
			}
			cfg.CommandLine = writes
			scope, _, diags := NewScope(cfg, host.Unknown())
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			var got []string
			for _, d := range UnreadAttributes(cfg, reg, scope) {
				if d.Severity != hcl.DiagWarning {
					t.Errorf("not a warning: %v", d)
				}
				hint := ""
				if _, h, ok := strings.Cut(d.Detail, "it changes nothing."); ok {
					hint = h
				}
				got = append(got, d.Summary+": "+strings.TrimSpace(hint))
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Whatever the command line holds, reading it never panics, and every
// write it makes has a path.
func FuzzCommandLineAttr(f *testing.F) {
	for _, s := range []string{"web.port=8080", `a={ b = [1, "x"], c = sensitive("s") }`, "x=", "=", "a.b", `s["k.k"].p=0755`, "a=[1,", "a=upper(", "a=b.c", "a=${x}", "a=<<EOT\nx\nEOT\n", "a={ (1) = 2 }"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, arg string) {
		a, err := AttrFlag(arg, dir)
		if err != nil {
			return
		}
		writes, _ := CommandLineAttributes([]AttributeArg{a})
		for _, w := range writes {
			if len(w.Path) == 0 {
				t.Fatalf("%q wrote at the empty path", arg)
			}
		}
	})
}
