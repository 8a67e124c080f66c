package apply

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// A reading the plan took from a prediction (a unit a package of the plan
// ships) lists what it could not know: those turning up at apply are not
// noted as differences, anything else still is.
func TestDescribeDifferencesUnknownAtPlan(t *testing.T) {
	then := &plan.Current{Exists: true, Extra: map[string]string{"load_state": "loaded", resources.ExtraUnknownAtPlan: "active_state,sub_state"}}
	pr := &plan.Resource{Address: "service[web]", Current: then}
	typ, _ := testRegistry().Lookup("tfile")
	now := &plan.Current{Exists: true, Extra: map[string]string{"load_state": "loaded", "active_state": "active", "sub_state": "running"}}
	if got := describeDifferences(typ, pr, now); got != "" {
		t.Errorf("known only at apply, noted: %q", got)
	}
	// Pre-flight's staleness rule sets them aside too (a resumed apply
	// reads the unit the package installed).
	if ds := exactDifferences(typ, pr, then, now); len(ds) != 0 {
		t.Errorf("known only at apply, stale: %+v", ds)
	}
	now.Extra["load_state"] = "masked"
	if got := describeDifferences(typ, pr, now); got != "load_state: loaded at plan time, now masked" {
		t.Errorf("a real difference: %q", got)
	}
}

// TestAllowed holds the rule every converge path asks of a step planned
// during the apply: no more than the plan showed.
func TestAllowed(t *testing.T) {
	planned := func(kind resources.Kind, changes ...plan.Change) *plan.Resource {
		return &plan.Resource{Address: "tfile[/f]", Kind: kind, Changes: changes}
	}
	change := func(prop string) plan.Change { return plan.Change{Property: prop} }
	pinned := func(prop, v string) plan.Change {
		return plan.Change{Property: prop, Planned: &plan.Value{Value: cty.StringVal(v)}}
	}
	step := func(kind resources.Kind, changes ...resources.Change) *resources.Step {
		return &resources.Step{Kind: kind, Changes: changes}
	}
	to := func(prop, v string) resources.Change {
		return resources.Change{Property: prop, After: cty.StringVal(v)}
	}
	cases := []struct {
		name    string
		pr      *plan.Resource
		step    *resources.Step
		wantErr string // "" when allowed
	}{
		{"the planned step", planned(resources.Update, change("content")), step(resources.Update, to("content", "x")), ""},
		{"fewer changes", planned(resources.Update, change("content"), change("mode")), step(resources.Update, to("mode", "0600")), ""},
		{"an update for a planned create", planned(resources.Create, change("content")), step(resources.Update, to("content", "x")), ""},
		{"a run as planned", planned(resources.Run), step(resources.Run), ""},
		{"a create for a planned update", planned(resources.Update, change("content")), step(resources.Create, to("content", "x")),
			"refused to create: the plan showed update"},
		{"a delete for a planned update", planned(resources.Update), step(resources.Delete), "refused to delete: the plan showed update"},
		{"a property the plan did not show", planned(resources.Update, change("content")), step(resources.Update, to("content", "x"), to("owner", "root"), to("mode", "0600")),
			"it would also change mode, owner, which the plan did not show"},
		{"the value the plan showed", planned(resources.Update, pinned("version", "1.2")), step(resources.Update, to("version", "1.2")), ""},
		{"another value than the plan showed", planned(resources.Update, pinned("version", "1.2")), step(resources.Update, to("version", "1.3")),
			`version would now become "1.3", but the plan showed "1.2"`},
		{"another content than the plan showed", planned(resources.Update, pinned("content", "a\nb\n")), step(resources.Update, to("content", "a\nc\n")),
			"content would now become (4 bytes, sha256:"},
		{"another sensitive value", &plan.Resource{Kind: resources.Update, Changes: []plan.Change{pinned("version", "1.2")}, SensitiveProperties: []string{"version"}},
			step(resources.Update, to("version", "1.3")), "version would now become " + plan.Sensitive + ", but the plan showed " + plan.Sensitive},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := allowed(c.pr, c.step)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("error %v, want one saying %q", err, c.wantErr)
			}
		})
	}
}
