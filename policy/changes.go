package policy

import (
	"maps"
	"slices"
	"strings"
)

// ChangeKind says how one thing differs between two locks.
type ChangeKind string

const (
	Added   ChangeKind = "added"
	Removed ChangeKind = "removed"
	Changed ChangeKind = "changed"
)

// LockChanges is what moved from one lock to the next: what an install or
// update changed. It is data; command/ renders it.
type LockChanges struct {
	// OldRevision is the previous lock's revision id, "" when there was no
	// (readable) lock; NewRevision the new one's.
	OldRevision, NewRevision string
	// RunList is set when the run list changed.
	RunList *RunListChange
	// Cookbooks, Includes and Attributes are sorted by name or path.
	Cookbooks  []CookbookChange
	Includes   []IncludeChange
	Attributes []AttributeChange
}

// RunListChange is the run list before and after.
type RunListChange struct {
	Old, New []string
}

// CookbookChange is one cookbook added, removed, or changed (its
// identifier, version or source). Old is nil when added, New when removed.
type CookbookChange struct {
	Name     string
	Kind     ChangeKind
	Old, New *CookbookLock
}

// IncludeChange is one include added, removed, or re-pinned (its revision
// or its source and pin). Old is nil when added, New when removed.
type IncludeChange struct {
	Name     string
	Kind     ChangeKind
	Old, New *IncludedLock
}

// AttributeChange is one attribute leaf (an empty map counts as a leaf)
// added, removed or changed at a level. Values are JSON-shaped (what the
// lock holds); Old is nil when added, New when removed.
type AttributeChange struct {
	Level    string
	Path     []string
	Kind     ChangeKind
	Old, New any
}

// Empty reports whether nothing the lock pins moved: same revision, run
// list, cookbooks, includes and attributes. (The recorded inputs may
// still differ: see InstallResult.Written.)
func (c *LockChanges) Empty() bool {
	return c.OldRevision == c.NewRevision && c.RunList == nil && len(c.Cookbooks) == 0 && len(c.Includes) == 0 && len(c.Attributes) == 0
}

// DiffLocks lists what differs from old (nil: no lock before) to new.
func DiffLocks(old, new *Lock) *LockChanges {
	if old == nil {
		old = &Lock{}
	}
	c := &LockChanges{OldRevision: old.RevisionID, NewRevision: new.RevisionID}
	if strings.Join(old.RunList, "\x00") != strings.Join(new.RunList, "\x00") {
		c.RunList = &RunListChange{Old: old.RunList, New: new.RunList}
	}
	names := map[string]bool{}
	for n := range old.CookbookLocks {
		names[n] = true
	}
	for n := range new.CookbookLocks {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		o, nw := old.CookbookLocks[n], new.CookbookLocks[n]
		switch {
		case o == nil:
			c.Cookbooks = append(c.Cookbooks, CookbookChange{Name: n, Kind: Added, New: nw})
		case nw == nil:
			c.Cookbooks = append(c.Cookbooks, CookbookChange{Name: n, Kind: Removed, Old: o})
		case o.Identifier != nw.Identifier || o.Version != nw.Version || o.SourceOptions != nw.SourceOptions:
			c.Cookbooks = append(c.Cookbooks, CookbookChange{Name: n, Kind: Changed, Old: o, New: nw})
		}
	}
	oldInc, newInc := includesByName(old), includesByName(new)
	names = map[string]bool{}
	for n := range oldInc {
		names[n] = true
	}
	for n := range newInc {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		o, nw := oldInc[n], newInc[n]
		switch {
		case o == nil:
			c.Includes = append(c.Includes, IncludeChange{Name: n, Kind: Added, New: nw})
		case nw == nil:
			c.Includes = append(c.Includes, IncludeChange{Name: n, Kind: Removed, Old: o})
		case o.RevisionID != nw.RevisionID || o.PolicyName != nw.PolicyName || o.SourceOptions != nw.SourceOptions:
			c.Includes = append(c.Includes, IncludeChange{Name: n, Kind: Changed, Old: o, New: nw})
		}
	}
	for _, level := range []struct {
		name     string
		old, new map[string]any
	}{{"default", old.DefaultAttributes, new.DefaultAttributes}, {"override", old.OverrideAttributes, new.OverrideAttributes}} {
		c.Attributes = append(c.Attributes, diffAttributes(level.name, level.old, level.new)...)
	}
	return c
}

func includesByName(l *Lock) map[string]*IncludedLock {
	out := map[string]*IncludedLock{}
	for _, inc := range l.IncludedPolicyLocks {
		if inc != nil {
			out[inc.Name] = inc
		}
	}
	return out
}

// diffAttributes compares the leaves of two attribute trees of one level.
func diffAttributes(level string, old, new map[string]any) []AttributeChange {
	type leaf struct {
		path []string
		v    any
	}
	flatten := func(m map[string]any) map[string]leaf {
		out := map[string]leaf{}
		var walk func(m map[string]any, path []string)
		walk = func(m map[string]any, path []string) {
			for k, v := range m {
				p := append(append([]string(nil), path...), k)
				if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
					walk(sub, p)
					continue
				}
				out[pathKey(p)] = leaf{p, v}
			}
		}
		walk(m, nil)
		return out
	}
	o, n := flatten(old), flatten(new)
	keys := map[string]bool{}
	for k := range o {
		keys[k] = true
	}
	for k := range n {
		keys[k] = true
	}
	var out []AttributeChange
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		ol, inOld := o[k]
		nl, inNew := n[k]
		switch {
		case !inOld:
			out = append(out, AttributeChange{Level: level, Path: nl.path, Kind: Added, New: nl.v})
		case !inNew:
			out = append(out, AttributeChange{Level: level, Path: ol.path, Kind: Removed, Old: ol.v})
		case canonical(ol.v) != canonical(nl.v):
			out = append(out, AttributeChange{Level: level, Path: nl.path, Kind: Changed, Old: ol.v, New: nl.v})
		}
	}
	return out
}
