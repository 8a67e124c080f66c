package eval

import (
	"strings"
	"testing"
)

// sites declares file[site] over two keys, and execute targets.
const sites = `file "site" {
  for_each = toset(["a.com", "b.com"])
  path     = "/s/${each.key}"
  content  = each.key
}
execute "reload" {
  command = "true"
  action  = "nothing"
}
execute "one" {
  command = "true"
  action  = "nothing"
}
`

func TestNotificationsOfInstances(t *testing.T) {
	cases := []struct {
		name   string
		recipe string
		want   []string // error summaries
		at     string   // range of the first error
		detail string   // in the first error's detail
		edges  []string // Notification.String(), when no errors
	}{
		{
			name: "one notifies on a for_each resource is one edge per instance",
			recipe: `file "site" {
  for_each = toset(["a.com", "b.com"])
  path     = "/s/${each.key}"
  notifies "run" {
    resource = "execute[reload]"
  }
}
execute "reload" {
  command = "true"
  action  = "nothing"
}
`,
			edges: []string{`file[site]["a.com"] -> execute[reload] (run, delayed)`, `file[site]["b.com"] -> execute[reload] (run, delayed)`},
		},
		{
			name: "a notification to one instance",
			recipe: sites + `execute "x" {
  command = "true"
  notifies "create" {
    resource = "file[site][\"b.com\"]"
  }
}
`,
			edges: []string{`execute[x] -> file[site]["b.com"] (create, delayed)`},
		},
		{
			name: "subscribes to a block is an edge from each instance",
			recipe: sites + `execute "all" {
  command = "true"
  action  = "nothing"
  subscribes "run" {
    resource = "file[site]"
  }
}
`,
			edges: []string{`file[site]["a.com"] -> execute[all] (run, delayed)`, `file[site]["b.com"] -> execute[all] (run, delayed)`},
		},
		{
			name: "each in a reference",
			recipe: `file "site" {
  for_each = toset(["a", "b"])
  path     = "/s/${each.key}"
  notifies "run" {
    resource = "execute[reload][\"${each.key}\"]"
  }
}
execute "reload" {
  for_each = toset(["a", "b"])
  command  = "reload ${each.key}"
  action   = "nothing"
}
`,
			edges: []string{`file[site]["a"] -> execute[reload]["a"] (run, delayed)`, `file[site]["b"] -> execute[reload]["b"] (run, delayed)`},
		},
		{
			name: "count instances",
			recipe: `execute "step" {
  count   = 2
  command = "s${count.index}"
  notifies "run" {
    resource = "execute[after][${count.index}]"
  }
}
execute "after" {
  count   = 2
  command = "a${count.index}"
  action  = "nothing"
}
`,
			edges: []string{"execute[step][0] -> execute[after][0] (run, delayed)", "execute[step][1] -> execute[after][1] (run, delayed)"},
		},
		{
			name: "a block of no instances is no edge",
			recipe: `file "site" {
  for_each = {}
  path     = "/s/${each.key}"
}
execute "all" {
  command = "true"
  action  = "nothing"
  subscribes "run" {
    resource = "file[site]"
  }
}
`,
		},
		{
			name: "dynamic notifies",
			recipe: sites + `file "/s/conf" {
  content = "c"
  dynamic "notifies" {
    for_each = { reload = "delayed", one = "immediately" }
    labels   = ["run"]
    content {
      resource = "execute[${notifies.key}]"
      timing   = notifies.value
    }
  }
}
`,
			edges: []string{"file[/s/conf] -> execute[one] (run, immediately)", "file[/s/conf] -> execute[reload] (run, delayed)"},
		},
		{
			name: "dynamic subscribes with each",
			recipe: sites + `execute "per" {
  for_each = toset(["a.com", "b.com"])
  command  = "true"
  action   = "nothing"
  dynamic "subscribes" {
    for_each = toset([each.key])
    labels   = ["run"]
    content {
      resource = "file[site][\"${subscribes.value}\"]"
    }
  }
}
`,
			edges: []string{`file[site]["a.com"] -> execute[per]["a.com"] (run, delayed)`, `file[site]["b.com"] -> execute[per]["b.com"] (run, delayed)`},
		},
		{
			name:   "an instance that does not exist",
			recipe: sites + "execute \"x\" {\n  command = \"true\"\n  notifies \"create\" {\n    resource = \"file[site][\\\"c.com\\\"]\"\n  }\n}\n",
			want:   []string{"Notification to a resource that does not exist"},
			at:     "a.hcl:17",
			detail: `Did you mean file[site]["a.com"]?`,
		},
		{
			name:   "an index of a for_each resource",
			recipe: sites + "execute \"x\" {\n  command = \"true\"\n  notifies \"create\" {\n    resource = \"file[site][0]\"\n  }\n}\n",
			want:   []string{"Notification to a resource that does not exist"},
			at:     "a.hcl:17",
			detail: `The instances of file[site] are ["a.com"] and ["b.com"].`,
		},
		{
			name:   "a dynamic for_each that is not a collection",
			recipe: sites + "file \"/s/c\" {\n  dynamic \"notifies\" {\n    for_each = \"reload\"\n    labels = [\"run\"]\n    content {\n      resource = \"execute[reload]\"\n    }\n  }\n}\n",
			want:   []string{"Invalid dynamic for_each value"},
			at:     "a.hcl:16",
		},
		{
			name:   "a dynamic block of something else",
			recipe: "file \"/s/c\" {\n  dynamic \"content\" {\n    for_each = {}\n    content {}\n  }\n}\n",
			want:   []string{"Unsupported dynamic block type"},
			at:     "a.hcl:2",
		},
		{
			name:   "an instance notifies its own block",
			recipe: "file \"site\" {\n  for_each = toset([\"a\"])\n  path = \"/s/a\"\n  notifies \"create\" {\n    resource = \"file[site]\"\n  }\n}\n",
			want:   []string{"Resource notifies itself"},
			at:     "a.hcl:4",
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
				if got := rangeAt(t, firstError(diags)); got != c.at {
					t.Errorf("first error at %s, want %s", got, c.at)
				}
				if !strings.Contains(firstError(diags).Detail, c.detail) {
					t.Errorf("detail %q lacks %q", firstError(diags).Detail, c.detail)
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

// for_each, count and dynamic blocks in HCL's JSON syntax.
func TestInstancesInJSON(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl.json": `{
  "file": {"j": {
    "for_each": "${toset([\"a\", \"b\"])}",
    "path": "/s/${each.key}",
    "dynamic": {"notifies": {"for_each": ["x"], "labels": ["run"], "content": {"resource": "execute[${notifies.value}]"}}}
  }},
  "execute": {"x": {"count": 1, "command": "true ${count.index}", "action": "nothing"}}
}`})
	_, insts, diags := evalBuiltin(t, dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, inst := range insts {
		got = append(got, inst.Address())
		for _, e := range inst.Notifies {
			got = append(got, e.String())
		}
	}
	// (execute[x] is a block of count: notifying execute[x] names its
	// instances.)
	want := []string{`file[j]["a"]`, `file[j]["a"] -> execute[x][0] (run, delayed)`, `file[j]["b"]`, `file[j]["b"] -> execute[x][0] (run, delayed)`, "execute[x][0]"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
