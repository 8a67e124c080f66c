package plan

import (
	"encoding/json"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/resources"
)

// Resource groups: a resource_group's guards are every one of its
// resources' first guards (guard.Spec.Group names the group), planned and
// applied with each resource. Renderings show them once per group: before
// the first of its resources they show, and the resources they skip
// together, in one entry (GroupView).

// ShownGroup is a resource group as renderings show it.
type ShownGroup struct {
	// Name is the group's name; Address is resource_group[NAME].
	Name, Address string
	// Members counts the plan's resources the group guards.
	Members int
	// Guards are the group's guards as the first of its resources shown
	// shows them: the results of that resource's evaluation.
	Guards []ShownGuard
	// Skipped are the addresses of the resources the group's guards skip,
	// in plan order; Why is why (the first one's reason).
	Skipped []string
	Why     string
	// skipKey is the group's guards of the first resource they skip, as
	// its plan holds them: a resource listed with it has the same.
	skipKey string
}

// GroupView follows a rendering through a plan, so that each group's
// guards are shown once.
type GroupView struct {
	groups map[string]*ShownGroup
	// of is the group of each resource, by address (a resource's step
	// views share its address).
	of map[string]string
	// skipped marks the resources the group's guards skip.
	skipped map[string]bool
	shown   map[string]bool
}

// Groups is a view of p's resource groups; nil (a no-op view) when it has
// none.
func (p *Plan) Groups() *GroupView {
	var gv *GroupView
	for _, r := range p.Resources {
		name := groupOf(r)
		if name == "" {
			continue
		}
		if gv == nil {
			gv = &GroupView{groups: map[string]*ShownGroup{}, of: map[string]string{}, skipped: map[string]bool{}, shown: map[string]bool{}}
		}
		g := gv.groups[name]
		if g == nil {
			g = &ShownGroup{Name: name, Address: "resource_group[" + name + "]"}
			gv.groups[name] = g
		}
		g.Members++
		gv.of[r.Address] = name
		if r.Kind == resources.Skip && len(r.Guards) > 0 && len(r.Guards) <= len(r.GuardSpecs) {
			if spec := r.GuardSpecs[len(r.Guards)-1]; spec != nil && spec.Group == name && r.Guards[len(r.Guards)-1].Decided {
				// Listed with the others only when its group's guards
				// are theirs, word for word, and decided alike: any other
				// is shown on its own, with its guards.
				key := groupKey(r, name)
				if len(g.Skipped) == 0 {
					g.Why, g.skipKey = p.Why(r), key
				}
				if key == g.skipKey {
					gv.skipped[r.Address] = true
					g.Skipped = append(g.Skipped, r.Address)
				}
			}
		}
	}
	return gv
}

// groupKey is r's guards of group name and their results, as the plan
// holds them (the group's guards are the same for each of its resources,
// but for a sensitive one's hiding them).
func groupKey(r *Resource, name string) string {
	type entry struct {
		Spec   *guard.Spec  `json:"spec"`
		Result *GuardResult `json:"result,omitempty"`
	}
	var es []entry
	for i, s := range r.GuardSpecs {
		if s == nil || s.Group != name {
			continue
		}
		e := entry{Spec: s}
		if i < len(r.Guards) {
			res := r.Guards[i]
			res.DurationMS = 0 // (how long it took is not what it is)
			e.Result = &res
		}
		es = append(es, e)
	}
	b, err := json.Marshal(es)
	if err != nil {
		return "\x00" + r.Address // (never listed with another)
	}
	return string(b)
}

// groupOf is the group whose guards r has ("" for none).
func groupOf(r *Resource) string {
	if r == nil {
		return ""
	}
	for _, s := range r.GuardSpecs {
		if s != nil && s.Group != "" {
			return s.Group
		}
	}
	return ""
}

// SkippedGroup reports, for a resource its group's guards skip, that
// group, and whether this is the first time it is asked for (the
// rendering shows the group's entry then, and never the resource on its
// own). nil for any other resource.
func (gv *GroupView) SkippedGroup(r *Resource) (g *ShownGroup, first bool) {
	if gv == nil || r == nil || !gv.skipped[r.Address] {
		return nil, false
	}
	g = gv.groups[gv.of[r.Address]]
	key := "skip\x00" + g.Name
	first = !gv.shown[key]
	gv.shown[key] = true
	return g, first
}

// Guarded returns s, a resource of the plan (not a notified run), without
// the guards of its group that the group's entry shows, and the group,
// when this is the first resource of it shown (the rendering shows the
// group's guards then, before s): its guards are taken from s. Any other
// s is returned as it is, with nil.
func (gv *GroupView) Guarded(s *Shown) (*Shown, *ShownGroup) {
	if gv == nil || s == nil || s.Resource == nil {
		return s, nil
	}
	name := gv.of[s.Resource.Address]
	if name == "" {
		return s, nil
	}
	g := gv.groups[name]
	var first *ShownGroup
	if !gv.shown[name] {
		gv.shown[name] = true
		g.Guards = nil
		for _, sg := range s.Guards {
			if sg.Group == name {
				g.Guards = append(g.Guards, sg)
			}
		}
		first = g
	}
	out := *s
	out.Guards = nil
	for _, sg := range s.Guards {
		if sg.Group == name && g.shows(sg) {
			continue
		}
		out.Guards = append(out.Guards, sg)
	}
	return &out, first
}

// shows reports whether the group's entry shows sg: the same guard with
// the same verdict.
func (g *ShownGroup) shows(sg ShownGuard) bool {
	for _, x := range g.Guards {
		if x.Kind == sg.Kind && x.Form == sg.Form && x.Command == sg.Command && x.Passed == sg.Passed &&
			x.AtApply == sg.AtApply && x.Now == sg.Now && x.Verdict == sg.Verdict {
			return true
		}
	}
	return false
}
