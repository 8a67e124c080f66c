package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/internal/testutil"
)

// Resource types written in HCL (resource_type), through the binary:
// examples/custom-types, the seed's two examples, staleness, guards,
// notifications, sensitivity, cookbooks and bad input.

// customEnv runs toque on examples/custom-types with CUSTOM_TYPES_ROOT in
// a scratch directory.
type customEnv struct {
	*env
	example string
}

func newCustomEnv(t *testing.T) *customEnv {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("examples", "custom-types"))
	if err != nil {
		t.Fatal(err)
	}
	return &customEnv{env: newEnv(t), example: abs}
}

func (c *customEnv) must(want int, vars []string, args ...string) result {
	c.t.Helper()
	return c.env.mustToque(want, append([]string{"CUSTOM_TYPES_ROOT=" + c.root}, vars...), append([]string{"-chdir=" + c.example}, args...)...)
}

// planApply plans the example with vars, checks -detailed-exitcode's
// status and applies the plan when it has changes.
func (c *customEnv) planApply(vars []string, wantPlan int) string {
	c.t.Helper()
	out := filepath.Join(c.dir, "plan.out")
	r := c.must(wantPlan, vars, "plan", "-detailed-exitcode", "-out="+out)
	if wantPlan == 2 {
		c.must(0, vars, "apply", out)
	}
	return r.stdout
}

