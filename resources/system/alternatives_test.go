package system

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// altFixture is an alternatives type on throwaway directories (its
// alternatives and administrative directories, its log), with two
// programs to choose from in dir/bin.
func altFixture(t *testing.T) (*alternativesType, string) {
	t.Helper()
	testenv.MustHave(t, testenv.UpdateAlternatives)
	dir := t.TempDir()
	for _, d := range []string{"alt", "admin", "bin"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"py2", "py3", "vim"} {
		resourcetest.WriteFile(t, filepath.Join(dir, "bin", p), "#!/bin/sh\n", 0o755)
	}
	return newAlternativesType(filepath.Join(dir, "alt"), filepath.Join(dir, "admin"), filepath.Join(dir, "alternatives.log")), dir
}

// altRes builds an alternatives resource as the evaluator does, link's
// default derived.
func altRes(t *testing.T, typ *alternativesType, action string, vals map[string]any) *resources.Resource {
	t.Helper()
	r := resourcetest.NewRes(t, typ, action, vals)
	d, err := typ.Derive(r.Values)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range d {
		r.Values[k] = v
	}
	return r
}

func readlink(t *testing.T, p string) string {
	t.Helper()
	s, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A group's life through every action, each applied with the real
// update-alternatives on throwaway directories, each planned again to a
// no-op: install two alternatives (the plan says which one auto mode
// then selects), change a priority, set one (manual), install in manual
// mode (no change of selection), back to auto, refresh broken links,
// remove one, remove the last (the group goes).
func TestAlternativesLifecycle(t *testing.T) {
	typ, dir := altFixture(t)
	env := resourcetest.TestEnv(t)
	bin := func(p string) string { return filepath.Join(dir, "bin", p) }
	res := func(action, path string, prio int) *resources.Resource {
		vals := map[string]any{"link_name": "toque-py", "link": bin("python"), "path": bin(path)}
		if prio != 0 {
			vals["priority"] = prio
		}
		return altRes(t, typ, action, vals)
	}
	step := resourcetest.Apply(t, typ, env, res("install", "py2", 20), resources.Create)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "priority,link" || !strings.Contains(step.Reason, "there is no alternatives group toque-py") {
		t.Errorf("first install: %s, %q", got, step.Reason)
	}
	if readlink(t, bin("python")) != filepath.Join(dir, "alt", "toque-py") || readlink(t, filepath.Join(dir, "alt", "toque-py")) != bin("py2") {
		t.Errorf("links: %s, %s", readlink(t, bin("python")), readlink(t, filepath.Join(dir, "alt", "toque-py")))
	}
	step = resourcetest.Apply(t, typ, env, res("install", "py3", 30), resources.Create)
	if c := step.Change("priority"); c == nil || !strings.Contains(c.Note, "in auto mode, toque-py then leads to "+bin("py3")) {
		t.Errorf("install of a better one: %+v", step.Changes)
	}
	step = resourcetest.Apply(t, typ, env, res("install", "py2", 40), resources.Update)
	if c := step.Change("priority"); c == nil || c.Before.AsBigFloat().String() != "20" || !strings.Contains(c.Note, "leads to "+bin("py2")) {
		t.Errorf("priority change: %+v", step.Changes)
	}
	step = resourcetest.Apply(t, typ, env, res("set", "py3", 0), resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "selected,status" {
		t.Errorf("set changes %s", got)
	}
	step = resourcetest.Apply(t, typ, env, res("install", "py2", 50), resources.Update)
	if c := step.Change("priority"); c == nil || c.Note != "" {
		t.Errorf("install in manual mode notes a selection: %+v", step.Changes)
	}
	step = resourcetest.Apply(t, typ, env, altRes(t, typ, "auto", map[string]any{"link_name": "toque-py"}), resources.Update)
	if c := step.Change("selected"); c == nil || c.After.AsString() != bin("py2") {
		t.Errorf("auto: %+v", step.Changes)
	}
	refresh := altRes(t, typ, "refresh", map[string]any{"link_name": "toque-py"})
	if _, step := resourcetest.Plan(t, typ, refresh); step.Kind != resources.NoOp {
		t.Errorf("refresh of sound links: %s %s", step.Kind, step.Reason)
	}
	os.Remove(bin("python"))
	step = resourcetest.Apply(t, typ, env, refresh, resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "link_target" {
		t.Errorf("refresh changes %s", got)
	}
	step = resourcetest.Apply(t, typ, env, res("remove", "py2", 0), resources.Delete)
	if !strings.Contains(step.Reason, "toque-py then leads to "+bin("py3")) {
		t.Errorf("remove of the selected one: %q", step.Reason)
	}
	step = resourcetest.Apply(t, typ, env, res("remove", "py3", 0), resources.Delete)
	if !strings.Contains(step.Reason, "it is the last: the group and its links go") {
		t.Errorf("remove of the last one: %q", step.Reason)
	}
	if st := resourcetest.Load(t, typ, res("install", "py2", 20)); st.Exists {
		t.Errorf("the group is still there: %+v", st)
	}
	if _, err := os.Lstat(bin("python")); !os.IsNotExist(err) {
		t.Errorf("the link is still there: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "alternatives.log")); err != nil || !strings.Contains(string(data), "toque-py") {
		t.Errorf("update-alternatives did not log to the throwaway log: %v", err)
	}
}

// install then set, in one resource: set is planned from what install
// leaves (Predict), on a host where the group does not exist yet.
func TestAlternativesInstallThenSet(t *testing.T) {
	typ, dir := altFixture(t)
	r := altRes(t, typ, "install", map[string]any{"link_name": "toque-ed", "link": filepath.Join(dir, "bin", "ed"), "path": filepath.Join(dir, "bin", "vim"), "priority": 10})
	st, step := resourcetest.Plan(t, typ, r)
	next, err := typ.Predict(r, st, step)
	if err != nil {
		t.Fatal(err)
	}
	set := r.WithAction("set")
	step, err = resources.PlanStep(typ, set, next)
	if err != nil || step.Kind != resources.Update || strings.Join(resourcetest.ChangedProps(step), ",") != "status" {
		t.Fatalf("set after install: %v %+v", err, step)
	}
	env := resourcetest.TestEnv(t)
	resourcetest.Apply(t, typ, env, r, resources.Create)
	resourcetest.Apply(t, typ, env, set, resources.Update)
	if st := resourcetest.Load(t, typ, r); st.Values["status"].AsString() != "manual" {
		t.Errorf("status %#v", st.Values["status"])
	}
}

// What update-alternatives --install would drop is said: the slave links
// a package registered with an alternative.
func TestAlternativesSlavesNote(t *testing.T) {
	typ, dir := altFixture(t)
	bin := func(p string) string { return filepath.Join(dir, "bin", p) }
	cmd := exec.Command("update-alternatives", "--log", filepath.Join(dir, "alternatives.log"), "--altdir", typ.altdir, "--admindir", typ.admindir,
		"--install", bin("editor"), "toque-editor", bin("vim"), "50", "--slave", bin("editor.1"), "toque-editor.1", bin("py2"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	_, step := resourcetest.Plan(t, typ, altRes(t, typ, "install", map[string]any{"link_name": "toque-editor", "link": bin("editor"), "path": bin("vim"), "priority": 60}))
	if c := step.Change("priority"); c == nil || !strings.Contains(c.Note, "replaces the alternative's slave links: its 1 go") {
		t.Errorf("changes %+v", step.Changes)
	}
}

// Plan errors name the property to blame; the file of a group that is
// not update-alternatives' is refused, never guessed at.
func TestAlternativesPlanErrors(t *testing.T) {
	typ, dir := altFixture(t)
	bin := func(p string) string { return filepath.Join(dir, "bin", p) }
	vals := func(kv ...any) map[string]any {
		m := map[string]any{"link_name": "toque-x", "link": bin("x")}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		action string
		vals   map[string]any
		want   string
	}{
		{"install", vals("path", bin("py2")), "install needs a priority"},
		{"install", vals("priority", 1), "install needs path"},
		{"install", vals("path", bin("missing"), "priority", 1), "does not exist, and update-alternatives --install refuses"},
		{"install", vals("path", bin("x"), "priority", 1, "link", bin("x")), "does not exist"},
		{"set", vals("path", bin("py2")), "is not an alternative of the toque-x group"},
		{"auto", vals(), "there is no alternatives group toque-x"},
		{"refresh", vals(), "there is no alternatives group toque-x on this host to refresh"},
		{"remove", vals(), "remove needs path"},
	} {
		resourcetest.PlanErr(t, typ, altRes(t, typ, c.action, c.vals), c.want)
	}
	if _, step := resourcetest.Plan(t, typ, altRes(t, typ, "remove", vals("path", bin("py2")))); step.Kind != resources.NoOp {
		t.Errorf("remove of what is not there: %s", step.Kind)
	}
	resourcetest.WriteFile(t, filepath.Join(typ.admindir, "toque-x"), "sometimes\n/usr/bin/x\n\n", 0o644)
	resourcetest.PlanErr(t, typ, altRes(t, typ, "auto", vals()), `is not a file update-alternatives wrote: its status is "sometimes"`)
	resourcetest.WriteFile(t, filepath.Join(typ.admindir, "toque-x"), "auto\n/usr/bin/x\n\n/usr/bin/x1\nhigh\n\n", 0o644)
	resourcetest.PlanErr(t, typ, altRes(t, typ, "auto", vals()), `the priority of /usr/bin/x1 is "high"`)
}

// The group's file as update-alternatives writes it, slaves and all.
func TestAlternativesParse(t *testing.T) {
	g, err := parseAltGroup("manual\n/usr/bin/editor\neditor.1.gz\n/usr/share/man/man1/editor.1.gz\n\n/usr/bin/vim.basic\n30\n/usr/share/man/man1/vim.1.gz\n/bin/nano\n40\n\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if g.status != "manual" || g.link != "/usr/bin/editor" || len(g.alts) != 2 || g.alts[0].slaves != 1 || g.alts[1].slaves != 0 || g.best() != "/bin/nano" {
		t.Errorf("%+v", g)
	}
	for _, bad := range []string{"", "auto\n", "auto\nrel\n\n", "auto\n/x\nslave\n", "auto\n/x\n\n/a\n1"} {
		if _, err := parseAltGroup(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// Bad input is refused when the recipe is read.
func TestAlternativesValidation(t *testing.T) {
	typ := newAlternativesType("", "", "")
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"link_name", cty.StringVal("python"), ""},
		{"link_name", cty.StringVal("py/thon"), "holds a \"/\""},
		{"link_name", cty.StringVal("py thon"), "holds a \"/\", a space"},
		{"link_name", cty.StringVal("py\nthon"), "control character"},
		{"link_name", cty.StringVal(".."), "is not a name"},
		{"priority", cty.NumberIntVal(-5), ""},
		{"priority", cty.NumberFloatVal(1.5), "whole number"},
		{"priority", cty.NumberIntVal(1 << 40), "whole number"},
		{"selected", cty.StringVal("/usr/bin/x"), "a recipe does not set it"},
	} {
		err := typ.schema.Property(c.prop).Validate(c.v)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
	if d, _ := typ.Derive(map[string]cty.Value{"link_name": cty.StringVal("java")}); d["link"].AsString() != "/usr/bin/java" {
		t.Errorf("link's default: %#v", d)
	}
}
