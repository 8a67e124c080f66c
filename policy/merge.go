package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/config"
)

// merge combines the included locks (in declaration order) and the
// policy's own run list, cookbooks and attributes into one lock. Conflicts
// are never resolved: every one is reported, naming both sides.
func merge(p *Policy, own []*ownCookbook, incs []*included) (*Lock, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	lock := &Lock{
		Name:               p.Name,
		CookbookLocks:      map[string]*CookbookLock{},
		DefaultAttributes:  map[string]any{},
		OverrideAttributes: map[string]any{},
		ToqueLockVersion:   LockVersion,
	}

	// Include loops: an included lock that is this policy, or that
	// (through its own recorded includes) includes it.
	// A looping include is left out of the merge: the loop is the error.
	var kept []*included
	for _, inc := range incs {
		chain := []string{p.Name}
		c := findLoop(p.Name, inc.lock.Name, inc.lock.IncludedPolicyLocks, chain)
		if c == nil {
			kept = append(kept, inc)
		} else {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Include loop",
				Detail: fmt.Sprintf("The policy %q includes itself: %s. The include is %s. Remove the include that closes the loop.",
					p.Name, strings.Join(c, " → "), inc.origin()),
				Subject: inc.spec.DeclRange.Ptr(),
			})
		}
	}
	incs = kept

	// Run list: included first, then our own; normalised, first wins.
	seenItem := map[string]bool{}
	addItem := func(s string) {
		if !seenItem[s] {
			seenItem[s] = true
			lock.RunList = append(lock.RunList, s)
		}
	}
	for _, inc := range incs {
		for _, s := range inc.lock.RunList {
			item, err := config.ParseRunListItem(s)
			if err != nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid run list in an included lock",
					Detail:   fmt.Sprintf("%s: %s.", inc.origin(), err),
					Subject:  inc.spec.DeclRange.Ptr(),
				})
				continue
			}
			addItem(item.String())
		}
	}
	for _, e := range p.RunList {
		addItem(e.Item.String())
	}

	// Cookbooks: included ones merge when identifier and version agree.
	type cbEntry struct {
		lock   *CookbookLock
		origin string
		inc    *included
	}
	cbs := map[string]*cbEntry{}
	for _, inc := range incs {
		names := slices.Sorted(maps.Keys(inc.lock.CookbookLocks))
		for _, n := range names {
			cl := inc.lock.CookbookLocks[n]
			if first, ok := cbs[n]; ok {
				if first.lock.Identifier != cl.Identifier || first.lock.Version != cl.Version {
					diags = diags.Append(&hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Conflicting cookbook locks",
						Detail: fmt.Sprintf("The cookbook %q is locked at %s by %s, and at %s by %s. toque does not pick one: make the included policies agree on %s, or include only one of them.",
							n, cbVersion(first.lock), first.origin, cbVersion(cl), inc.origin(), n),
						Subject: inc.spec.DeclRange.Ptr(),
					})
				}
				continue
			}
			src, err := inc.loc.rewrite(n, cl.SourceOptions)
			if err != nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unusable cookbook source in an included lock",
					Detail:   fmt.Sprintf("The cookbook %q of %s cannot be located from %s: %s.", n, inc.origin(), inc.loc, err),
					Subject:  inc.spec.DeclRange.Ptr(),
				})
				continue
			}
			c := &CookbookLock{
				Version:                 cl.Version,
				Identifier:              cl.Identifier,
				DottedDecimalIdentifier: dottedDecimal(cl.Identifier),
				SourceOptions:           src,
				Source:                  describeSource(src),
				Origin:                  fmt.Sprintf("include %q", inc.spec.Name),
			}
			cbs[n] = &cbEntry{lock: c, origin: inc.origin(), inc: inc}
		}
	}
	for _, oc := range own {
		n := oc.spec.Name
		origin := fmt.Sprintf("%s:%d", PolicyFileName, oc.spec.DeclRange.Start.Line)
		if first, ok := cbs[n]; ok {
			if first.lock.Identifier != oc.lock.Identifier || first.lock.Version != oc.lock.Version {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Cookbook shadows an included one",
					Detail: fmt.Sprintf("%s declares the cookbook %q at %s, but %s locks it at %s. An including policy cannot replace an included policy's cookbook: remove the cookbook block, or update the included policy to the same cookbook.",
						origin, n, cbVersion(oc.lock), first.origin, cbVersion(first.lock)),
					Subject: oc.spec.DeclRange.Ptr(),
				})
				continue
			}
		}
		cbs[n] = &cbEntry{lock: oc.lock, origin: origin}
	}
	for n, e := range cbs {
		lock.CookbookLocks[n] = e.lock
	}
	// Every run-list cookbook must be locked.
	for _, e := range p.RunList {
		if _, ok := cbs[e.Item.Cookbook]; !ok {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Run-list cookbook not declared",
				Detail:   fmt.Sprintf("The run list names %s, but no cookbook block or included policy provides the cookbook %q. Add cookbook %q { path = \"…\" }.", e.Item, e.Item.Cookbook, e.Item.Cookbook),
				Subject:  e.Range.Ptr(),
			})
		}
	}

	// Attributes, per level: included first, then our own.
	for _, level := range []string{config.LevelDefault, config.LevelOverride} {
		m := &attrMerge{level: level, origins: map[string]*AttributeOrigin{}}
		dst := lock.DefaultAttributes
		if level == config.LevelOverride {
			dst = lock.OverrideAttributes
		}
		for _, inc := range incs {
			src := inc.lock.DefaultAttributes
			if level == config.LevelOverride {
				src = inc.lock.OverrideAttributes
			}
			inc := inc
			m.merge(dst, src, nil, func(path []string) *AttributeOrigin {
				return &AttributeOrigin{Level: level, Path: path, Include: inc.spec.Name, Revision: inc.lock.RevisionID, File: PolicyFileName, Line: inc.spec.DeclRange.Start.Line}
			}, func([]string) hcl.Range { return inc.spec.DeclRange })
		}
		m.merge(dst, p.Attributes[level], nil, func(path []string) *AttributeOrigin {
			return &AttributeOrigin{Level: level, Path: path, File: PolicyFileName, Line: p.AttributeRange(level, path).Start.Line}
		}, func(path []string) hcl.Range { return p.AttributeRange(level, path) })
		diags = append(diags, m.diags...)
		for _, k := range slices.Sorted(maps.Keys(m.origins)) {
			lock.AttributeOrigins = append(lock.AttributeOrigins, m.origins[k])
		}
	}

	for _, inc := range incs {
		lock.IncludedPolicyLocks = append(lock.IncludedPolicyLocks, &IncludedLock{
			Name:                inc.spec.Name,
			PolicyName:          inc.lock.Name,
			RevisionID:          inc.lock.RevisionID,
			SourceOptions:       inc.source,
			IncludedPolicyLocks: inc.lock.IncludedPolicyLocks,
		})
	}
	if lock.RunList == nil {
		lock.RunList = []string{}
	}
	lock.RevisionID = lock.ComputeRevisionID()
	return lock, diags
}

