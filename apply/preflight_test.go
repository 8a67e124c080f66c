package apply

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/plan"
)

// startRun runs Apply's phases before pre-flight (verify, newRun, the
// state directory, the journal) for a phase test; the locks are not taken.
func startRun(t *testing.T, a *Applier, p *plan.Plan) *run {
	t.Helper()
	if err := a.verify(p); err != nil {
		t.Fatal(err)
	}
	r, err := a.newRun(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.state, err = OpenStateDir(a.StateDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.state.Close() })
	if err := r.readJournal(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.j.close)
	return r
}

// TestPreflightPhase holds pre-flight alone: its verdict on each resource
// of a plan (create new, update upd, leave same) after the host moved,
// and that it changes nothing on the host.
func TestPreflightPhase(t *testing.T) {
	cases := []struct {
		name  string
		move  func(t *testing.T, dir string)
		done  []string // files whose entry is marked already done
		stale string   // the file named stale, "" when the plan still holds
	}{
		{"nothing moved", func(*testing.T, string) {}, nil, ""},
		{"new created as planned", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "new"), "new\n")
		}, []string{"new"}, ""},
		{"upd updated as planned", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "upd"), "new\n")
		}, []string{"upd"}, ""},
		{"upd changed otherwise", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "upd"), "by hand\n")
		}, nil, "upd"},
		{"same changed", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "same"), "by hand\n")
		}, nil, "same"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a, h := newApplier(t, testRegistry())
			path := func(name string) string { return filepath.Join(dir, name) }
			writeFile(t, path("upd"), "old\n")
			writeFile(t, path("same"), "same\n")
			p := makePlan(t, a.Registry, tfile(path("new"), "new\n"), tfile(path("upd"), "new\n"), tfile(path("same"), "same\n"))
			c.move(t, dir)
			before := snapshotTree(t, dir)
			r := startRun(t, a, p)

			err := r.preflight(context.Background())

			var se *StaleError
			switch {
			case c.stale == "" && err != nil:
				t.Fatalf("preflight: %v", err)
			case c.stale != "" && !errors.As(err, &se):
				t.Fatalf("preflight: %v, want a *StaleError", err)
			case c.stale != "" && (len(se.Resources) != 1 || se.Resources[0].Address != "tfile["+path(c.stale)+"]"):
				t.Fatalf("stale resources %+v, want only %s", se.Resources, c.stale)
			}
			if len(r.entries) != len(p.Resources) {
				t.Fatalf("%d entries for %d resources", len(r.entries), len(p.Resources))
			}
			want := map[string]bool{}
			for _, name := range c.done {
				want["tfile["+path(name)+"]"] = true
			}
			for _, e := range r.entries {
				if e.alreadyDone != want[e.pr.Address] {
					t.Errorf("%s: already done %v, want %v", e.pr.Address, e.alreadyDone, want[e.pr.Address])
				}
			}
			if after := snapshotTree(t, dir); after != before {
				t.Errorf("pre-flight changed the host:\n%s\nwas\n%s", after, before)
			}
			if ev := h.Events(); len(ev) != 0 {
				t.Errorf("pre-flight called hooks: %q", ev)
			}
		})
	}
}
