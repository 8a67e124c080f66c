package planner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/plantest"
)

// Child resources are planned after their parent, under its address, and
// not at all when the parent is skipped; the plan carries the type; a
// parent whose children change fires its notifications.
func TestPlanChildResources(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	recipe := strings.ReplaceAll(`
resource_type "box" {
  property "label" {
    type          = string
    desired_state = false
  }
  action "create" {
    file "inside" {
      path    = "ROOT/${new_resource.name}"
      content = "${new_resource.label}\n"
    }
    execute "seal" {
      command = "true"
      action  = "nothing"
    }
  }
}
box "a" {
  label = "first"
  notifies "run" {
    resource = "execute[after]"
  }
}
box "b" {
  label   = "second"
  only_if = false
}
execute "after" {
  command = "true"
  action  = "nothing"
}
`, "ROOT", root)
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 3)
	p.Registry = builtin.Registry()
	cfg, diags := config.LoadDir(dir, p.Registry)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl, diags := p.Plan(context.Background(), cfg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, r := range pl.Resources {
		got = append(got, r.Address+"<"+r.Parent+">"+string(r.Kind))
	}
	want := "box[a]<>no-op box[a].file[inside]<box[a]>create box[a].execute[seal]<box[a]>no-op box[b]<>skip execute[after]<>no-op"
	if strings.Join(got, " ") != want {
		t.Fatalf("resources\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if len(pl.Types) != 1 || pl.Types[0].Name != "box" {
		t.Fatalf("types %v", pl.Types)
	}
	if len(pl.NotifiedRuns) != 1 || pl.NotifiedRuns[0].Address != "execute[after]" || pl.NotifiedRuns[0].Notifiers[0] != "box[a]" {
		t.Fatalf("the changed child did not mark its parent changed: %+v", pl.NotifiedRuns)
	}
	if c := pl.Counts(); c.Create != 1 || c.Run != 1 || c.Skip != 1 || c.NoOp != 1 {
		t.Fatalf("counts %+v (the box itself is counted by its child)", c)
	}
}
