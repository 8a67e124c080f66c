package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/plan/planner"
	"github.com/toquehq/toque/resources"
)

// awaitsRecipe adds a package to the repository (a file) and updates the
// lists when it does, before a package only that repository offers.
const awaitsRecipe = `
file "ROOT/pkgs/repo/REPO_NAME" {
  content = "1.0\n"
  notifies "update" {
    resource = "fake_update[lists]"
    timing   = "immediately"
  }
}
fake_update "lists" {
  action = "nothing"
}
fake_package "toque-late" {}
file "ROOT/after" {
  content = "after\n"
}
`

// awaitsPlan plans awaitsRecipe (the repository's file named repoName)
// with the built-in types and the file-backed package manager under
// root/pkgs.
func awaitsPlan(t *testing.T, root, repoName string) (*plan.Plan, *resources.Registry) {
	t.Helper()
	for _, d := range []string{"repo", "lists", "installed"} {
		if err := os.MkdirAll(filepath.Join(root, "pkgs", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reg := builtin.Registry().With(plantest.FakeRepo{Dir: filepath.Join(root, "pkgs")}.Types()...)
	dir := t.TempDir()
	src := strings.NewReplacer("ROOT", root, "REPO_NAME", repoName).Replace(awaitsRecipe)
	if err := os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p := &planner.Planner{Registry: reg, Host: &host.Facts{Identity: host.Identity{Hostname: "test-host", MachineID: "0123"}}, Version: "test"}
	pl, diags := p.Plan(context.Background(), cfg)
	if diags.HasErrors() || pl.Errored {
		t.Fatalf("%v %v", diags, pl.Errors)
	}
	pkg := resourceNamed(pl, "fake_package[toque-late]")
	if pkg == nil || len(pkg.Awaits) != 1 || pkg.Awaits[0].Property != "version" {
		t.Fatalf("the version is not known at apply: %+v", pkg)
	}
	return pl, reg
}

func resourceNamed(p *plan.Plan, addr string) *plan.Resource {
	for _, r := range p.Resources {
		if r.Address == addr {
			return r
		}
	}
	return nil
}

// TestApplyPlansAwaitedValueRightBeforeConverging: the version known at
// apply is read once the update the repository notified has run, and
// installed; that the candidate moved since the plan is what the plan
// deferred, not a difference.
func TestApplyPlansAwaitedValueRightBeforeConverging(t *testing.T) {
	for _, moved := range []bool{false, true} {
		root := t.TempDir()
		pl, reg := awaitsPlan(t, root, "toque-late")
		if moved {
			// The lists offer it already (another process updated them):
			// the plan does not go stale.
			writeFile(t, filepath.Join(root, "pkgs", "lists", "toque-late"), "0.9\n")
		}
		a, _ := newApplier(t, reg)
		rep, err := a.Apply(context.Background(), pl)
		if err != nil {
			t.Fatalf("moved %v: %v", moved, err)
		}
		if got := readFile(t, filepath.Join(root, "pkgs", "installed", "toque-late")); got != "1.0\n" {
			t.Errorf("moved %v: installed %q", moved, got)
		}
		rr := resourceReport(t, rep, "fake_package[toque-late]")
		if rr.Outcome != OutcomeChanged || !reflect.DeepEqual(rr.KnownAtApply, []string{"version"}) || rr.DiffersFromPlan != "" || rr.Reason != "toque-late is not installed; the candidate is 1.0" {
			t.Errorf("moved %v: %+v", moved, rr)
		}
	}
}

// TestApplyAwaitedStillChecksTheRest: pre-flight leaves aside only what
// the deferred version is known from; anything else that moved makes the
// plan stale.
func TestApplyAwaitedStillChecksTheRest(t *testing.T) {
	root := t.TempDir()
	pl, reg := awaitsPlan(t, root, "toque-late")
	writeFile(t, filepath.Join(root, "pkgs", "arch"), "arm64\n")
	a, _ := newApplier(t, reg)
	_, err := a.Apply(context.Background(), pl)
	var se *StaleError
	if !errors.As(err, &se) || len(se.Resources) != 1 || se.Resources[0].Address != "fake_package[toque-late]" ||
		len(se.Resources[0].Differences) != 1 || se.Resources[0].Differences[0].Property != "arch" {
		t.Fatalf("got %v, want the plan stale for arch only", err)
	}
	mustNotExist(t, filepath.Join(root, "pkgs", "lists"+"/toque-late"))
}

// TestApplyAwaitedStillMissingFails: a package the repository does not
// offer after all fails, saying what it needs; what came before it is
// applied, and the apply stops there as for any failed resource.
func TestApplyAwaitedStillMissingFails(t *testing.T) {
	root := t.TempDir()
	pl, reg := awaitsPlan(t, root, "another")
	a, _ := newApplier(t, reg)
	rep, err := a.Apply(context.Background(), pl)
	if err == nil || !strings.Contains(err.Error(), "fake_package[toque-late]: a repository that offers package toque-late is still missing now that the earlier resources of this apply have run, so its version is not known: package toque-late is not in the lists") {
		t.Fatalf("got %v", err)
	}
	want := map[string]string{
		"file[" + root + "/pkgs/repo/another]": OutcomeChanged,
		"fake_update[lists]":                   OutcomeUnchanged,
		"fake_package[toque-late]":             OutcomeFailed,
		"file[" + root + "/after]":             OutcomeNotStarted,
	}
	got := outcomes(rep)
	for addr, o := range want {
		if got[addr] != o {
			t.Errorf("%s: %s, want %s", addr, got[addr], o)
		}
	}
	mustNotExist(t, filepath.Join(root, "pkgs", "installed", "toque-late"))
	if readFile(t, filepath.Join(root, "pkgs", "lists", "another")) != "1.0\n" {
		t.Error("the notified update did not run")
	}
}
