package planner_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
)

// planRecipe plans recipe (ROOT replaced by a scratch dir) with the
// built-in types; files maps names under ROOT to contents written first.
func planRecipe(t *testing.T, recipe string, files map[string]string) (*plan.Plan, string) {
	t.Helper()
	dir, root := t.TempDir(), t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(strings.ReplaceAll(recipe, "ROOT", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 4)
	p.Registry = builtin.Registry()
	cfg, diags := config.LoadDir(dir, p.Registry)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl, diags := p.Plan(context.Background(), cfg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return pl, root
}

func runsOf(pl *plan.Plan) []string {
	var out []string
	for _, nr := range pl.NotifiedRuns {
		pos := "end"
		if nr.Slot < len(pl.Resources) {
			pos = map[bool]string{true: "before ", false: "after "}[nr.Before] + pl.Resources[nr.Slot].Address
		}
		out = append(out, nr.Address+" "+nr.Action+" "+string(nr.Kind)+" "+pos+" <- "+strings.Join(nr.Notifiers, ","))
	}
	return out
}

func TestPlanNotifiedRuns(t *testing.T) {
	const recipe = `
file "ROOT/a" {
  content = "a"
  notifies "run" {
    resource = "execute[pre]"
    timing   = "before"
  }
  notifies "run" {
    resource = "execute[now]"
    timing   = "immediately"
  }
  notifies "run" {
    resource = "execute[reload]"
  }
}
file "ROOT/b" {
  content = "b"
}
execute "reload" {
  command = "true"
  action  = "nothing"
  subscribes "run" {
    resource = "file[ROOT/b]"
  }
}
execute "pre" {
  command = "true"
  action  = "nothing"
}
execute "now" {
  command = "true"
  action  = "nothing"
  notifies "run" {
    resource = "execute[chained]"
  }
}
execute "chained" {
  command = "true"
  action  = "nothing"
}
execute "idle" {
  command = "true"
  action  = "nothing"
}
`
	t.Run("both notifiers change", func(t *testing.T) {
		pl, root := planRecipe(t, recipe, nil)
		a, b := "file["+root+"/a]", "file["+root+"/b]"
		want := []string{
			"execute[pre] run run before " + a + " <- " + a,
			"execute[now] run run after " + a + " <- " + a,
			// As in Chef: an immediate run's delayed notifications are
			// queued before those of the resource that notified it.
			"execute[chained] run run end <- execute[now]",
			"execute[reload] run run end <- " + a + "," + b,
		}
		if got := runsOf(pl); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if r := pl.NotifiedRuns[3].Reason; r != "notified by "+a+" and "+b+" (delayed)" {
			t.Errorf("reason %q", r)
		}
		if c := pl.Counts(); c.Run != 4 || c.Create != 2 || c.NoOp != 1 {
			t.Errorf("counts %+v: want 4 runs, 2 creates, and only execute[idle] unchanged", c)
		}
		var idle *plan.Resource
		for _, r := range pl.Resources {
			if r.Address == "execute[idle]" {
				idle = r
			}
			if r.Address == "execute[reload]" && (len(r.NotifiedBy) != 2 || !r.NotifiedBy[1].Subscribe) {
				t.Errorf("notified_by: %+v", r.NotifiedBy)
			}
		}
		if idle.Reason != plan.ReasonNotNotified {
			t.Errorf("idle reason %q", idle.Reason)
		}
		var out bytes.Buffer
		views.RenderText(&out, pl, views.RenderOptions{Registry: builtin.Registry()})
		text := out.String()
		order := []string{
			"# execute[pre] will run: notified by " + a + " (before)",
			"# " + a + " will be created",
			"# execute[now] will run: notified by " + a + " (immediately)",
			"# " + b + " will be created",
			"# execute[chained] will run: notified by execute[now] (delayed)",
			"# execute[reload] will run: notified by " + a + " and " + b + " (delayed)",
			"# execute[idle]: " + plan.ReasonNotNotified,
		}
		last := -1
		for _, s := range order {
			i := strings.Index(text, s)
			if i < 0 || i < last {
				t.Fatalf("%q missing or out of order in:\n%s", s, text)
			}
			last = i
		}
	})
	t.Run("one notifier already matches", func(t *testing.T) {
		pl, root := planRecipe(t, recipe, map[string]string{"a": "a"})
		b := "file[" + root + "/b]"
		want := []string{"execute[reload] run run end <- " + b}
		if got := runsOf(pl); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, r := range pl.Resources {
			if (r.Address == "execute[pre]" || r.Address == "execute[now]") && r.Reason != plan.ReasonNotNotified {
				t.Errorf("%s: reason %q", r.Address, r.Reason)
			}
		}
	})
	t.Run("nothing changes", func(t *testing.T) {
		pl, _ := planRecipe(t, recipe, map[string]string{"a": "a", "b": "b"})
		if len(pl.NotifiedRuns) != 0 || pl.HasChanges() {
			t.Fatalf("runs %v, changes %v", runsOf(pl), pl.HasChanges())
		}
	})
}

// A resource whose type's default action is nothing (every service used as
// a handler) keeps its guards for its notified runs, as Chef evaluates
// them when the notified action runs: only_if false skips the reload. The
// guard decides before the unit is read, so no systemd is needed.
func TestNotifiedRunOfDefaultNothingKeepsItsGuards(t *testing.T) {
	for _, c := range []struct{ name, guard string }{
		{"expression", `only_if = node.nginx.service_state == "started"`},
		{"command", `only_if = "test -e ROOT/running"`},
		{"not_if", `not_if = node.nginx.service_state != "started"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl, _ := planRecipe(t, `
default "nginx" {
  service_state = "stopped"
}
file "ROOT/nginx.conf" {
  content = "worker_processes 1;\n"
  notifies "reload" {
    resource = "service[nginx]"
  }
}
service "nginx" {
  `+c.guard+`
}
`, nil)
			if len(pl.NotifiedRuns) != 1 {
				t.Fatalf("notified runs %v", runsOf(pl))
			}
			nr := pl.NotifiedRuns[0]
			if nr.Kind != "skip" || len(nr.GuardSpecs) != 1 || len(nr.Guards) != 1 {
				t.Fatalf("the notified reload is %q with %d guard(s) and %d result(s); want skipped by its guard", nr.Kind, len(nr.GuardSpecs), len(nr.Guards))
			}
			// The service is counted once, as its skipped run.
			if c := pl.Counts(); c.Create != 1 || c.Skip != 1 || c.NoOp != 0 {
				t.Errorf("counts %+v: want the file created and the service skipped, not also unchanged", c)
			}
		})
	}
}
