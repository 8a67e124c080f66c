package eval

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/resources/builtin"
)

// vhosts writes node.web.vhosts: three of them, with their ports.
const vhosts = `default "web" {
  vhosts = {
    "a.com" = { port = 80 }
    "b.com" = { port = 81 }
    "c.com" = { port = 82 }
  }
  none = {}
  names = ["x", "y"]
}
`

func TestForEachAndCountInstances(t *testing.T) {
	cases := []struct {
		name, src string
		// want is each instance's address and the value of its path or
		// command, in order.
		want []string
	}{
		{"a map", vhosts + `file "vhost" {
  for_each = node.web.vhosts
  path     = "/s/${each.key}"
  content  = "listen ${each.value.port}\n"
}
`, []string{`file[vhost]["a.com"]=/s/a.com`, `file[vhost]["b.com"]=/s/b.com`, `file[vhost]["c.com"]=/s/c.com`}},
		{"a set of strings, in key order", vhosts + `file "n" {
  for_each = toset(["z", "y", node.web.names[0]])
  path     = "/s/${each.value}"
}
`, []string{`file[n]["x"]=/s/x`, `file[n]["y"]=/s/y`, `file[n]["z"]=/s/z`}},
		{"toset of mixed values converts them", `file "m" {
  for_each = toset(["b", 1, "b"])
  path     = "/s/${each.value}"
}
`, []string{`file[m]["1"]=/s/1`, `file[m]["b"]=/s/b`}},
		{"toset of a set", `file "s" {
  for_each = toset(toset(["b", "a"]))
  path     = "/s/${each.value}"
}
`, []string{`file[s]["a"]=/s/a`, `file[s]["b"]=/s/b`}},
		{"an object", `file "o" {
  for_each = { one = 1, two = 2 }
  path     = "/s/${each.key}-${each.value}"
}
`, []string{`file[o]["one"]=/s/one-1`, `file[o]["two"]=/s/two-2`}},
		{"count", `execute "step" {
  count   = 3
  command = "echo ${count.index}"
}
`, []string{"execute[step][0]=echo 0", "execute[step][1]=echo 1", "execute[step][2]=echo 2"}},
		{"an empty map is no instance", vhosts + `file "none" {
  for_each = node.web.none
  path     = "/s/${each.key}"
}
file "/s/other" {}
`, []string{"file[/s/other]=/s/other"}},
		{"count 0 is no instance", `execute "never" {
  count   = 0
  command = "x"
}
`, nil},
		{"a key that needs quoting", `file "q" {
  for_each = toset(["say \"hi\"\n"])
  path     = "/s/q"
}
`, []string{`file[q]["say \"hi\"\n"]=/s/q`}},
		{"a number as a string count", `execute "s" {
  count   = "2"
  command = "c${count.index}"
}
`, []string{"execute[s][0]=c0", "execute[s][1]=c1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"a.hcl": c.src})
			_, insts, diags := evalBuiltin(t, dir)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			var got []string
			for _, inst := range insts {
				v := inst.Resource.String("path")
				if v == "" {
					v = inst.Resource.String("command")
				}
				got = append(got, inst.Address()+"="+v)
				if inst.Address() != inst.Resource.Address() {
					t.Errorf("block address %s, resource address %s", inst.Address(), inst.Resource.Address())
				}
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("instances\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestForEachAndCountErrors(t *testing.T) {
	cases := []struct {
		name, src string
		// want is the summary of each error; at is where the first is.
		want []string
		at   string
	}{
		{"both", "execute \"x\" {\n  count = 1\n  for_each = toset([\"a\"])\n  command = \"c\"\n}\n",
			[]string{"Invalid combination of count and for_each"}, "a.hcl:3"},
		{"a negative count", "execute \"x\" {\n  count = -1\n  command = \"c\"\n}\n",
			[]string{"Invalid count argument"}, "a.hcl:2"},
		{"a fractional count", "execute \"x\" {\n  count = 1.5\n  command = \"c\"\n}\n",
			[]string{"Invalid count argument"}, "a.hcl:2"},
		{"a null count", "execute \"x\" {\n  count = null\n  command = \"c\"\n}\n",
			[]string{"Invalid count argument"}, "a.hcl:2"},
		{"a count that is not a number", "execute \"x\" {\n  count = \"many\"\n  command = \"c\"\n}\n",
			[]string{"Invalid count argument"}, "a.hcl:2"},
		{"a huge count", "execute \"x\" {\n  count = 100001\n  command = \"c\"\n}\n",
			[]string{"Invalid count argument"}, "a.hcl:2"},
		{"a list", vhosts + "file \"x\" {\n  for_each = node.web.names\n  path = \"/s/${each.key}\"\n}\n",
			[]string{"Invalid for_each argument"}, "a.hcl:11"},
		{"null", "file \"x\" {\n  for_each = null\n  path = \"/s/x\"\n}\n",
			[]string{"Invalid for_each argument"}, "a.hcl:2"},
		{"a string", "file \"x\" {\n  for_each = \"abc\"\n  path = \"/s/x\"\n}\n",
			[]string{"Invalid for_each argument"}, "a.hcl:2"},
		{"a set of numbers", "file \"x\" {\n  for_each = toset([1, 2])\n  path = \"/s/${each.key}\"\n}\n",
			[]string{"Invalid for_each argument"}, "a.hcl:2"},
		{"lazy keys", "file \"x\" {\n  for_each = lazy(toset([\"a\"]))\n  path = \"/s/${each.key}\"\n}\n",
			[]string{"lazy is not allowed on for_each"}, "a.hcl:2"},
		{"lazy inside the keys", "file \"x\" {\n  for_each = { (lazy(\"k\")) = 1 }\n  path = \"/s/${each.key}\"\n}\n",
			[]string{"lazy is not allowed on for_each"}, "a.hcl:2"},
		{"lazy count", "execute \"x\" {\n  count = lazy(2)\n  command = \"c\"\n}\n",
			[]string{"lazy is not allowed on count"}, "a.hcl:2"},
		{"sensitive keys", "file \"x\" {\n  for_each = sensitive(toset([\"a\"]))\n  path = \"/s/${each.key}\"\n}\n",
			[]string{"Invalid for_each argument"}, "a.hcl:2"},
		{"each outside for_each", "file \"x\" {\n  path = \"/s/${each.key}\"\n}\n",
			[]string{"Reference to each outside for_each"}, "a.hcl:2"},
		{"each in a count block", "file \"x\" {\n  count = 1\n  path = \"/s/${each.key}\"\n}\n",
			[]string{"Reference to each outside for_each"}, "a.hcl:3"},
		{"count.index outside count", "file \"x\" {\n  path = \"/s/${count.index}\"\n}\n",
			[]string{"Reference to count outside count"}, "a.hcl:2"},
		{"count.index in a for_each block", "file \"x\" {\n  for_each = toset([\"a\"])\n  path = \"/s/${count.index}\"\n}\n",
			[]string{"Reference to count outside count"}, "a.hcl:3"},
		{"each in a guard outside for_each", "file \"/s/x\" {\n  only_if = each.value\n}\n",
			[]string{"Reference to each outside for_each"}, "a.hcl:2"},
		{"two instances, one path", "file \"x\" {\n  for_each = toset([\"a\", \"b\"])\n  path = \"/s/same\"\n}\n",
			[]string{"Two resources manage the same path"}, "a.hcl:1"},
		{"an error every instance makes is reported once", "file \"x\" {\n  for_each = toset([\"a\", \"b\", \"c\"])\n  path = \"/s/${each.key}\"\n  content = node.nope\n}\n",
			[]string{"Unsupported attribute"}, "a.hcl:4"},
		{"an error in one instance", "file \"x\" {\n  for_each = { a = \"0644\", b = \"bad\" }\n  path = \"/s/${each.key}\"\n  mode = each.value\n}\n",
			[]string{"Invalid value for property"}, "a.hcl:4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"a.hcl": c.src})
			_, _, diags := evalBuiltin(t, dir)
			got := summaries(diags)
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("errors %q, want %q\n%s", got, c.want, diags)
			}
			if at := rangeAt(t, firstError(diags)); at != c.at {
				t.Errorf("first error at %s, want %s", at, c.at)
			}
		})
	}
}

func firstError(diags hcl.Diagnostics) *hcl.Diagnostic {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			return d
		}
	}
	return &hcl.Diagnostic{}
}

func TestDuplicateInstancesNameBoth(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": "file \"x\" {\n  for_each = toset([\"a\", \"b\"])\n  path = \"/s/same\"\n}\n"})
	_, _, diags := evalBuiltin(t, dir)
	if len(diags) != 1 || !strings.Contains(diags[0].Detail, `file[x]["b"] and file[x]["a"]`) || !strings.Contains(diags[0].Detail, "each.key") {
		t.Fatalf("diagnostics %v", diags)
	}
}

