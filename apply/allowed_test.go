package apply

import (
	"testing"

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
