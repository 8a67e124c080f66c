package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/plan/planner"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/builtin"
)

// The file editors (file_line, file_block, ini_setting) and symbolic
// modes through the real planner and apply: what apply writes is what the
// plan showed.

// openRoot is a scratch directory every user may reach, so that a plan
// shows the diff of a 0644 file in it.
func openRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// planRecipe plans src (ROOT replaced by root) with the built-in types,
// returning its diagnostics.
func planRecipe(t *testing.T, root, src string) (*plan.Plan, hcl.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(strings.ReplaceAll(src, "ROOT", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := builtin.Registry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		return nil, diags
	}
	p := &planner.Planner{Registry: reg, Host: &host.Facts{Identity: host.Identity{Hostname: "test-host", MachineID: "0123"}}, Version: "test"}
	return p.Plan(context.Background(), cfg)
}

const editsRecipe = `
ini_setting "port" {
  path    = "ROOT/app.ini"
  section = "server"
  value   = "8080"
}
file_line "header" {
  path          = "ROOT/app.ini"
  line          = "; managed in part by toque"
  insert_before = "BOF"
}
file_block "extra" {
  path  = "ROOT/app.ini"
  block = <<-EOT
    [extra]
    a = 1
  EOT
}
file_line "after-extra" {
  path         = "ROOT/app.ini"
  line         = "; the block above is toque's"
  insert_after = "^# END TOQUE MANAGED BLOCK extra$"
}
file_line "no-host" {
  action = "delete"
  path   = "ROOT/app.ini"
  match  = "^host\\s*="
}
file "ROOT/other" {
  mode = "go-w"
}
`

// TestApplyEditsAsPlanned: several editors of one file, of the three
// types, each shown with its own diff on what the ones before it leave;
// apply writes exactly that, with no difference from the plan, and a
// second plan has nothing to do.
func TestApplyEditsAsPlanned(t *testing.T) {
	root := openRoot(t)
	path := filepath.Join(root, "app.ini")
	if err := os.WriteFile(path, []byte("[server]\nport = 80\nhost = 0.0.0.0\n"), 0o664); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "other")
	writeFile(t, other, "x\n")
	if err := os.Chmod(other, 0o664); err != nil {
		t.Fatal(err)
	}
	p, diags := planRecipe(t, root, editsRecipe)
	if diags.HasErrors() || p.Errored {
		t.Fatalf("%v %v", diags, p.Errors)
	}
	reg := builtin.Registry()
	var diffs []string
	for _, r := range p.Resources {
		if r.Type == "file" {
			s := p.Show(reg, r)
			if len(s.Changes) != 1 || s.Changes[0].Before != `"0664"` || s.Changes[0].After != `"0644"` || !strings.Contains(s.Changes[0].DiffNote, "go-w, applied to 0664") {
				t.Fatalf("mode change: %+v", s.Changes)
			}
			continue
		}
		if r.Kind != resources.Update {
			t.Fatalf("%s: %s (%s)", r.Address, r.Kind, r.Reason)
		}
		s := p.Show(reg, r)
		if len(s.Changes) != 1 || s.Changes[0].Property != "content" || s.Changes[0].Diff == "" {
			t.Fatalf("%s: %+v", r.Address, s.Changes)
		}
		diffs = append(diffs, s.Changes[0].Diff)
	}
	// Each diff shows its own edit, once.
	for i, want := range []string{"+port = 8080", "+; managed in part by toque", "+[extra]", "+; the block above is toque's", "-host = 0.0.0.0"} {
		if !strings.Contains(diffs[i], want) || strings.Count(strings.Join(diffs, ""), want) != 1 {
			t.Errorf("diff %d:\n%s\nshould hold %q once in the plan", i, diffs[i], want)
		}
	}
	a, _ := newApplier(t, reg)
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range rep.Resources {
		if rr.Outcome != OutcomeChanged || rr.DiffersFromPlan != "" {
			t.Errorf("%s: %s %q", rr.Address, rr.Outcome, rr.DiffersFromPlan)
		}
	}
	const want = "; managed in part by toque\n[server]\nport = 8080\n# BEGIN TOQUE MANAGED BLOCK extra\n[extra]\na = 1\n# END TOQUE MANAGED BLOCK extra\n; the block above is toque's\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("the file:\n%s\nwant\n%s", got, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o664 {
		t.Fatalf("the editors changed the mode: %v", fi.Mode())
	}
	if fi, _ := os.Stat(other); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	again, diags := planRecipe(t, root, editsRecipe)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, r := range again.Resources {
		if r.Kind != resources.NoOp {
			t.Errorf("second plan: %s %s (%s)", r.Address, r.Kind, r.Reason)
		}
	}
}

// TestApplyEditsStale: a file edited after the plan makes the plan stale,
// for every editor of it; nothing is written.
func TestApplyEditsStale(t *testing.T) {
	root := openRoot(t)
	path := filepath.Join(root, "app.ini")
	writeFile(t, path, "[server]\nport = 80\nhost = 0.0.0.0\n")
	p, diags := planRecipe(t, root, editsRecipe)
	if diags.HasErrors() || p.Errored {
		t.Fatalf("%v %v", diags, p.Errors)
	}
	writeFile(t, path, "[server]\nport = 81\nhost = 0.0.0.0\n")
	a, _ := newApplier(t, builtin.Registry())
	_, err := a.Apply(context.Background(), p)
	var stale *StaleError
	// The first editor's reading moved; those after it are planned on
	// what it leaves, which did not.
	if !errors.As(err, &stale) || len(stale.Resources) != 1 || stale.Resources[0].Address != "ini_setting[port]" {
		t.Fatalf("apply: %v", err)
	}
	if got := readFile(t, path); got != "[server]\nport = 81\nhost = 0.0.0.0\n" {
		t.Fatalf("the file was written: %q", got)
	}
}

