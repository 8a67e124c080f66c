package eval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/config"
)

// FuzzLoadAndEvaluate loads arbitrary input as a recipe (native syntax, or JSON
// when asJSON) and evaluates it: nothing may panic.
func FuzzLoadAndEvaluate(f *testing.F) {
	seeds := []struct {
		src    string
		asJSON bool
	}{
		{`file "/x" { content = "a" }`, false},
		{"default \"web\" {\n  port = 8080\n  tls = { enabled = true }\n}\noverride \"web\" { port = host.cpus }\nfile \"/y\" {\n  content = \"${node.web.port}\"\n  mode = 420\n  action = [\"touch\"]\n  notifies \"touch\" { resource = \"file[/x]\" }\n}\n", false},
		{`account "a" { uid = "x" } fiel "b" {} file "c" { mode = "9" action = 3 sensitive = [] }`, false},
		{`file "/t" { content = templatefile("t.tpl", { a = 1 }) tags = [for x in range(3) : x] }`, false},
		{`default "a" { b = node.c } port = 1 file {}`, false},
		{`{"file": {"/x": {"content": "${host.hostname}", "notifies": {"touch": {"resource": "file[/x]"}}}}}`, true},
		{`{"default": {"a": {"b": [1, {"c": null}]}}, "acount": 1}`, true},
		{`[1, 2]`, true},
		{"file \"/l\" {\n  content = lazy(templatefile(\"t.tpl\", { a = file(\"/k\") }))\n  only_if = lazy([\"test -f /k\", fileexists(\"/k\")])\n  not_if = lazy(lazy(1))\n  mode = \"${lazy(2)}\"\n}\n", false},
		{`{"file": {"/l": {"content": "${lazy(env(\"X\", \"y\"))}", "only_if": "${lazy(\"true\")}", "action": "${lazy(\"touch\")}"}}}`, true},
		{"resource_type \"box\" {\n  property \"v\" {\n    type = list(string)\n    default = [\"a\"]\n    validation {\n      condition = length(value) > 0\n      error_message = \"empty\"\n    }\n  }\n  load_current_value {\n    batch = true\n    code = \"echo []\"\n  }\n  action \"create\" {\n    converge_if_changed {\n      properties = [\"v\"]\n      code = \"true\"\n    }\n    file \"/in/${new_resource.name}\" {\n      content = join(\",\", new_resource.v)\n      notifies \"touch\" { resource = \"file[/x]\" }\n    }\n    converge_by \"d\" {\n      when = \"exists\"\n      code = \"true\"\n    }\n  }\n}\nbox \"b\" { v = [\"x\"] }\nfile \"/x\" {}\n", false},
		{`resource_type "a" { action "create" { b "x" {} } } resource_type "b" { action "create" { a "y" {} } } a "z" {}`, false},
		{`{"resource_type": {"t": {"property": {"p": {"type": "string"}}, "action": {"create": {"converge_by": {"x": {"code": "true"}}, "file": {"/f": {"content": "${new_resource.p}"}}}}}}, "t": {"one": {"p": "v"}}}`, true},
		// for_each, count, dynamic blocks and resource groups
		{"default \"w\" {\n  sites = { \"a.com\" = { port = 80 }, b = {} }\n}\nfile \"v\" {\n  for_each = node.w.sites\n  path = \"/s/${each.key}\"\n  content = \"${try(each.value.port, 1)}\"\n  notifies \"touch\" { resource = \"file[n][${count.index}]\" }\n  dynamic \"notifies\" {\n    for_each = toset([\"x\", each.key])\n    labels = [\"touch\"]\n    content { resource = \"file[n][\\\"${notifies.value}\\\"]\" }\n  }\n}\nfile \"n\" {\n  count = length(node.w.sites) - 3\n  path = \"/n/${count.index}\"\n  for_each = [1]\n}\n", false},
		{"resource_group \"g\" {\n  only_if = each.key\n  not_if = [\"true\", { command = \"x\" }]\n  guard_interpreter = \"bash\"\n  notifies \"touch\" { resource = \"file[x][0]\" }\n  file \"x\" {\n    count = 2.5\n    content = lazy(\"${count.index}\")\n  }\n  resource_group \"h\" {}\n  action = 1\n}\nresource_group \"g\" {}\n", false},
		{`{"resource_group": {"g": {"only_if": true, "file": {"x": {"for_each": {"a": 1}, "path": "/s/${each.key}", "dynamic": {"subscribes": {"for_each": ["file[x]"], "labels": ["touch"], "content": {"resource": "${subscribes.value}"}}}}}}}}`, true},
		{"resource_type \"t\" {\n  property \"ps\" {\n    type = map(string)\n  }\n  action \"create\" {\n    file \"c\" {\n      for_each = new_resource.ps\n      path = \"/t/${each.key}\"\n      content = each.value\n    }\n  }\n}\nt \"one\" { ps = { a = \"1\" } }\nt \"two\" { ps = null }\n", false},
	}
	for _, s := range seeds {
		f.Add(s.src, s.asJSON)
	}
	reg := testRegistry()
	f.Fuzz(func(t *testing.T, src string, asJSON bool) {
		dir := t.TempDir()
		name := "fuzz.hcl"
		if asJSON {
			name = "fuzz.hcl.json"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "t.tpl"), []byte("${a}"), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, _ := config.LoadDir(dir, reg)
		if cfg == nil {
			t.Fatal("config.LoadDir returned no config")
		}
		types, _ := Types(cfg, reg)
		scope, attrs, _ := NewScope(cfg, testHost())
		_, _ = Resources(cfg, types, scope)
		_, _ = Notifications(cfg, reg, scope)
		_ = attrs.Leaves()
		_ = cfg.InputsDigest()
		_, _ = config.Format([]byte(src), name)
	})
}
