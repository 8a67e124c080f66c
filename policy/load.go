package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/config"
)

// Change is one input that differs from what the lock recorded.
type Change struct {
	Input *Input
	// Now is the digest now; empty when the input is gone.
	Now string
	Err error
}

func (c Change) String() string {
	what := c.Input.Path
	switch c.Input.Kind {
	case "cookbook":
		what = fmt.Sprintf("the cookbook %q (%s)", c.Input.Name, c.Input.Path)
	case "include":
		what = fmt.Sprintf("the lock included as %q (%s)", c.Input.Name, c.Input.Path)
	}
	if c.Err != nil {
		return fmt.Sprintf("%s cannot be read: %s", what, c.Err)
	}
	return what + " changed"
}

// StaleInputs compares the lock's recorded inputs with the files now and
// lists every difference. A lock without inputs (one made elsewhere, or
// exported) has nothing to compare but policy.hcl when there is one.
func (w *Workspace) StaleInputs(l *Lock) []Change {
	var out []Change
	for _, in := range l.Inputs {
		if in == nil {
			continue
		}
		p := filepath.FromSlash(in.Path)
		if !filepath.IsAbs(p) {
			p = filepath.Join(w.Dir, p)
		}
		var now string
		var err error
		switch in.Kind {
		case "cookbook":
			now, err = CookbookIdentifier(p)
		default:
			var b []byte
			b, err = os.ReadFile(p)
			now = digestOf(b)
		}
		if err != nil {
			out = append(out, Change{Input: in, Err: err})
			continue
		}
		if now != in.Digest {
			out = append(out, Change{Input: in, Now: now})
		}
	}
	return out
}

// LoadLock reads the workspace's lock for planning: it refuses a missing
// or stale lock, makes every run-list cookbook available (fetching into
// the cache what is missing), and returns what config.LoadPolicy needs.
func (w *Workspace) LoadLock(ctx context.Context) (*Lock, config.PolicyInput, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	in := config.PolicyInput{Dir: w.Dir}
	l, _, err := ReadLock(w.LockPath())
	if err != nil {
		if os.IsNotExist(err) {
			return nil, in, diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "No policy lock",
				Detail:   fmt.Sprintf("%s holds policy.hcl but no %s. Run toque install to resolve the policy into a lock; plan and apply run from the lock.", w.Dir, LockFileName),
			})
		}
		return nil, in, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot read the policy lock",
			Detail:   fmt.Sprintf("%s. Run toque install to write it again.", err),
		})
	}
	w.trustIncludes(l)
	if changes := w.StaleInputs(l); len(changes) > 0 {
		return nil, in, diags.Append(staleDiag(l, changes))
	}

	seen := map[string]bool{}
	for _, s := range l.RunList {
		item, err := config.ParseRunListItem(s)
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid run list in the lock", Detail: err.Error() + "."})
			continue
		}
		in.RunList = append(in.RunList, item)
		if seen[item.Cookbook] {
			continue
		}
		seen[item.Cookbook] = true
		cl := l.CookbookLocks[item.Cookbook]
		if cl == nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Run-list cookbook not locked",
				Detail:   fmt.Sprintf("The lock's run list names %s, but it locks no cookbook %q. Run toque install.", item, item.Cookbook),
			})
			continue
		}
		dir, err := w.store.cookbookDir(ctx, w.Dir, item.Cookbook, cl)
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot get a locked cookbook",
				Detail:   fmt.Sprintf("The cookbook %q (%s): %s.", item.Cookbook, describeSource(cl.SourceOptions), err),
			})
			continue
		}
		cb, d := config.ReadCookbook(dir, w.Parser)
		diags = append(diags, d...)
		if cb == nil {
			continue
		}
		if cb.Name != item.Cookbook || cb.Version != cl.Version {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Locked cookbook differs",
				Detail:   fmt.Sprintf("The lock records %s %s, but %s holds %s %s. Run toque install.", item.Cookbook, cl.Version, dir, cb.Name, cb.Version),
			})
			continue
		}
		in.Cookbooks = append(in.Cookbooks, cb)
	}

	writes, err := w.attributeWrites(l)
	if err != nil {
		diags = diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid attributes in the lock", Detail: err.Error() + "."})
	}
	in.Writes = writes
	return l, in, diags
}

// attributeWrites turns the lock's attributes into writes, leaf by leaf,
// each with its origin as the range.
func (w *Workspace) attributeWrites(l *Lock) ([]config.AttributeWrite, error) {
	origins := map[string]*AttributeOrigin{}
	for _, o := range l.AttributeOrigins {
		if o != nil {
			origins[o.Level+"\x01"+pathKey(o.Path)] = o
		}
	}
	lockFile := w.LockPath()
	var out []config.AttributeWrite
	var firstErr error
	var walk func(level string, m map[string]any, path []string)
	walk = func(level string, m map[string]any, path []string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			p := append(append([]string(nil), path...), k)
			v := m[k]
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(level, sub, p)
				continue
			}
			cv, err := jsonToCty(v)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s attribute %s: %w", level, strings.Join(p, "."), err)
				}
				continue
			}
			rng := hcl.Range{Filename: lockFile, Start: hcl.Pos{Line: 1, Column: 1}}
			origin := ""
			if o := origins[level+"\x01"+pathKey(p)]; o != nil && o.File != "" {
				rng = hcl.Range{Filename: filepath.Join(w.Dir, o.File), Start: hcl.Pos{Line: o.Line, Column: 1}}
				if o.Include != "" {
					origin = fmt.Sprintf("include_policy %q (revision %s)", o.Include, short(o.Revision))
				}
			}
			rng.End = rng.Start
			out = append(out, config.AttributeWrite{Level: level, Path: p, Value: cv, Range: rng, Origin: origin})
		}
	}
	walk(config.LevelDefault, l.DefaultAttributes, nil)
	walk(config.LevelOverride, l.OverrideAttributes, nil)
	return out, firstErr
}

func jsonToCty(v any) (cty.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return cty.NilVal, err
	}
	t, err := ctyjson.ImpliedType(b)
	if err != nil {
		return cty.NilVal, err
	}
	return ctyjson.Unmarshal(b, t)
}
