package plan

import (
	"fmt"
	"strings"

	"github.com/toquehq/toque/resources"
)

// Reasons the planner gives in words (types give their own).
const (
	// ReasonNothing is the reason of a resource whose action is nothing.
	ReasonNothing = "action is nothing: runs only when notified"
	// ReasonNotNotified is the reason of a resource whose action is
	// nothing and that no change in the plan notifies.
	ReasonNotNotified = "action is nothing: runs only when notified; nothing notifies it in this plan"
)

// Timings of a notification, as recipes spell them (config.Timings).
const (
	TimingDelayed     = "delayed"
	TimingImmediately = "immediately"
	TimingBefore      = "before"
)

// NotifiedReason words why a notified run happens: "notified by
// template[/etc/web.conf] (delayed)", then the type's own reason when it
// says more than that a run step runs: a clause saying it runs every time
// ("no guard: runs every time", "reload runs on every apply")
// is true of a resource's own action, but a notified run runs when it is
// notified, so it is left out.
func NotifiedReason(notifiers []string, timing string, kind resources.Kind, typeReason string) string {
	by := strings.Join(notifiers, ", ")
	if n := len(notifiers); n > 1 {
		by = strings.Join(notifiers[:n-1], ", ") + " and " + notifiers[n-1]
	}
	r := fmt.Sprintf("notified by %s (%s)", by, timing)
	if kind == resources.Run {
		typeReason = withoutEveryTime(typeReason)
	}
	if typeReason != "" {
		r += "; " + typeReason
	}
	return r
}

// withoutEveryTime is a run step's reason without its clauses (split at
// "; ") that say it runs every time.
func withoutEveryTime(reason string) string {
	if !strings.Contains(reason, "every time") && !strings.Contains(reason, "on every apply") {
		return reason
	}
	var kept []string
	for _, clause := range strings.Split(reason, "; ") {
		if clause != resources.NoGuardReason && !strings.Contains(clause, "runs every time") && !strings.Contains(clause, "runs on every apply") {
			kept = append(kept, clause)
		}
	}
	return strings.Join(kept, "; ")
}

// NotifiedView is a notified run as a Resource, for renderers and hooks:
// the target's resource with the run's action, kind, reason, changes and
// guards, and no edges.
func (p *Plan) NotifiedView(nr *NotifiedRun) *Resource {
	v := &Resource{Address: nr.Address, Type: "", Name: nr.Address}
	for _, r := range p.Resources {
		if r.Address == nr.Address {
			c := *r
			v = &c
			break
		}
	}
	v.Action, v.Kind, v.Reason = nr.Action, nr.Kind, nr.Reason
	v.StepReason = nr.StepReason
	v.Changes, v.Groups, v.Guards, v.GuardSpecs = nr.Changes, nr.Groups, nr.Guards, nr.GuardSpecs
	v.Current, v.Fingerprint = nr.Current, nr.Fingerprint
	v.Notifications, v.NotifiedBy = nil, nil
	v.Awaits = nil // the resource's own action's, not the run's
	return v
}

// RunsAt returns the notified runs in resource slot's turn, before or
// after its first action converges, in the order they run. Slot
// len(p.Resources) holds the delayed runs at the end.
func (p *Plan) RunsAt(slot int, before bool) []*NotifiedRun {
	return p.RunsAtStep(slot, 0, before)
}

// RunsAtStep is RunsAt for the step-th action of the resource at slot.
func (p *Plan) RunsAtStep(slot, step int, before bool) []*NotifiedRun {
	var out []*NotifiedRun
	for _, nr := range p.NotifiedRuns {
		if nr.Slot == slot && nr.Step == step && nr.Before == before {
			out = append(out, nr)
		}
	}
	return out
}