// findLoop walks the include records below name and returns the chain that
// leads back to self, or nil.
func findLoop(self, name string, below []*IncludedLock, chain []string) []string {
	chain = append(append([]string(nil), chain...), name)
	if name == self {
		return chain
	}
	if len(chain) > 64 {
		return nil
	}
	for _, b := range below {
		if b == nil {
			continue
		}
		if c := findLoop(self, b.PolicyName, b.IncludedPolicyLocks, chain); c != nil {
			return c
		}
	}
	return nil
}

func cbVersion(c *CookbookLock) string {
	return fmt.Sprintf("%s (identifier %s)", c.Version, short(c.Identifier))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// attrMerge deep-merges attribute trees of one level, recording where each
// leaf came from and every conflict.
type attrMerge struct {
	level   string
	origins map[string]*AttributeOrigin // by pathKey: leaves and empty maps
	diags   hcl.Diagnostics
}

func (m *attrMerge) merge(dst, src map[string]any, path []string, origin func([]string) *AttributeOrigin, subject func([]string) hcl.Range) {
	for _, k := range slices.Sorted(maps.Keys(src)) {
		sv := src[k]
		p := append(append([]string(nil), path...), k)
		dv, exists := dst[k]
		if !exists {
			dst[k] = deepCopy(sv)
			m.record(p, sv, origin)
			continue
		}
		dm, dIsMap := dv.(map[string]any)
		sm, sIsMap := sv.(map[string]any)
		switch {
		case dIsMap && sIsMap:
			if len(dm) == 0 {
				delete(m.origins, pathKey(p))
			}
			m.merge(dm, sm, p, origin, subject)
		case !dIsMap && !sIsMap && canonical(dv) == canonical(sv):
			// The same value twice is no conflict; the first origin stays.
		default:
			first := m.firstOrigin(p)
			second := origin(p)
			rng := subject(p)
			d := &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Conflicting attribute values",
				Detail: fmt.Sprintf("The %s attribute %s is %s from %s, and %s from %s. toque does not merge or pick conflicting values: set it in one policy only.",
					m.level, strings.Join(p, "."), describeValue(dv), first, describeValue(sv), second),
			}
			if rng.Filename != "" {
				d.Subject = rng.Ptr()
			}
			m.diags = m.diags.Append(d)
		}
	}
}

func (m *attrMerge) record(p []string, v any, origin func([]string) *AttributeOrigin) {
	if mv, ok := v.(map[string]any); ok && len(mv) > 0 {
		for _, k := range slices.Sorted(maps.Keys(mv)) {
			m.record(append(append([]string(nil), p...), k), mv[k], origin)
		}
		return
	}
	m.origins[pathKey(p)] = origin(p)
}

// firstOrigin is the origin of the leaf at p, or of the first leaf below.
func (m *attrMerge) firstOrigin(p []string) string {
	if o, ok := m.origins[pathKey(p)]; ok {
		return o.String()
	}
	prefix := pathKey(p) + "\x00"
	for _, k := range slices.Sorted(maps.Keys(m.origins)) {
		if strings.HasPrefix(k, prefix) {
			return m.origins[k].String()
		}
	}
	return "an earlier write"
}

func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func describeValue(v any) string {
	if m, ok := v.(map[string]any); ok {
		keys := slices.Sorted(maps.Keys(m))
		if len(keys) > 4 {
			keys = append(keys[:4], "…")
		}
		return fmt.Sprintf("a map (keys %s)", strings.Join(keys, ", "))
	}
	s := canonical(v)
	if len(s) > 80 {
		s = s[:77] + "…"
	}
	return s
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
