package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
)

// ownLocal reports whether the input in is a cookbook policy.hcl itself
// reads from a local path (not one an included lock brings): the kind
// `toque update NAME` locks again.
func ownLocal(l *Lock, in *Input) bool {
	if in == nil || in.Kind != "cookbook" {
		return false
	}
	cl := l.CookbookLocks[in.Name]
	return cl != nil && cl.SourceOptions.Path != "" && strings.HasPrefix(cl.Origin, PolicyFileName+":")
}

// editedLocal returns the names of the changes when every one is a local
// cookbook of policy.hcl whose content changed (and can be read): what
// `toque update NAMES…`, or plan -update-local, fixes. ok is false when
// anything else changed too.
func editedLocal(l *Lock, changes []Change) (names []string, ok bool) {
	for _, c := range changes {
		if c.Err != nil || !ownLocal(l, c.Input) {
			return nil, false
		}
		names = append(names, c.Input.Name)
	}
	sort.Strings(names)
	return names, len(names) > 0
}

// staleDiag says why l is stale and what to run. When only local
// cookbooks were edited, it is one line naming them and the update that
// locks them again.
func staleDiag(l *Lock, changes []Change) *hcl.Diagnostic {
	if names, ok := editedLocal(l, changes); ok {
		what := "Cookbook " + names[0] + " was"
		if len(names) > 1 {
			what = "Cookbooks " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " were"
		}
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "The policy lock is stale",
			Detail: fmt.Sprintf("%s edited since the lock was written: run toque update %s, or plan -update-local.",
				what, strings.Join(names, " ")),
		}
	}
	var lines []string
	for _, c := range changes {
		line := "  - " + c.String()
		if c.Err == nil && c.Input != nil && c.Input.Kind == "cookbook" && !ownLocal(l, c.Input) {
			line += " (an included policy brings it: run toque install where that policy lives first)"
		}
		lines = append(lines, line)
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "The policy lock is stale",
		Detail: fmt.Sprintf("%s is older than its inputs:\n%s\nRun toque install to resolve the policy again (toque update to also move pinned sources), then plan.",
			LockFileName, strings.Join(lines, "\n")),
	}
}

// UpdateLocal locks again, before a plan, the cookbooks policy.hcl reads
// from local paths whose content changed since the lock was written — what
// `toque update NAME…` does for them, pins of every other source kept —
// when nothing else makes the lock stale. It returns the names it locked
// again (none when the lock is missing, up to date, or stale for another
// reason: planning then says why) and what Install did.
func (w *Workspace) UpdateLocal(ctx context.Context) ([]string, *InstallResult, hcl.Diagnostics) {
	if _, err := os.Stat(w.LockPath()); err != nil {
		return nil, nil, nil
	}
	l, _, err := ReadLock(w.LockPath())
	if err != nil {
		return nil, nil, nil
	}
	names, ok := editedLocal(l, w.StaleInputs(l))
	if !ok {
		return nil, nil, nil
	}
	res, diags := w.Install(ctx, InstallOptions{Update: true, Names: names})
	return names, res, diags
}

// LocalCookbookDirs lists the directories of the cookbooks dir's
// policy.hcl reads from local paths (cookbook blocks with a path and no
// git), for the tools that edit them (fmt): leniently, as far as the file
// parses, and nothing when it does not. Included policies' cookbooks are
// not listed: they are another policy's.
func LocalCookbookDirs(dir string) []string {
	src, err := os.ReadFile(filepath.Join(dir, PolicyFileName))
	if err != nil {
		return nil
	}
	f, diags := config.Parse(src, filepath.Join(dir, PolicyFileName))
	if f == nil || diags.HasErrors() {
		return nil
	}
	content, _, _ := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "cookbook", LabelNames: []string{"name"}}}})
	var out []string
	for _, b := range content.Blocks {
		attrs, _ := b.Body.JustAttributes()
		if attrs["git"] != nil || attrs["path"] == nil {
			continue
		}
		v, d := attrs["path"].Expr.Value(nil)
		if d.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			continue
		}
		p := filepath.FromSlash(v.AsString())
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}