func TestE2ECustomTypesExample(t *testing.T) {
	c := newCustomEnv(t)
	out := c.planApply(nil, 2)
	contains(t, "first plan", out,
		"# kv_setting[port] will be created",
		"#   runs converge_if_changed (types.hcl:",
		"# web_site[blog] will be created",
		`#   runs converge_by "record the site's creation" (types.hcl:`,
		"# web_site[blog].template[conf] will be created",
		"+listen 8081",
		"# web_site[blog].link[current] will be created",
		"# web_site[blog].execute[reload] will run: notified by web_site[blog].template[conf] (delayed)",
		"Plan: 7 to create, 0 to update, 0 to delete, 1 to run, 0 skipped, 1 unchanged.") // the scratch root exists
	if got := c.read("app.ini"); got != "port = 8080\nlog_level = info\n" {
		t.Fatalf("app.ini:\n%s", got)
	}
	if got := c.read("sites/blog/index.html"); got != "<h1>The blog</h1>\n" {
		t.Errorf("index.html %q", got)
	}
	if _, err := os.Stat(filepath.Join(c.root, "sites/blog/created")); err != nil {
		t.Errorf("the converge_by did not run: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(c.root, "current")); err != nil || l != filepath.Join(c.root, "sites/blog") {
		t.Errorf("current -> %q, %v", l, err)
	}
	if got := c.read("reload.log"); got != "reload blog\n" {
		t.Errorf("reload.log %q", got)
	}

	// Converged: nothing to do, whatever else the file holds.
	c.write("app.ini", "# hand-written\n"+c.read("app.ini")+"other = keep\n", 0o600)
	c.planApply(nil, 0)

	// One key changes: only that line is rewritten; the file keeps its mode.
	out = c.planApply([]string{"APP_PORT=9090"}, 2)
	contains(t, "second plan", out, "# kv_setting[port] will be updated in place", `~ value = "8080" -> "9090"`,
		"Plan: 0 to create, 1 to update, 0 to delete, 0 to run, 0 skipped, 8 unchanged.")
	if got := c.read("app.ini"); got != "# hand-written\nport = 9090\nlog_level = info\nother = keep\n" {
		t.Fatalf("app.ini after the update:\n%s", got)
	}
	if m := c.mode("app.ini"); m != 0o600 {
		t.Errorf("app.ini mode %o", m)
	}

	// A child changes: its diff under the parent's address, its sibling's
	// reload, and nothing else.
	out = c.planApply([]string{"APP_PORT=9090", "SITE_PORT=8090"}, 2)
	contains(t, "third plan", out, "# web_site[blog].template[conf] will be updated in place", "-listen 8081", "+listen 8090",
		"Plan: 0 to create, 1 to update, 0 to delete, 1 to run, 0 skipped, 6 unchanged.")
	if strings.Contains(out, "# web_site[blog] will") || strings.Contains(out, "runs converge_by") {
		t.Errorf("the site itself has nothing to do:\n%s", out)
	}
	contains(t, "third plan", out, "# web_site[blog] changes through its child resources below")
	if got := c.read("reload.log"); got != "reload blog\nreload blog\n" {
		t.Errorf("reload.log %q", got)
	}

	// show -json carries the types and says who declares each child;
	// -markdown and graph show the children; validate is content.
	planFile := filepath.Join(c.dir, "plan.out")
	c.must(0, []string{"APP_PORT=1", "SITE_PORT=8091"}, "plan", "-out="+planFile)
	var view struct {
		FormatVersion string `json:"format_version"`
		Resources     []struct {
			Address, Parent, ParentAction, Kind string
			Groups                              []string
		}
		Types []struct {
			Name    string
			Source  string
			Actions []struct {
				Name  string
				Steps []struct{ Kind, Resource string }
			}
			Load *struct{ Interpreter, Code string } `json:"load_current_value"`
		}
	}
	if err := json.Unmarshal([]byte(c.mustToque(0, nil, "show", "-json", planFile).stdout), &view); err != nil {
		t.Fatal(err)
	}
	if view.FormatVersion != views.JSONViewVersion || len(view.Types) != 2 || view.Types[0].Name != "kv_setting" || view.Types[0].Load == nil ||
		!strings.Contains(view.Types[0].Load.Code, "awk") || view.Types[1].Actions[0].Steps[1].Resource != "template[conf]" {
		t.Errorf("types in show -json: %+v", view.Types)
	}
	parents := map[string]string{}
	for _, r := range view.Resources {
		parents[r.Address] = r.Parent
		if r.Address == "kv_setting[port]" && (r.Kind != "update" || len(r.Groups) != 1 || r.Groups[0] != "converge_if_changed") {
			t.Errorf("kv_setting[port] in show -json: %+v", r)
		}
	}
	if parents["web_site[blog].template[conf]"] != "web_site[blog]" || parents["web_site[blog]"] != "" {
		t.Errorf("parents %v", parents)
	}
	md := c.mustToque(0, nil, "show", "-markdown", planFile).stdout
	contains(t, "markdown", md, "web_site[blog].template[conf]", "Runs `converge_if_changed` (`types.hcl:",
		"<code>web_site[blog]</code> changes through its child resources below")
	dot := c.must(0, nil, "graph").stdout
	contains(t, "graph", dot, `"web_site[blog]" -> "web_site[blog].template[conf]" [label = "declares"`)
	c.must(0, nil, "validate")
}

// The seed's File: an unset mode is left alone; a default counts only on
// create; current_value_does_not_exist! leads to create.
func TestE2ECustomTypeSeedFile(t *testing.T) {
	testenv.MustHave(t, testenv.Python3)
	e := newEnv(t)
	e.recipe("types.hcl", `
resource_type "seed_file" {
  property "path" {
    type          = string
    name_property = true
  }
  property "mode" {
    type    = string
    default = "0666"
  }
  property "content" {
    type    = string
    content = true
  }
  load_current_value {
    interpreter = "python"
    code = <<-EOT
      import json, os, sys
      path = json.load(sys.stdin)["path"]
      if not os.path.exists(path):
          print(json.dumps({"exists": False}))  # current_value_does_not_exist!
      else:
          print(json.dumps({"mode": "%04o" % (os.stat(path).st_mode & 0o7777), "content": open(path).read()}))
    EOT
  }
  action "create" {
    converge_if_changed {
      interpreter = "python"
      code = <<-EOT
        import json, os, sys
        r = json.load(sys.stdin)
        v = r["values"]  # the recipe's value, else the live one, else (creating) the default
        with open(v["path"], "w") as f:
            f.write(v["content"])
        os.chmod(v["path"], int(v["mode"], 8))
      EOT
    }
  }
}
`)
	e.recipe("main.hcl", `
seed_file "ROOT/x.txt" {
  content = "Hello World"
}
seed_file "ROOT/new.txt" {
  content = "new"
}
`)
	e.write("x.txt", "old", 0o600)
	out := e.must(0, "plan", "-out="+filepath.Join(e.dir, "p")).stdout
	contains(t, "plan", out,
		"# seed_file["+e.root+"/x.txt] will be updated in place",
		"+Hello World",
		"# mode: not set in the recipe, left as it is (0600)",
		"# seed_file["+e.root+"/new.txt] will be created",
		`+ mode    = "0666" (default)`)
	e.must(0, "apply", filepath.Join(e.dir, "p"))
	if got, m := e.read("x.txt"), e.mode("x.txt"); got != "Hello World" || m != 0o600 {
		t.Errorf("x.txt: %q mode %o; the seed leaves an unset mode alone", got, m)
	}
	if got, m := e.read("new.txt"), e.mode("new.txt"); got != "new" || m != 0o666 {
		t.Errorf("new.txt: %q mode %o; a created file gets the default", got, m)
	}
	if out := e.must(0, "plan").stdout; !strings.Contains(out, "No changes.") {
		t.Errorf("not converged:\n%s", out)
	}
}

// The seed's DataBagItem: identity and desired_state = false properties
// are copied to the fresh resource load_current_value gets; desired-state
// ones are not, and only they are compared.
func TestE2ECustomTypeSeedDataBagItem(t *testing.T) {
	testenv.MustHave(t, testenv.Python3)
	e := newEnv(t)
	e.recipe("types.hcl", `
resource_type "data_bag_item" {
  property "item_name" {
    type          = string
    name_property = true
  }
  property "data_bag_name" {
    type     = string
    identity = true
  }
  property "recursively_delete" {
    type          = bool
    desired_state = false
    default       = false
  }
  property "data" {
    type = map(string)
  }
  load_current_value {
    interpreter = "python"
    code = <<-EOT
      import json, os, sys
      fresh = json.load(sys.stdin)
      json.dump(fresh, open(os.path.join("ROOT", "load-input.json"), "w"))
      p = os.path.join("ROOT", fresh["data_bag_name"], fresh["item_name"] + ".json")
      print(json.dumps({"data": json.load(open(p))} if os.path.exists(p) else {"exists": False}))
    EOT
  }
  action "create" {
    converge_if_changed {
      interpreter = "python"
      code = <<-EOT
        import json, os, sys
        r = json.load(sys.stdin)
        d = os.path.join("ROOT", r["desired"]["data_bag_name"])
        os.makedirs(d, exist_ok=True)
        json.dump(r["desired"]["data"], open(os.path.join(d, r["desired"]["item_name"] + ".json"), "w"))
      EOT
    }
  }
}
`)
	e.recipe("main.hcl", `
data_bag_item "admins" {
  data_bag_name      = "users"
  recursively_delete = true
  data               = { alice = "ops" }
}
`)
	plan := filepath.Join(e.dir, "p")
	out := e.must(0, "plan", "-out="+plan).stdout
	contains(t, "plan", out, "# data_bag_item[admins] will be created")
	var fresh map[string]any
	if err := json.Unmarshal([]byte(e.read("load-input.json")), &fresh); err != nil {
		t.Fatal(err)
	}
	if fresh["item_name"] != "admins" || fresh["data_bag_name"] != "users" || fresh["recursively_delete"] != true {
		t.Errorf("identity and non-state properties were not copied: %v", fresh)
	}
	if _, ok := fresh["data"]; ok {
		t.Errorf("the desired-state property data was copied: %v", fresh)
	}
	e.must(0, "apply", plan)
	if got := e.read("users/admins.json"); got != `{"alice": "ops"}` {
		t.Errorf("item %q", got)
	}
	// A change of a non-state property alone changes nothing.
	e.recipe("main.hcl", `
data_bag_item "admins" {
  data_bag_name      = "users"
  recursively_delete = false
  data               = { alice = "ops" }
}
`)
	if out := e.must(0, "plan").stdout; !strings.Contains(out, "No changes.") {
		t.Errorf("a desired_state = false property was compared:\n%s", out)
	}
	e.write("users/admins.json", `{"alice": "dev"}`, 0o644)
	contains(t, "drifted", e.must(0, "plan").stdout, "# data_bag_item[admins] will be updated in place", "~ data")
}

// typesRecipe is a small ini type over files under ROOT, and a site made
// of a file and an execute the file notifies.
const typesRecipe = `
resource_type "kv" {
  property "key" {
    type          = string
    name_property = true
  }
  property "value" {
    type = string
  }
  property "secret" {
    type      = string
    sensitive = true
  }
  load_current_value {
    code = <<-EOT
      f="ROOT/kv/$PROP_KEY"
      if [ -f "$f" ]; then printf '{"value": "%s"}' "$(cat "$f")"; else echo '{"exists": false}'; fi
    EOT
  }
  action "create" {
    converge_if_changed {
      code = "mkdir -p ROOT/kv && printf '%s' \"$PROP_VALUE\" > \"ROOT/kv/$PROP_KEY\""
    }
  }
  action "announce" {
    converge_by "announce the key" {
      code = "echo \"$PROP_KEY\" >> ROOT/announced"
    }
  }
}

resource_type "site" {
  property "greeting" {
    type          = string
    desired_state = false
  }
  action "create" {
    file "page" {
      path    = "ROOT/${new_resource.name}.html"
      content = "${new_resource.greeting}\n"
      notifies "run" {
        resource = "execute[log]"
      }
    }
    execute "log" {
      command = "echo ${new_resource.name} >> ROOT/site.log"
      action  = "nothing"
    }
  }
}
`

func TestE2ECustomTypeStalenessAndDiffersFromPlan(t *testing.T) {
	e := newEnv(t)
	e.recipe("types.hcl", typesRecipe)
	e.recipe("main.hcl", `
kv "a" {
  value = "1"
}
site "home" {
  greeting = "hi"
}
`)
	plan := filepath.Join(e.dir, "p")
	e.must(0, "plan", "-out="+plan)
	// The custom resource's live value changes after the plan: stale.
	if err := os.MkdirAll(filepath.Join(e.root, "kv"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("kv/a", "0", 0o644)
	before := e.snapshot()
	r := e.must(3, "apply", plan)
	contains(t, "stale apply", r.stdout+r.stderr, "kv[a]")
	sameSnapshot(t, before, e.snapshot())

	// A child's live state changes after the plan: stale, naming the child.
	e.must(0, "plan", "-out="+plan)
	e.write("home.html", "hello\n", 0o644)
	before = e.snapshot()
	r = e.must(3, "apply", plan)
	contains(t, "stale apply", r.stdout+r.stderr, "site[home].file[page]")
	sameSnapshot(t, before, e.snapshot())
	e.must(0, "plan", "-out="+plan)
	e.must(0, "apply", plan)
	if got := e.read("site.log"); got != "home\n" {
		t.Errorf("the child's notification: site.log %q", got)
	}

	// An earlier resource of the same apply changes a custom resource:
	// re-read right before it converges, it differs from the plan.
	e.recipe("main.hcl", `
execute "prepare" {
  command = "printf 5 > ROOT/kv/b"
}
kv "b" {
  value = "6"
}
`)
	e.must(0, "plan", "-out="+plan)
	r = e.must(0, "apply", plan)
	contains(t, "apply", r.stdout, "kv[b]")
	if got := e.read("kv/b"); got != "6" {
		t.Errorf("kv/b %q", got)
	}
	rep := lastReport(t, e)
	if !strings.Contains(rep, `"differs_from_plan"`) || !strings.Contains(rep, "value") {
		t.Errorf("the report does not say kv[b] differed from the plan:\n%s", rep)
	}
}

// lastReport is the newest apply report in e's state directory.
func lastReport(t *testing.T, e *env) string {
	t.Helper()
	dir := filepath.Join(e.state, "reports")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("no reports: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, entries[len(entries)-1].Name()))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestE2ECustomTypeGuardsNotificationsSensitive(t *testing.T) {
	e := newEnv(t)
	e.recipe("types.hcl", typesRecipe)
	e.recipe("main.hcl", `
kv "guarded" {
  value  = "x"
  not_if = "test -d ROOT"      # true: skipped, with the default interpreter
}
site "skipped" {
  greeting = "never"
  only_if  = false             # its children are not planned
}
file "ROOT/trigger" {
  content = "t\n"
  notifies "announce" {
    resource = "kv[loud]"
  }
}
kv "loud" {
  value  = "l"
  action = "nothing"
}
kv "quiet" {
  value  = "q"
  secret = "s3cr3t-value"
  notifies "run" {
    resource = "execute[after]"
  }
}
execute "after" {
  command = "echo after >> ROOT/after.log"
  action  = "nothing"
}
`)
	plan := filepath.Join(e.dir, "p")
	out := e.must(0, "plan", "-out="+plan).stdout
	contains(t, "plan", out,
		"# kv[guarded] skipped: not_if `test -d "+e.root+"` is true",
		"# site[skipped] skipped: only_if false is false",
		"# kv[loud] will be created: notified by file["+e.root+"/trigger] (delayed); does not exist",
		`runs converge_by "announce the key"`,
		"# execute[after] will run: notified by kv[quiet] (delayed)",
		`+ secret = (sensitive)`)
	if strings.Contains(out, "site[skipped].file") {
		t.Errorf("a skipped resource's children were planned:\n%s", out)
	}
	for _, show := range [][]string{{"show", plan}, {"show", "-json", plan}, {"show", "-markdown", plan}} {
		if got := e.mustToque(0, nil, show...).stdout; strings.Contains(got, "s3cr3t-value") {
			t.Errorf("%v shows a sensitive property:\n%s", show, got)
		}
	}
	r := e.must(0, "apply", plan)
	if strings.Contains(r.stdout+r.stderr, "s3cr3t-value") {
		t.Errorf("apply shows a sensitive property:\n%s", r)
	}
	if got := e.read("announced"); got != "loud\n" {
		t.Errorf("the notified custom resource: %q", got)
	}
	if got := e.read("after.log"); got != "after\n" {
		t.Errorf("the custom resource's notification: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.root, "kv/guarded")); err == nil {
		t.Errorf("a skipped custom resource converged")
	}
}

func TestE2ECustomTypeBadInput(t *testing.T) {
	load := func(script string) string {
		return `resource_type "thing" {
  property "v" { type = number }
  load_current_value {
    timeout = 1
    code    = <<-EOT
      ` + script + `
    EOT
  }
  action "create" {
    converge_if_changed { code = "touch ROOT/converged" }
  }
}
`
	}
	use := "\nthing \"one\" {\n  v = 1\n}\n"
	for _, c := range []struct{ name, types, want string }{
		{"not JSON", load("echo nope"), `load_current_value of thing (types.hcl:3:3) printed "nope"`},
		{"undeclared property", load(`echo '{"w": 1}'`), `printed the property "w", which thing does not declare`},
		{"wrong type", load(`echo '{"v": "many"}'`), `printed "v": "many", which is not a number`},
		{"hangs", load("sleep 30"), "did not finish within 1s"},
		{"exits non-zero", load("echo broken >&2; exit 2"), "exited with code 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.recipe("types.hcl", c.types)
			e.recipe("main.hcl", use)
			before := e.snapshot()
			r := e.must(1, "plan", "-out="+filepath.Join(e.dir, "p"))
			contains(t, "plan", flat(r.stderr), "Cannot read thing[one]", c.want, "main.hcl:2")
			e.mustToque(1, nil, "apply", filepath.Join(e.dir, "p")) // an errored plan is never applied
			sameSnapshot(t, before, e.snapshot())
		})
	}

	compile := []badInput{
		{"meta-argument property", `resource_type "thing" {
  property "notifies" { type = string }
  action "create" {
    converge_by "x" { code = "true" }
  }
}
`, "bad.hcl:2:"},
		{"built-in name", `resource_type "template" {
  action "create" {
    converge_by "x" { code = "true" }
  }
}
`, "bad.hcl:1:"},
		{"recursive", `resource_type "a" {
  action "create" {
    b "x" {}
  }
}
resource_type "b" {
  action "create" {
    a "y" {}
  }
}
`, "a -> b -> a"},
		{"invalid value", `resource_type "thing" {
  property "port" {
    type = number
    validation {
      condition     = value > 1024
      error_message = "port ${value} is privileged"
    }
  }
  action "create" {
    converge_by "x" { code = "true" }
  }
}
thing "t" {
  port = 80
}
`, "port 80 is privileged"},
		{"child property error names the recipe", `resource_type "thing" {
  property "p" { type = string }
  action "create" {
    file "f" {
      path = new_resource.p
    }
  }
}
thing "t" {
  p = "relative"
}
`, "In the child resources of thing[t], declared at"},
	}
	testBadInput(t, compile)
}

func TestE2ECustomTypesInCookbooks(t *testing.T) {
	e := newEnv(t)
	testutil.WriteFiles(t, e.dir, map[string]string{
		"policy.hcl": `name     = "app"
run_list = ["web::default"]
cookbook "web" { path = "cookbooks/web" }
cookbook "web_site" { path = "cookbooks/web_site" }
`,
		"cookbooks/web/metadata.hcl": "name = \"web\"\nversion = \"1.0.0\"\n",
		"cookbooks/web/resources/site.hcl": `resource_type "site" {
  property "root" {
    type          = string
    desired_state = false
  }
  action "create" {
    template "conf" {
      path      = "${new_resource.root}/${new_resource.name}.conf"
      source    = "site.conf.tpl"
      variables = { name = new_resource.name }
    }
  }
}
`,
		"cookbooks/web/templates/site.conf.tpl": "site ${name}\n",
		"cookbooks/web/recipes/default.hcl":     "web_site \"blog\" {\n  root = \"" + e.root + "\"\n}\n",
		"cookbooks/web_site/metadata.hcl":       "name = \"web_site\"\nversion = \"1.0.0\"\n",
	})
	e.must(0, "install")
	plan := filepath.Join(e.state, "..", "p")
	contains(t, "plan", e.must(0, "plan", "-out="+plan).stdout, "# web_site[blog].template[conf] will be created")
	e.must(0, "apply", plan)
	if got := e.read("blog.conf"); got != "site blog\n" {
		t.Errorf("blog.conf %q", got)
	}
	// A type is part of its cookbook's content: editing it makes the lock stale.
	testutil.WriteFiles(t, e.dir, map[string]string{"cookbooks/web/resources/site.hcl": e.readDir("cookbooks/web/resources/site.hcl") + "# edited\n"})
	contains(t, "stale lock", e.must(1, "plan").stderr, "policy.lock.json is older than its inputs", `the cookbook "web"`)
	e.must(0, "install")

	// Two cookbooks that declare one type: web's site_conf.hcl and
	// web_site's conf.hcl are both web_site_conf.
	testutil.WriteFiles(t, e.dir, map[string]string{
		"policy.hcl": `name     = "app"
run_list = ["web::default", "web_site::default"]
cookbook "web" { path = "cookbooks/web" }
cookbook "web_site" { path = "cookbooks/web_site" }
`,
		"cookbooks/web/resources/site_conf.hcl":  "resource_type \"site_conf\" {\n  action \"create\" {\n    converge_by \"x\" { code = \"true\" }\n  }\n}\n",
		"cookbooks/web_site/resources/conf.hcl":  "resource_type \"conf\" {\n  action \"create\" {\n    converge_by \"x\" { code = \"true\" }\n  }\n}\n",
		"cookbooks/web_site/recipes/default.hcl": "",
	})
	e.must(0, "install")
	r := e.must(1, "plan")
	contains(t, "two cookbooks", r.stderr, "Resource type declared twice", "The resource type web_site_conf is already declared by cookbook web")
}

func (e *env) readDir(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// A batch type reads every resource of the type with one process.
func TestE2ECustomTypeBatch(t *testing.T) {
	testenv.MustHave(t, testenv.Python3)
	e := newEnv(t)
	e.recipe("types.hcl", `
resource_type "flag" {
  property "on" { type = bool }
  load_current_value {
    batch       = true
    interpreter = "python"
    code = <<-EOT
      import json, os, sys
      open(os.path.join("ROOT", "runs"), "a").write("run\n")
      out = []
      for r in json.load(sys.stdin):
          p = os.path.join("ROOT", r["name"])
          out.append({"on": open(p).read() == "on"} if os.path.exists(p) else {"exists": False})
      print(json.dumps(out))
    EOT
  }
  action "create" {
    converge_if_changed { code = "printf on > \"ROOT/$PROP_NAME\"" }
  }
}
`)
	var b strings.Builder
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		b.WriteString("flag \"" + n + "\" {\n  on = true\n}\n")
	}
	e.recipe("main.hcl", b.String())
	plan := filepath.Join(e.dir, "p")
	contains(t, "plan", e.must(0, "plan", "-out="+plan).stdout, "Plan: 5 to create")
	if got := e.read("runs"); got != "run\n" {
		t.Fatalf("the plan read 5 flags with %d runs", strings.Count(got, "run"))
	}
	e.write("runs", "", 0o644)
	e.must(0, "apply", plan)
	// Pre-flight reads them all in one run; each is read again, alone,
	// right before it converges.
	if got := strings.Count(e.read("runs"), "run"); got != 6 {
		t.Errorf("apply ran the load %d times, want 1 batch + 5 re-reads", got)
	}
}

// An action converges in the order it is written, its own steps and its
// children interleaved; a failed child fails its parent, and applying
// the plan again resumes it without redoing what finished.
func TestE2ECustomTypeOrderAndResume(t *testing.T) {
	e := newEnv(t)
	e.recipe("types.hcl", `
resource_type "pipeline" {
  load_current_value {
    code = "echo '{\"exists\": false}'"
  }
  action "create" {
    converge_by "first" {
      code = "echo first >> ROOT/log"
    }
    file "a" {
      path    = "ROOT/a"
      content = "a\n"
    }
    execute "gate" {
      command = "test -f ROOT/go && echo gate >> ROOT/log"
    }
    converge_by "last" {
      code = "test -f ROOT/a && echo last >> ROOT/log"
    }
    file "b" {
      path    = "ROOT/b"
      content = "b\n"
    }
  }
}
`)
	e.recipe("main.hcl", `
pipeline "p" {}
`)
	plan := filepath.Join(e.dir, "p")
	e.must(0, "plan", "-out="+plan)
	r := e.must(1, "apply", plan)
	contains(t, "failed apply", r.stdout+r.stderr, "pipeline[p].execute[gate]")
	if got := e.read("log"); got != "first\n" {
		t.Fatalf("log after the failure %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.root, "b")); err == nil {
		t.Fatal("a child after the failed one converged")
	}
	e.write("go", "", 0o644)
	r = e.must(0, "apply", plan)
	contains(t, "resumed apply", r.stdout, "pipeline[p].file[a]")
	// The resumed parent runs its steps again (a converge_by always runs);
	// the child that finished is not done again.
	if got := e.read("log"); got != "first\nfirst\ngate\nlast\n" {
		t.Errorf("log after resuming %q", got)
	}
	if got := e.read("b"); got != "b\n" {
		t.Errorf("b %q", got)
	}
	if !strings.Contains(lastReport(t, e), `"done earlier"`) {
		t.Errorf("the report does not say file[a] was done earlier:\n%s", lastReport(t, e))
	}
}

// A guard that an earlier resource of the run flips skips the custom
// resource right before it converges, and its children with it.
func TestE2ECustomTypeGuardFlippedSkipsChildren(t *testing.T) {
	e := newEnv(t)
	e.recipe("types.hcl", typesRecipe)
	e.recipe("main.hcl", `
execute "stop" {
  command = "touch ROOT/stop"
}
site "late" {
  greeting = "hi"
  not_if   = "test -f ROOT/stop"
}
`)
	plan := filepath.Join(e.dir, "p")
	contains(t, "plan", e.must(0, "plan", "-out="+plan).stdout, "# site[late].file[page] will be created")
	r := e.must(0, "apply", "-json", plan)
	if _, err := os.Stat(filepath.Join(e.root, "late.html")); err == nil {
		t.Fatal("the child of a skipped resource converged")
	}
	rep := lastReport(t, e)
	contains(t, "report", flat(rep), `"address": "site[late].file[page]"`, "skipped with site[late]: not_if `test -f "+e.root+"/stop` now true")
	contains(t, "apply -json", r.stdout, `"site[late]"`)
}

// A sensitive resource's children are sensitive, and so are the node
// attributes they read.
func TestE2ECustomTypeSensitiveChildren(t *testing.T) {
	e := newEnv(t)
	e.recipe("main.hcl", `
default "conf" {
  motd = "top-secret-motd"
}
resource_type "banner" {
  action "create" {
    file "motd" {
      path    = "ROOT/${new_resource.name}"
      content = node.conf.motd
    }
  }
}
banner "motd" {
  sensitive = true
}
`)
	plan := filepath.Join(e.dir, "p")
	out := e.must(0, "plan", "-out="+plan).stdout
	contains(t, "plan", out, "# banner[motd].file[motd] will be created", "(sensitive resource: every value is hidden)")
	for _, show := range [][]string{{"show", plan}, {"show", "-json", plan}, {"show", "-markdown", plan}} {
		if got := e.mustToque(0, nil, show...).stdout; strings.Contains(got, "top-secret-motd") {
			t.Errorf("%v shows what a sensitive resource's child reads:\n%s", show, got)
		}
	}
	if strings.Contains(out, "top-secret-motd") {
		t.Errorf("plan shows it:\n%s", out)
	}
	e.must(0, "apply", plan)
	if got := e.read("motd"); got != "top-secret-motd" {
		t.Errorf("motd %q", got)
	}
}

// A batch load_current_value that hangs fails the plan after one timeout,
// not one per resource.
func TestE2ECustomTypeBatchHangs(t *testing.T) {
	e := newEnv(t)
	e.recipe("main.hcl", `
resource_type "slow" {
  property "v" { type = string }
  load_current_value {
    batch   = true
    timeout = 1
    code    = "sleep 30"
  }
  action "create" {
    converge_if_changed { code = "true" }
  }
}
slow "a" { v = "1" }
slow "b" { v = "2" }
slow "c" { v = "3" }
slow "d" { v = "4" }
`)
	start := time.Now()
	r := e.must(1, "plan")
	contains(t, "plan", flat(r.stderr), "did not finish within 1s", "Cannot read slow[a]", "Cannot read slow[d]")
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the plan took %s: the hanging batch ran again per resource", d)
	}
}
