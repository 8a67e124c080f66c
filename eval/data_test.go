package eval

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/builtin"
)

func dataRegistry() *resources.Registry {
	return testRegistry().WithData(builtin.DataSources()...)
}

// evalData loads src, checks its data blocks and returns them with the
// scope (host facts known).
func evalData(t *testing.T, src string) (*config.Config, *Scope, []*DataBlock, hcl.Diagnostics) {
	t.Helper()
	cfg, diags := config.LoadDir(writeDir(t, map[string]string{"a.hcl": src}), dataRegistry())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	scope, _, d := NewScope(cfg, testHost())
	if d.HasErrors() {
		t.Fatal(d)
	}
	blocks, d := DataBlocks(cfg, dataRegistry())
	return cfg, scope, blocks, d
}

func TestDataBlocksChecked(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // error summaries
		at        string
		order     string // the blocks' keys, in the order they are read
	}{
		{name: "declaration order, a block after those it reads", src: `data "exec" "homes" {
  command = "ls ${data.users.all.result["root"].home}"
}
data "users" "all" {}
data "groups" "all" {}
`, order: "users.all,exec.homes,groups.all"},
		{name: "an unknown data source", src: "data \"user\" \"all\" {}\n", want: []string{"Unknown data source"}, at: "a.hcl:1"},
		{name: "an argument it does not take", src: "data \"exec\" \"x\" {\n  command = \"true\"\n  comand = 1\n}\n", want: []string{"Unsupported argument"}, at: "a.hcl:3"},
		{name: "a required argument missing", src: "data \"exec\" \"x\" {\n  timeout = 3\n}\n", want: []string{"Missing required argument"}, at: "a.hcl:1"},
		{name: "lazy in an argument", src: "data \"exec\" \"x\" {\n  command = lazy(\"true\")\n}\n", want: []string{"lazy is not allowed on a data block's argument"}, at: "a.hcl:2"},
		{name: "a reference to an undeclared data block", src: "data \"exec\" \"x\" {\n  command = \"echo ${data.users.al.result}\"\n}\ndata \"users\" \"all\" {}\n",
			want: []string{"Reference to an undeclared data block"}, at: "a.hcl:2"},
		{name: "a reference to data as a whole", src: "data \"exec\" \"x\" {\n  command = jsonencode(data.users)\n}\ndata \"users\" \"all\" {}\n",
			want: []string{"Invalid reference to data"}, at: "a.hcl:2"},
		{name: "two blocks that read each other", src: `data "exec" "a" {
  command = "echo ${data.exec.b.result}"
}
data "exec" "b" {
  command = "echo ${data.exec.a.result}"
}
data "users" "all" {}
`, want: []string{"Data blocks read each other"}, at: "a.hcl:1", order: "users.all"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, blocks, diags := evalData(t, tc.src)
			if got := summaries(diags); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("errors %q, want %q: %v", got, tc.want, diags)
			}
			if tc.at != "" {
				if got := rangeAt(t, diags[0]); got != tc.at {
					t.Errorf("error at %s, want %s", got, tc.at)
				}
			}
			if tc.order != "" {
				var keys []string
				for _, b := range blocks {
					keys = append(keys, b.Key())
				}
				if got := strings.Join(keys, ","); got != tc.order {
					t.Errorf("order %s, want %s", got, tc.order)
				}
			}
		})
	}
}

