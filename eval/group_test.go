package eval

import (
	"strings"
	"testing"
)

func TestResourceGroups(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // error summaries
		at        string
		// guards are, per instance, its guards as "GROUP:KIND SOURCE"
		// (GROUP empty for its own); edges the notifications.
		guards []string
		edges  []string
	}{
		{
			name: "the group's guards come first, on every resource",
			src: `resource_group "g" {
  only_if = host.os == "linux"
  not_if  = "test -e /etc/off"
  file "/s/a" {}
  file "/s/b" {
    only_if = "test -d /s"
  }
}
file "/s/c" {}
`,
			guards: []string{
				`file[/s/a]: g:only_if host.os == "linux", g:not_if test -e /etc/off`,
				`file[/s/b]: g:only_if host.os == "linux", g:not_if test -e /etc/off, :only_if test -d /s`,
				`file[/s/c]: `,
			},
		},
		{
			name: "a resource whose action is nothing has them on its notified runs",
			src: `resource_group "g" {
  only_if = true
  execute "later" {
    command = "true"
    action  = "nothing"
  }
}
`,
			guards: []string{"execute[later]: notified g:only_if true"},
		},
		{
			name: "the group's guard interpreter is its own, nothing inherited",
			src: `resource_group "g" {
  guard_interpreter = "bash"
  only_if           = "[[ -d /s ]]"
  execute "x" {
    command = "true"
    cwd     = "/tmp"
  }
}
`,
			guards: []string{"execute[x]: g:only_if [[ -d /s ]] (bash, inherits nothing)"},
		},
		{
			name: "the group's notifications are an edge per resource, instances too",
			src: `resource_group "g" {
  notifies "run" {
    resource = "execute[reload]"
  }
  file "/s/a" {}
  file "site" {
    for_each = toset(["x", "y"])
    path     = "/s/${each.key}"
  }
}
execute "reload" {
  command = "true"
  action  = "nothing"
}
`,
			guards: []string{"file[/s/a]: ", `file[site]["x"]: `, `file[site]["y"]: `, "execute[reload]: notified "},
			edges:  []string{"file[/s/a] -> execute[reload] (run, delayed)", `file[site]["x"] -> execute[reload] (run, delayed)`, `file[site]["y"] -> execute[reload] (run, delayed)`},
		},
		{
			name: "a group's guard makes alternatives",
			src: `resource_group "prod" {
  only_if = host.os == "linux"
  file "prod-motd" {
    path = "/s/motd"
  }
}
file "dev-motd" {
  path   = "/s/motd"
  not_if = host.os == "linux"
}
`,
			guards: []string{`file[prod-motd]: g:only_if host.os == "linux"`, `file[dev-motd]: :not_if host.os == "linux"`},
		},
		{
			// Guards are attributes, not blocks: a for expression makes
			// several, as a dynamic block would.
			name: "guards from a for expression, per instance",
			src: `file "f" {
  for_each = { a = ["/s/a", "/s/b"] }
  path     = "/s/${each.key}"
  only_if  = [for d in each.value : { command = "test -d ${d}" }]
}
`,
			guards: []string{`file[f]["a"]: :only_if test -d /s/a, :only_if test -d /s/b`},
		},
		{
			name: "a group's bad reference is reported once",
			src: `resource_group "g" {
  notifies "run" {
    resource = "execute[relaod]"
  }
  file "/s/a" {}
  file "/s/b" {}
}
execute "reload" {
  command = "true"
  action  = "nothing"
}
`,
			want: []string{"Notification to a resource that does not exist"},
			at:   "a.hcl:3",
		},
		{
			name: "each in a group's guard",
			src:  "resource_group \"g\" {\n  only_if = each.value\n  file \"/s/a\" {}\n}\n",
			want: []string{"Reference to each outside for_each"},
			at:   "a.hcl:2",
		},
		{
			name: "a guard of the wrong type",
			src:  "resource_group \"g\" {\n  only_if = 3\n  file \"/s/a\" {}\n}\n",
			want: []string{"Wrong type for guard"},
			at:   "a.hcl:2",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"a.hcl": c.src})
			_, insts, diags := evalBuiltin(t, dir)
			if got := summaries(diags); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("errors %q, want %q\n%s", got, c.want, diags)
			}
			if len(c.want) > 0 {
				if got := rangeAt(t, firstError(diags)); got != c.at {
					t.Errorf("first error at %s, want %s", got, c.at)
				}
				return
			}
			var guards, edges []string
			for _, inst := range insts {
				var gs []string
				prefix := ""
				specs := inst.Guards
				if inst.Resource.Action == "nothing" {
					prefix, specs = "notified ", inst.NotifiedGuards
				}
				for _, s := range specs {
					g := s.Group
					if g != "" {
						g = "g"
					}
					d := g + ":" + string(s.Kind) + " " + s.Source
					if s.Group != "" && s.Interpreter != "" && s.Interpreter != "default" {
						d += " (" + s.Interpreter + ", inherits nothing)"
						if len(s.Inherited) > 0 {
							d += " but inherits " + strings.Join(s.Inherited, ",")
						}
					}
					gs = append(gs, d)
				}
				guards = append(guards, inst.Address()+": "+prefix+strings.Join(gs, ", "))
				for _, e := range inst.Notifies {
					edges = append(edges, e.String())
				}
			}
			if strings.Join(guards, "\n") != strings.Join(c.guards, "\n") {
				t.Errorf("guards\n%s\nwant\n%s", strings.Join(guards, "\n"), strings.Join(c.guards, "\n"))
			}
			if strings.Join(edges, "\n") != strings.Join(c.edges, "\n") {
				t.Errorf("edges\n%s\nwant\n%s", strings.Join(edges, "\n"), strings.Join(c.edges, "\n"))
			}
		})
	}
}
