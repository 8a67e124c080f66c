package planner_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// Instances of blocks with for_each and count are planned as resources
// of their own, addressed by their keys, and their plan reads back.
func TestPlanInstances(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"a.hcl": `
default "web" {
  sites = { "a.com" = "A", "b.com" = "B" }
}
fake_file "site" {
  for_each = node.web.sites
  path     = "/srv/${each.key}"
  content  = "${each.value}\n"
  notifies "run" {
    resource = "fake_file[hook]"
  }
}
fake_file "part" {
  count   = 2
  path    = "/srv/part${count.index}"
  content = "${count.index}\n"
}
fake_file "hook" {
  path   = "/srv/hook"
  action = "nothing"
}
`})
	f := plantest.NewFakeType()
	p := plantest.FixedPlanner(f, 2)
	cfg, diags := config.LoadDir(dir, p.Registry)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl, diags := p.Plan(context.Background(), cfg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := plan.Write(path, pl); err != nil {
		t.Fatal(err)
	}
	back, err := plan.Read(path, p.Registry)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range back.Resources {
		got = append(got, r.Address+" "+string(r.Kind))
	}
	want := []string{`fake_file[site]["a.com"] create`, `fake_file[site]["b.com"] create`, "fake_file[part][0] create", "fake_file[part][1] create", "fake_file[hook] no-op"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("resources\n%q\nwant\n%q", got, want)
	}
	if r := back.Resources[1]; r.Name != "site" || r.Index != resources.StringKey("b.com") || len(r.Notifications) != 1 || r.Notifications[0].Target != "fake_file[hook]" {
		t.Errorf("instance %+v", r)
	}
	if r := back.Resources[3]; r.Index != resources.IndexKey(1) {
		t.Errorf("index %#v", r.Index)
	}
	if len(back.NotifiedRuns) != 1 || len(back.NotifiedRuns[0].Notifiers) != 2 || back.NotifiedRuns[0].Notifiers[1] != `fake_file[site]["b.com"]` {
		t.Errorf("notified runs %+v", back.NotifiedRuns)
	}
}
