package planner

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// TestEdgeWalk holds the walk of planNotifications alone, with every
// target's action planned beforehand (no lifecycle): which notified runs
// it plans, where, for whom and in which order, with delayed runs
// de-duplicated and a cycle cut.
func TestEdgeWalk(t *testing.T) {
	res := func(addr string, kind resources.Kind, edges ...plan.Notification) *plan.Resource {
		return &plan.Resource{Address: addr, Action: "run", Kind: kind, Notifications: edges}
	}
	edge := func(target, timing string) plan.Notification {
		return plan.Notification{Target: target, Action: "run", Timing: timing}
	}
	// a changes and notifies b before, c immediately, d delayed; b's run
	// notifies d delayed too; c's run notifies c (a cycle) and e, whose
	// action takes no step, so fires nothing.
	pl := &plan.Plan{Resources: []*plan.Resource{
		res("a", resources.Update, edge("b", plan.TimingBefore), edge("c", plan.TimingImmediately), edge("d", plan.TimingDelayed)),
		res("b", resources.NoOp, edge("d", plan.TimingDelayed)),
		res("c", resources.NoOp, edge("c", plan.TimingImmediately), edge("e", plan.TimingImmediately)),
		res("d", resources.NoOp),
		res("e", resources.NoOp, edge("d", plan.TimingBefore)),
	}}
	w := &edgeWalk{
		resBy:  map[string]*plan.Resource{},
		protos: map[notifyKey]*plan.NotifiedRun{},
		failed: map[notifyKey]bool{},
		queued: map[notifyKey]*plan.NotifiedRun{},
		active: map[notifyKey]bool{},
	}
	for _, r := range pl.Resources {
		w.resBy[r.Address] = r
		kind := resources.Run
		if r.Address == "e" {
			kind = resources.NoOp
		}
		w.protos[notifyKey{r.Address, "run"}] = &plan.NotifiedRun{Kind: kind}
	}

	w.walk(pl)

	var got []string
	for _, nr := range w.out {
		got = append(got, fmt.Sprintf("%s %s %v slot %d before %v", nr.Address, nr.Timing, nr.Notifiers, nr.Slot, nr.Before))
	}
	want := []string{
		"b before [a] slot 0 before true",
		"c immediately [a] slot 0 before false",
		"e immediately [c] slot 0 before false",
		"d delayed [b a] slot 5 before false",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("notified runs:\n got %q\nwant %q", got, want)
	}
	if len(w.active) != 0 || len(w.diags) != 0 {
		t.Errorf("left active %v, diagnostics %v", w.active, w.diags)
	}
}

// TestMarkNotNotified holds planNotifications' last step: only a resource
// whose action is nothing and that no notified run runs is "not notified".
func TestMarkNotNotified(t *testing.T) {
	pl := &plan.Plan{Resources: []*plan.Resource{
		{Address: "a", Action: "nothing", Reason: "kept"},
		{Address: "b", Action: "nothing"},
		{Address: "c", Action: "run", Reason: "kept"},
	}}
	markNotNotified(pl, map[string]bool{"a": true})
	if pl.Resources[0].Reason != "kept" || pl.Resources[1].Reason != plan.ReasonNotNotified || pl.Resources[2].Reason != "kept" {
		t.Errorf("reasons %q, %q, %q", pl.Resources[0].Reason, pl.Resources[1].Reason, pl.Resources[2].Reason)
	}
}