// A for_each over node attributes with sensitive leaves keeps them
// sensitive in each.value; the keys name the instances.
func TestForEachSensitiveValues(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": `default "db" {
  users = {
    alice = { password = sensitive("s3cret"), shell = "/bin/sh" }
  }
}
file "pw" {
  for_each = node.db.users
  path     = "/s/${each.key}"
  content  = each.value.password
}
file "shell" {
  for_each = node.db.users
  path     = "/s/${each.key}.shell"
  content  = each.value.shell
}
`})
	_, insts, diags := evalBuiltin(t, dir)
	if diags.HasErrors() || len(insts) != 2 {
		t.Fatal(diags)
	}
	if got := insts[0].SensitiveProps; len(got) != 1 || got[0] != "content" {
		t.Errorf("sensitive properties of %s: %q", insts[0].Address(), got)
	}
	if got := insts[1].SensitiveProps; len(got) != 0 {
		t.Errorf("sensitive properties of %s: %q", insts[1].Address(), got)
	}
}

// validate (no host) checks an instance of a block whose collection it
// cannot know, and leaves references to its instances unchecked.
func TestForEachUnknownCollectionValidates(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": `file "h" {
  for_each = toset([host.hostname])
  path     = "/s/${each.key}"
  conten   = "x"
}
execute "e" {
  command = "true"
  action  = "nothing"
  subscribes "run" {
    resource = "file[h][\"web-01\"]"
  }
}
`})
	reg := builtin.Registry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = Resources(cfg, reg, &Scope{Node: unknownNode(t, cfg), Host: host.Unknown()})
	if got := summaries(diags); strings.Join(got, "|") != "Unknown property" {
		t.Fatalf("errors %q\n%s", got, diags)
	}
}

// A value known at apply that reads each or count carries them: apply
// evaluates it with the instance's key and value.
func TestLazyReadsOfInstances(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": `file "f" {
  for_each = { a = "x", b = "y" }
  path     = "/s/${each.key}"
  content  = lazy("${each.key}=${each.value}")
}
execute "c" {
  count   = 2
  command = "true"
  cwd     = lazy("/s/${count.index}")
}
`})
	_, insts, diags := evalBuiltin(t, dir)
	if diags.HasErrors() || len(insts) != 4 {
		t.Fatal(diags)
	}
	want := []string{"a=x", "b=y", "/s/0", "/s/1"}
	for i, inst := range insts {
		var e *lazy.Expr
		for _, x := range inst.Lazy {
			e = x
		}
		if e == nil {
			t.Fatalf("%s has no lazy value", inst.Address())
		}
		if err := e.Check(); err != nil {
			t.Errorf("%s: %v", inst.Address(), err)
		}
		// What the plan carries, and only that.
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back lazy.Expr
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		v, d := EvaluateLazy(&back, cty.NilVal)
		if d.HasErrors() || v.AsString() != want[i] {
			t.Errorf("%s evaluated to %#v, %s; want %q", inst.Address(), v, d, want[i])
		}
	}
}
