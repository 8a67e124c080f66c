package planner_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/plan/planner"
	"github.com/toquehq/toque/resources"
)

// planDir plans the recipe src (ROOT replaced by a scratch directory) with
// the built-in types, and returns the plan, its diagnostics and the root.
func planDir(t *testing.T, src string, files map[string]string) (*plan.Plan, hcl.Diagnostics, string) {
	t.Helper()
	dir, root := t.TempDir(), t.TempDir()
	src = strings.ReplaceAll(src, "ROOT", root)
	if err := os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := builtin.Registry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p := &planner.Planner{Registry: reg, Host: &host.Facts{Identity: host.Identity{Hostname: "web-01", MachineID: "0123"}}, Version: "test"}
	pl, diags := p.Plan(context.Background(), cfg)
	return pl, diags, root
}

func byAddr(pl *plan.Plan, addr string) *plan.Resource {
	for _, r := range pl.Resources {
		if r.Address == addr {
			return r
		}
	}
	return nil
}

// TestDeferredOnlyAfterWork: a lazy value or run-time guard waits for
// apply when an earlier resource with work could change what it reads;
// otherwise it is evaluated (decided) at plan, exactly.
func TestDeferredOnlyAfterWork(t *testing.T) {
	recipe := `
directory "ROOT/keys" {}
file "ROOT/motd" {
  content = lazy("plain ${upper("x")}")
}
execute "keygen" {
  command = "echo k > ROOT/keys/api.key"
  creates = "ROOT/keys/api.key"
}
file "ROOT/app.conf" {
  content = lazy("key=${file("ROOT/keys/api.key")}")
}
execute "start" {
  command = "true"
  only_if = lazy("test -f ROOT/keys/api.key")
}
`
	pl, diags, root := planDir(t, recipe, nil)
	if diags.HasErrors() || pl.Errored {
		t.Fatalf("%v %v", diags, pl.Errors)
	}
	conf := byAddr(pl, "file["+root+"/app.conf]")
	if conf.Kind != resources.Create || conf.Lazy["content"] == nil || len(conf.Desired) != 1 {
		t.Errorf("app.conf: %+v", conf)
	}
	start := byAddr(pl, "execute[start]")
	if start.Kind != resources.Run || !start.GuardSpecs[0].AtApply || len(start.Guards) != 1 || start.Guards[0].Passed || start.Guards[0].Decided {
		t.Errorf("start: kind %s guards %+v %+v", start.Kind, start.GuardSpecs, start.Guards)
	}
	// motd reads nothing an earlier resource could change (a directory
	// elsewhere; no command runs before it): known at plan.
	motd := byAddr(pl, "file["+root+"/motd]")
	if motd.Lazy != nil || motd.Desired["content"].Value.AsString() != "plain X" {
		t.Errorf("motd: %+v", motd)
	}
	c := pl.Counts()
	if c.DecidedAtApply != 1 || c.KnownAtApply != 1 {
		t.Errorf("counts %+v", c)
	}
	s := pl.Show(builtin.Registry(), conf)
	if len(s.Lazy) != 1 || len(s.Lazy[0].After) != 2 || !strings.Contains(s.Lazy[0].After[0], "execute[keygen] (creates "+root+"/keys/api.key)") {
		t.Errorf("shown %+v", s.Lazy)
	}
	if got := s.Changes[0].After; got != `(known at apply: "key=${file("`+root+`/keys/api.key")}")` {
		t.Errorf("change shown as %s", got)
	}
	sg := pl.Show(builtin.Registry(), start).Guards[0]
	if !sg.AtApply || sg.Now != "fails now" || len(sg.After) != 2 {
		t.Errorf("guard shown %+v", sg)
	}

	// The key exists now, and nothing before has work: everything is
	// known at plan, and nothing changes.
	for name, content := range map[string]string{"app.conf": "key=k\n", "motd": "plain X"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recipe2 := strings.ReplaceAll(recipe, "ROOT", root)
	if err := os.MkdirAll(filepath.Join(root, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "keys", "api.key"), []byte("k\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pl2, diags, _ := planDir(t, recipe2, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	conf2 := byAddr(pl2, "file["+root+"/app.conf]")
	if conf2.Kind != resources.NoOp || conf2.Lazy != nil {
		t.Errorf("app.conf second plan: %s %v", conf2.Kind, conf2.Lazy)
	}
	start2 := byAddr(pl2, "execute[start]")
	if start2.GuardSpecs[0].AtApply || start2.Kind != resources.Run || !start2.Guards[0].Passed {
		t.Errorf("start second plan: %+v %+v", start2.GuardSpecs[0], start2.Guards)
	}
}

// TestDeferredFailsWhenNothingCanHelp: a lazy value that fails now, when no
// earlier resource could change what it reads, fails the plan at its
// expression; a run-time guard that cannot run then fails it too.
func TestDeferredFailsWhenNothingCanHelp(t *testing.T) {
	pl, diags, _ := planDir(t, `
file "ROOT/app.conf" {
  content = lazy(file("ROOT/keys/api.key"))
}
execute "x" {
  command = "true"
  only_if = lazy({ command = "true", cwd = "ROOT/nowhere" })
}
`, nil)
	if !diags.HasErrors() || !pl.Errored {
		t.Fatal("want errors")
	}
	var sums []string
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			sums = append(sums, d.Summary+" @"+strconv.Itoa(d.Subject.Start.Line))
		}
	}
	want := []string{"Value known at apply cannot be evaluated @3", "Guard cannot run @7"}
	if strings.Join(sums, "|") != strings.Join(want, "|") {
		t.Errorf("got %v, want %v", sums, want)
	}
}

// TestRunTimeGuardCwdMadeEarlier: a run-time guard whose cwd an earlier
// resource makes is not a plan error; it says why it cannot run now.
func TestRunTimeGuardCwdMadeEarlier(t *testing.T) {
	pl, diags, root := planDir(t, `
directory "ROOT/app" {}
bash "start" {
  code    = "true"
  cwd     = "ROOT/app"
  only_if = lazy("test -f flag")
}
`, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := byAddr(pl, "bash[start]")
	if r.Kind != resources.Run || !r.GuardSpecs[0].AtApply || !strings.Contains(r.Guards[0].Error, root+"/app") {
		t.Errorf("%s %+v", r.Kind, r.Guards)
	}
	sg := pl.Show(builtin.Registry(), r).Guards[0]
	if !strings.HasPrefix(sg.Verdict, "decided at apply: only_if `test -f flag` (cannot run now: ") || len(sg.After) != 1 {
		t.Errorf("shown %q after %v", sg.Verdict, sg.After)
	}
}

// TestSkippedResourceValuesNotEvaluated: the values of a resource a guard
// skips at plan are never evaluated, so one that cannot be is no error.
func TestSkippedResourceValuesNotEvaluated(t *testing.T) {
	pl, diags, root := planDir(t, `
file "ROOT/a" {
  content = lazy(file("ROOT/never"))
  only_if = "false"
}
file "ROOT/b" {
  content = lazy(file("ROOT/never"))
  only_if = lazy("false")
}
`, nil)
	if diags.HasErrors() || pl.Errored {
		t.Fatal(diags)
	}
	for _, name := range []string{"a", "b"} {
		if r := byAddr(pl, "file["+root+"/"+name+"]"); r.Kind != resources.Skip {
			t.Errorf("%s: %s", name, r.Kind)
		}
	}
}

// TestUnknownValueWithoutExpressionRefused: a value not known at plan that
// the plan has no expression for (computed from a lazy value) fails the
// plan instead of being dropped.
func TestUnknownValueWithoutExpressionRefused(t *testing.T) {
	f := plantest.NewFakeType()
	p := plantest.FixedPlanner(f, 1)
	_, diags := p.PlanInstances(context.Background(), []*eval.Instance{
		f.Inst("/a", "create", 1, map[string]cty.Value{"content": cty.UnknownVal(cty.String)}),
		plantest.Lazy(f.Inst("/b", "create", 5, nil), "content", `"x"`, 6, cty.NilVal),
	})
	var sums []string
	for _, d := range diags {
		sums = append(sums, d.Summary)
	}
	if len(sums) != 1 || sums[0] != "Value not known at plan" {
		t.Errorf("got %q", sums)
	}
}

// TestLazyAccounts: types whose Load reads by a property (a user's uid, a
// group's gid) plan with that property known only at apply: Load reads as
// if it were not set. Planning a user needs root (the user database is
// root's), so this runs in the root tier.
func TestLazyAccounts(t *testing.T) {
	testenv.MustHave(t, testenv.Root)
	pl, diags, _ := planDir(t, `
execute "x" {
  command = "true"
}
user "toque-lazy-test-user" {
  uid     = lazy(tonumber(trimspace(file("/nonexistent/uid"))))
  comment = lazy("made at apply")
}
group "toque-lazy-test-group" {
  gid = lazy(tonumber(trimspace(file("/nonexistent/gid"))))
}
`, nil)
	if diags.HasErrors() || pl.Errored {
		t.Fatal(diags)
	}
	for _, addr := range []string{"user[toque-lazy-test-user]", "group[toque-lazy-test-group]"} {
		r := byAddr(pl, addr)
		if r.Kind != resources.Create || len(r.Lazy) != 1 {
			t.Errorf("%s: %s %v", addr, r.Kind, r.Lazy)
		}
	}
	// A lazy value that reads nothing of the host is known at plan.
	if u := byAddr(pl, "user[toque-lazy-test-user]"); u.Desired["comment"].Value.AsString() != "made at apply" {
		t.Errorf("comment %v", u.Desired["comment"])
	}
}
