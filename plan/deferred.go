package plan

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/resources"
)

// A value known only at apply (lazy(…)), or a guard decided at apply, is
// deferred only when an earlier resource of the plan, with work planned,
// could change what it reads (design §14: nothing else is deferred). This
// file decides which earlier resources could: the planner asks it before
// deferring anything, and renderings ask it again to tell the reviewer why
// a value waits for apply.

// Writer is an earlier resource of a plan that could change what a value
// known at apply, or a guard decided at apply, reads.
type Writer struct {
	Address string
	// Path is the path it manages (Via "path"), or its `creates` (Via
	// "creates"), that one the value reads lies in or holds; "" when
	// toque cannot tell which paths it changes.
	Path string
	Via  string
	// Runs is set for a resource that runs a command (execute, the script
	// types), which could change anything; Unbounded for one of a type
	// toque cannot bound to paths.
	Runs      bool
	Unbounded bool
}

// String words w for a reviewer: "execute[make-key] (creates
// /srv/keys/api.key)", "file[/srv/a] (manages /srv/a)", "execute[x] (runs
// a command)".
func (w Writer) String() string {
	switch {
	case w.Via == "creates":
		return fmt.Sprintf("%s (creates %s)", w.Address, w.Path)
	case w.Path != "":
		return fmt.Sprintf("%s (manages %s)", w.Address, w.Path)
	case w.Runs:
		return w.Address + " (runs a command)"
	}
	return w.Address + " (could change anything it reads)"
}

// Writers lists, in order, the resources of earlier with work planned that
// could change what reads names: one that runs a command, or whose type
// toque cannot bound to paths, always could; a file-system resource could
// when its path is one that is read, lies inside one, or holds one — or
// when toque cannot tell everything that is read (reads.Complete unset).
// reg holds the resource types; a type it lacks could change anything.
func Writers(reg *resources.Registry, earlier []*Resource, reads lazy.Reads) []Writer {
	if !reads.Host {
		return nil // it reads only what its plan carries
	}
	var out []Writer
	for _, r := range earlier {
		if r == nil || !r.AnyWork() {
			continue
		}
		w, could := writer(reg, r, reads)
		if could {
			out = append(out, w)
		}
	}
	return out
}

// writer says whether r, a resource with work, could change what reads
// names, and how.
func writer(reg *resources.Registry, r *Resource, reads lazy.Reads) (Writer, bool) {
	w := Writer{Address: r.Address}
	var t resources.Type
	if reg != nil {
		t, _ = reg.Lookup(r.Type)
	}
	if t == nil {
		w.Unbounded = true
		return w, true
	}
	s := t.Schema()
	if _, ok := t.(resources.Runner); ok {
		w.Runs = true
		if c, ok := stringOf(desiredValue(r, "creates")); ok {
			if !filepath.IsAbs(c) {
				cwd, _ := stringOf(desiredValue(r, "cwd"))
				c = filepath.Join(cwd, c)
			}
			for _, p := range reads.Paths {
				if lazy.Related(p, c) {
					w.Path, w.Via = c, "creates"
					break
				}
			}
		}
		return w, true
	}
	var managed []string
	for _, p := range s.Properties {
		if p.Namespace != resources.NamespacePath && p.Shares != resources.NamespacePath {
			continue
		}
		if !p.Identity && !p.NameProperty && p.Shares == "" {
			continue
		}
		if v, ok := stringOf(desiredValue(r, p.Name)); ok {
			managed = append(managed, v)
		}
	}
	if len(managed) == 0 {
		w.Unbounded = true
		return w, true
	}
	for _, m := range managed {
		for _, p := range reads.Paths {
			if lazy.Related(p, m) {
				w.Path, w.Via = m, "path"
				return w, true
			}
		}
	}
	if !reads.Complete {
		w.Path, w.Via = managed[0], "path"
		return w, true
	}
	return w, false
}

func desiredValue(r *Resource, name string) cty.Value {
	if v, ok := r.Desired[name]; ok {
		return v.Value
	}
	return cty.NilVal
}

// GuardReads is what a guard reads, as far as toque can tell: an
// expression's host-reading calls and the paths it names; a command's
// absolute paths and working directory.
func GuardReads(s *guard.Spec) lazy.Reads {
	if s == nil {
		return lazy.Reads{}
	}
	if s.Form == guard.Expression {
		if s.Lazy != nil {
			return s.Lazy.Reads()
		}
		return lazy.Reads{Complete: true} // its value is in the plan
	}
	cwd := ""
	if v, ok := s.Values["cwd"]; ok {
		cwd, _ = stringOf(v.Value)
	}
	return lazy.CommandReads(s.Source, cwd)
}

// earlierFor lists the resources and notified runs that converge before
// r, which is one of p's resources or the NotifiedView of one of its
// notified runs (nr, nil for a resource): the resources before it, the
// notified runs in their turns, and, for a notified run, its notifiers.
func (p *Plan) earlierFor(r *Resource, nr *NotifiedRun) []*Resource {
	es := p.earlierEntries(r, nr)
	out := make([]*Resource, len(es))
	for i, e := range es {
		out[i] = e.view
	}
	return out
}

// entry is a resource of a plan (run nil), or the view of one of its
// notified runs (run).
type entry struct {
	view *Resource
	run  *NotifiedRun
}

// earlierEntries is earlierFor, keeping which entries are notified runs.
func (p *Plan) earlierEntries(r *Resource, nr *NotifiedRun) []entry {
	slot := len(p.Resources)
	if nr != nil {
		slot = min(nr.Slot+1, len(p.Resources))
	} else {
		for i, x := range p.Resources {
			if x == r || (x.Address == r.Address) {
				slot = i
				break
			}
		}
	}
	out := make([]entry, 0, slot)
	for i := 0; i < slot; i++ {
		if p.Resources[i].Address != r.Address {
			out = append(out, entry{view: p.Resources[i]})
		}
	}
	for _, other := range p.NotifiedRuns {
		if other == nr || other.Address == r.Address || !other.HasWork() {
			continue
		}
		if other.Slot < slot || (nr == nil && other.Slot == slot && other.Before) {
			out = append(out, entry{view: p.NotifiedView(other), run: other})
		}
	}
	return out
}

// DeferredWhy lists, for r (a resource of p, or the view of notified run
// nr), the earlier resources that could change what the value known at
// apply e reads: why it waits for apply.
func (p *Plan) DeferredWhy(reg *resources.Registry, r *Resource, nr *NotifiedRun, reads lazy.Reads) []Writer {
	return Writers(reg, p.earlierFor(r, nr), reads)
}

// sortedLazy is r's lazy properties in schema order when reg knows the
// type, else by name.
func sortedLazy(reg *resources.Registry, r *Resource) []string {
	names := slices.Sorted(maps.Keys(r.Lazy))
	if reg == nil {
		return names
	}
	t, ok := reg.Lookup(r.Type)
	if !ok {
		return names
	}
	rank := map[string]int{}
	for i, p := range t.Schema().Properties {
		rank[p.Name] = i
	}
	sort.SliceStable(names, func(i, j int) bool {
		ri, iok := rank[names[i]]
		rj, jok := rank[names[j]]
		if iok != jok {
			return iok
		}
		return ri < rj
	})
	return names
}
