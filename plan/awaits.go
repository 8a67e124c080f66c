package plan

import (
	"fmt"

	"github.com/toquehq/toque/resources"
)

// A value a resource type itself can know only at apply — the version of
// a package that only a repository added by the same plan offers — is
// deferred when an earlier resource of the plan, with work, meets what it
// waits for (resources.Need.AtApply, resources.NeedMeeter): an apt_update
// that runs. This file holds the one rule that decides it: the planner
// asks it before deferring, Read asks it again of a plan file (a plan
// cannot defer what its own earlier resources do not provide), and
// renderings ask it to say what the value waits for.

// Await is one value of a resource that its type knows only at apply:
// Property, waiting for a need an earlier resource of the plan meets when
// it runs. The plan holds no value for it (the change of Property has no
// Planned value, and Desired does not set it); apply plans the resource
// again right before converging it, and fails it when the need is still
// unmet then.
type Await struct {
	Property string `json:"property"`
	// Namespace and Value are the need (resources.Need), What words it
	// for a reviewer: "a repository that offers package nginx".
	Namespace string `json:"namespace"`
	Value     string `json:"value"`
	What      string `json:"what"`
}

// Need is a's need, as the resource types see it.
func (a Await) Need() resources.Need {
	return resources.Need{Namespace: a.Namespace, Value: a.Value, What: a.What, AtApply: true, Property: a.Property}
}

// AwaitOf is the Await of n, a need met at apply.
func AwaitOf(n resources.Need) Await {
	return Await{Property: n.Property, Namespace: n.Namespace, Value: n.Value, What: n.What}
}

// Awaited reports whether property of r is known only at apply because
// r's type waits for an earlier resource (Resource.Awaits).
func (r *Resource) Awaited(property string) bool {
	for _, a := range r.Awaits {
		if a.Property == property {
			return true
		}
	}
	return false
}

// Meeter is an earlier resource of a plan, or an earlier notified run,
// that meets a need of a later one at apply.
type Meeter struct {
	Address string
	// Action is the action that meets it; Notified is set for a notified
	// run, with its notifiers.
	Action    string
	Notified  bool
	Notifiers []string
	// Reason is, for one that would meet it but has no work in the
	// plan (IdleMeetersOf), why it has none.
	Reason string
}

// String words m for a reviewer: "apt_update[lists] (action update,
// notified by apt_repository[fixtures])".
func (m Meeter) String() string {
	if m.Notified {
		return fmt.Sprintf("%s (action %s, notified by %s)", m.Address, m.Action, joinAnd(m.Notifiers))
	}
	return fmt.Sprintf("%s (action %s)", m.Address, m.Action)
}

// MeetersOf lists, in the order they converge, the resources and
// notified runs of p with work that converge before r (one of p's
// resources) and meet a (resources.NeedMeeter): what r's value known at
// apply waits for. reg holds the resource types; one it lacks meets
// nothing.
func (p *Plan) MeetersOf(reg *resources.Registry, r *Resource, a Await) []Meeter {
	return p.meeters(reg, p.earlierEntries(r, nil), a, true)
}

// IdleMeetersOf lists the resources converging before r that would meet
// a if they had work, and have none in p (an apt_update whose lists are
// not due): what the planner names when nothing earlier meets it.
func (p *Plan) IdleMeetersOf(reg *resources.Registry, r *Resource, a Await) []Meeter {
	return p.meeters(reg, p.earlierEntries(r, nil), a, false)
}

// LaterMeetersOf lists the resources and notified runs of p with work
// that meet a but do not converge before r: what the planner names when
// nothing earlier does.
func (p *Plan) LaterMeetersOf(reg *resources.Registry, r *Resource, a Await) []Meeter {
	earlier := map[*Resource]bool{}
	runs := map[*NotifiedRun]bool{}
	for _, e := range p.earlierEntries(r, nil) {
		if e.run != nil {
			runs[e.run] = true
		} else {
			earlier[e.view] = true
		}
	}
	var later []entry
	for _, x := range p.Resources {
		if x != nil && !earlier[x] {
			later = append(later, entry{view: x})
		}
	}
	for _, nr := range p.NotifiedRuns {
		if nr != nil && nr.HasWork() && !runs[nr] {
			later = append(later, entry{view: p.NotifiedView(nr), run: nr})
		}
	}
	return p.meeters(reg, later, a, true)
}

// meeters lists those of es with a step of work that meets a, or, when
// work is unset, those with no work that would.
func (p *Plan) meeters(reg *resources.Registry, es []entry, a Await, work bool) []Meeter {
	if reg == nil {
		return nil
	}
	n := a.Need()
	var out []Meeter
	for _, e := range es {
		x := e.view
		if x == nil || x.AnyWork() != work || (!work && (x.Kind == resources.Skip || x.Action == "nothing")) {
			continue
		}
		t, d, err := DesiredResource(reg, x)
		if err != nil {
			continue
		}
		for si := 0; si < x.Steps(); si++ {
			v := x.StepView(si)
			if v.Kind.IsWork() != work || !resources.MeetsNeed(t, d.WithAction(v.Action), n) {
				continue
			}
			m := Meeter{Address: x.Address, Action: v.Action}
			if e.run != nil {
				m.Notified, m.Notifiers = true, e.run.Notifiers
			}
			if !work {
				m.Reason = p.Why(v)
			}
			out = append(out, m)
			break
		}
	}
	return out
}

// joinAnd joins words as "a, b and c".
func joinAnd(ws []string) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0]
	}
	out := ws[0]
	for _, w := range ws[1 : len(ws)-1] {
		out += ", " + w
	}
	return out + " and " + ws[len(ws)-1]
}