func TestDataArguments(t *testing.T) {
	_, scope, blocks, diags := evalData(t, `default "app" {
  dir = "/srv"
  token = sensitive("hunter2")
}
data "users" "all" {}
data "exec" "ls" {
  command   = "ls ${node.app.dir} ${data.users.all.result.root.home}"
  timeout   = 5
  sensitive = true
}
data "exec" "secret" {
  command = "echo ${node.app.token}"
}
data "exec" "bad" {
  command   = "true"
  sensitive = "maybe"
}
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	users := cty.MapVal(map[string]cty.Value{"root": cty.ObjectVal(map[string]cty.Value{"home": cty.StringVal("/root")})})
	s := scope.WithData([]*config.DataBlock{blocks[0].Block}, map[string]DataAnswer{"users.all": {Value: users}})
	byKey := map[string]*DataBlock{}
	for _, b := range blocks {
		byKey[b.Key()] = b
	}

	args, sensitive, d := byKey["exec.ls"].Arguments(s)
	if d.HasErrors() || !sensitive {
		t.Fatalf("exec.ls: %v, sensitive %v", d, sensitive)
	}
	if got := args["command"].AsString(); got != "ls /srv /root" {
		t.Errorf("command = %q", got)
	}
	if _, ok := args["sensitive"]; ok {
		t.Error("sensitive is passed to the data source as an argument")
	}

	_, _, d = byKey["exec.secret"].Arguments(s)
	if got := summaries(d); len(got) != 1 || got[0] != "Secret in a data block's argument" || rangeAt(t, d[0]) != "a.hcl:12" {
		t.Errorf("a secret in an argument: %v", d)
	}
	_, _, d = byKey["exec.bad"].Arguments(s)
	if got := summaries(d); len(got) != 1 || got[0] != "Wrong type for sensitive" {
		t.Errorf("sensitive = \"maybe\": %v", d)
	}

	// A sensitive answer read by another block's argument is a secret too.
	marked := scope.WithData([]*config.DataBlock{blocks[0].Block}, map[string]DataAnswer{"users.all": {Value: users, Sensitive: true}})
	_, _, d = byKey["exec.ls"].Arguments(marked)
	if got := summaries(d); len(got) != 1 || got[0] != "Secret in a data block's argument" {
		t.Errorf("a sensitive answer in an argument: %v", d)
	}
}

// dataScope is cfg's scope with each data block answering answers[KEY].
func dataScope(t *testing.T, cfg *config.Config, answers map[string]DataAnswer) *Scope {
	t.Helper()
	scope, _, d := NewScope(cfg, testHost())
	if d.HasErrors() {
		t.Fatal(d)
	}
	return scope.WithData(cfg.Data, answers)
}

func TestResourcesReadData(t *testing.T) {
	src := `data "exec" "sites" {
  command = "cat /etc/sites.json"
}
data "exec" "token" {
  command   = "cat /root/token"
  sensitive = true
}
file "site" {
  for_each = data.exec.sites.result
  path     = "/srv/${each.key}"
  content  = "port ${each.value.port}\n"
}
file "/etc/token" {
  content = data.exec.token.result
}
`
	cfg := mustLoad(t, writeDir(t, map[string]string{"a.hcl": src}))
	sites := cty.ObjectVal(map[string]cty.Value{
		"a.com": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(443)}),
		"b.com": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(80)}),
	})
	scope := dataScope(t, cfg, map[string]DataAnswer{"exec.sites": {Value: sites}, "exec.token": {Value: cty.StringVal("hunter2"), Sensitive: true}})
	insts, diags := Resources(cfg, dataRegistry(), scope)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, inst := range insts {
		got = append(got, inst.Resource.Address()+"="+inst.Resource.String("content"))
	}
	want := `file[site]["a.com"]=port 443` + "\n" + `|file[site]["b.com"]=port 80` + "\n" + `|file[/etc/token]=hunter2`
	if strings.Join(got, "|") != want {
		t.Errorf("instances\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	if tok := insts[2]; len(tok.SensitiveProps) != 1 || tok.SensitiveProps[0] != "content" {
		t.Errorf("a value read from a sensitive data block is not sensitive: %v", tok.SensitiveProps)
	}
	if !ReadsData(cfg.Resources[0]) || ReadsData(&config.ResourceBlock{}) {
		t.Error("ReadsData")
	}
}

func TestResourcesReadDataBadly(t *testing.T) {
	cases := []struct {
		name, src string
		want      string
		at        string
	}{
		{"an undeclared data block", `data "exec" "sites" {
  command = "true"
}
file "/x" {
  content = data.exec.site.result
}
`, "Reference to an undeclared data block", "a.hcl:5"},
		{"a data source none is declared of", `file "/x" {
  content = data.users.all.result
}
`, "Reference to an undeclared data block", "a.hcl:2"},
		{"for_each keyed by a sensitive answer", `data "exec" "token" {
  command   = "true"
  sensitive = true
}
file "x" {
  for_each = data.exec.token.result
  path     = "/x/${each.key}"
}
`, "Invalid for_each argument", "a.hcl:6"},
		{"lazy reading a sensitive answer", `data "exec" "token" {
  command   = "true"
  sensitive = true
}
file "/x" {
  content = lazy(data.exec.token.result["a"])
}
`, "lazy reads a sensitive data block", "a.hcl:6"},
	}
	answer := cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("b")})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustLoad(t, writeDir(t, map[string]string{"a.hcl": tc.src}))
			answers := map[string]DataAnswer{}
			for _, b := range cfg.Data {
				answers[b.Type+"."+b.Name] = DataAnswer{Value: answer, Sensitive: b.Name == "token"}
			}
			_, diags := Resources(cfg, dataRegistry(), dataScope(t, cfg, answers))
			got := summaries(diags)
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("errors %q, want %q: %v", got, tc.want, diags)
			}
			if at := rangeAt(t, diags[0]); at != tc.at {
				t.Errorf("at %s, want %s", at, tc.at)
			}
			if strings.Contains(diags[0].Detail, "Did you mean") != strings.Contains(tc.name, "an undeclared") {
				t.Errorf("detail: %s", diags[0].Detail)
			}
		})
	}
}

// Without the host (validate), a data block's answer is not known: a
// for_each over it is one instance checked with each unknown, and a
// reference to an undeclared block is still an error.
func TestDataUnknownInValidate(t *testing.T) {
	reg := builtin.Registry()
	cfg, ld := config.LoadDir(writeDir(t, map[string]string{"a.hcl": `data "users" "all" {}
user "ageing" {
  for_each = { for name, u in data.users.all.result : name => u if u.regular }
  username = each.key
  inactive = 30
}
file "/x" {
  content = data.users.nope.result
}
`}), reg)
	if ld.HasErrors() {
		t.Fatal(ld)
	}
	scope, _, d := NewScope(cfg, host.Unknown())
	if d.HasErrors() {
		t.Fatal(d)
	}
	_, diags := Resources(cfg, reg, scope)
	if got := summaries(diags); len(got) != 1 || got[0] != "Reference to an undeclared data block" {
		t.Fatalf("errors %q: %v", got, diags)
	}
}

// A value known at apply carries what it reads of data, and is evaluated
// with it at apply.
func TestLazyCapturesData(t *testing.T) {
	cfg := mustLoad(t, writeDir(t, map[string]string{"a.hcl": `data "exec" "sites" {
  command = "true"
}
file "/x" {
  content = lazy("port ${data.exec.sites.result["a.com"].port}")
}
`}))
	sites := cty.ObjectVal(map[string]cty.Value{
		"a.com": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(443)}),
		"b.com": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(80)}),
	})
	insts, diags := Resources(cfg, dataRegistry(), dataScope(t, cfg, map[string]DataAnswer{"exec.sites": {Value: sites}}))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	e := insts[0].Lazy["content"]
	if e == nil || e.Scope.Data == nil {
		t.Fatalf("no data captured: %+v", e)
	}
	want := `{"exec":{"sites":{"result":{"a.com":{"port":443}}}}}`
	if got := jsonOf(t, e.Scope.Data.Value); got != want {
		t.Errorf("captured %s, want %s (only what it reads)", got, want)
	}
	if err := e.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	v, d := EvaluateLazy(e, cty.NilVal)
	if d.HasErrors() || v.AsString() != "port 443" {
		t.Errorf("evaluated at apply: %v %v", v, d)
	}
}

func jsonOf(t *testing.T, v cty.Value) string {
	t.Helper()
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