// TestApplyEditAfterCreate: a file created by an earlier resource of the
// plan, then edited: the edit is known at apply, and apply makes it.
func TestApplyEditAfterCreate(t *testing.T) {
	root := openRoot(t)
	p, diags := planRecipe(t, root, `
file "ROOT/limits.conf" {
  action  = "create_if_missing"
  content = "# limits\n# End of file\n"
}
file_line "core" {
  path          = "ROOT/limits.conf"
  line          = "* hard core 0"
  insert_before = "^# End of file"
}
file_line "nproc" {
  path          = "ROOT/limits.conf"
  line          = "* hard nproc 512"
  insert_before = "^# End of file"
}
`)
	if diags.HasErrors() || p.Errored {
		t.Fatalf("%v %v", diags, p.Errors)
	}
	for _, r := range p.Resources[1:] {
		if len(r.Awaits) != 2 || r.Awaits[0].Property != "content" || r.Awaits[1].Property != "checksum" {
			t.Fatalf("%s waits for %+v", r.Address, r.Awaits)
		}
	}
	a, _ := newApplier(t, builtin.Registry())
	if _, err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "limits.conf")); got != "# limits\n* hard core 0\n* hard nproc 512\n# End of file\n" {
		t.Fatalf("%q", got)
	}

	// Created private (not every user may read it): the edit shows a
	// checksum, known at apply too.
	p, diags = planRecipe(t, root, `
file "ROOT/private.conf" {
  action  = "create_if_missing"
  content = "a = 1\n"
  mode    = "u=rw,go="
}
ini_setting "a" {
  path  = "ROOT/private.conf"
  value = "2"
}
`)
	if diags.HasErrors() || p.Errored {
		t.Fatalf("%v %v", diags, p.Errors)
	}
	if _, err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "private.conf")); got != "a = 2\n" {
		t.Fatalf("%q", got)
	}

	// Nothing creates it: a plan error that says what to declare.
	_, diags = planRecipe(t, root, `
file_line "x" {
  path = "ROOT/nope"
  line = "a"
}
`)
	if len(diags) != 1 || !strings.Contains(diags.Error(), "Declare a file resource for it") {
		t.Fatalf("%v", diags)
	}
}

// TestPlanEditorsApartRefused: an editor with a guard shares its file
// with others: the plan says it cannot be planned with them, pointing at
// it. Alone on its file, a guard is fine.
func TestPlanEditorsApartRefused(t *testing.T) {
	root := openRoot(t)
	writeFile(t, filepath.Join(root, "a"), "x\n")
	writeFile(t, filepath.Join(root, "b"), "x\n")
	_, diags := planRecipe(t, root, `
file_line "one" {
  path = "ROOT/a"
  line = "one"
}
file_line "two" {
  path    = "ROOT/a"
  line    = "two"
  only_if = "true"
}
file_line "alone" {
  path    = "ROOT/b"
  line    = "b"
  only_if = "true"
}
`)
	if len(diags) != 1 || !strings.Contains(diags[0].Detail, "file_line[two] edits") || !strings.Contains(diags[0].Detail, "which file_line[one] edits too") || diags[0].Subject == nil || diags[0].Subject.Start.Line != 6 {
		t.Fatalf("%v", diags)
	}
}

// TestPlanEditorsBadInput: values that would slip a line, a section or a
// pattern that never matches into a file are errors pointing at the
// attribute (file:line:col), before anything is read.
func TestPlanEditorsBadInput(t *testing.T) {
	root := openRoot(t)
	cases := map[string]struct {
		src     string
		line    int
		summary string
	}{
		"regex": {`file_line "x" {
  path  = "ROOT/f"
  match = "(unclosed"
}`, 3, "not a regular expression"},
		"across lines": {`file_line "x" {
  path  = "ROOT/f"
  line  = "a"
  match = "a\\nb"
}`, 4, "matches across lines"},
		"newline in line": {`file_line "x" {
  path = "ROOT/f"
  line = "a\nb"
}`, 3, "must be one line"},
		"ini key with =": {`ini_setting "a=b" {
  path  = "ROOT/f"
  value = "1"
}`, 1, "holds \"=\""},
		"ini key with [": {`ini_setting "x" {
  key   = "[x"
  path  = "ROOT/f"
  value = "1"
}`, 2, "holds \"[\""},
		"ini value injecting a section": {`ini_setting "x" {
  path  = "ROOT/f"
  value = "1\n[evil]\nk = v"
}`, 3, "one line"},
		"symbolic mode": {`file "ROOT/f" {
  mode = "+x"
}`, 2, "does not say whom"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, diags := planRecipe(t, root, c.src)
			if !diags.HasErrors() || !strings.Contains(diags.Error(), c.summary) {
				t.Fatalf("%v", diags)
			}
			d := diags[0]
			if d.Subject == nil || d.Subject.Start.Line != c.line || d.Subject.Start.Column == 0 || !strings.HasSuffix(d.Subject.Filename, "a.hcl") {
				t.Fatalf("points at %v, want a.hcl:%d", d.Subject, c.line)
			}
		})
	}
}
