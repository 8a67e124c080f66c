package planner

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/resources"
)

// foresee is the planner's pass over the predicted host
// (resources.Foresight): what the steps with work provide with a
// prediction (the paths and units a package's .debs ship), in plan order.
// When there is any, it
//
//   - refuses two steps that ship one path that is not a directory (dpkg
//     would refuse the second), and a resource that manages a path a
//     later step ships (the package would overwrite it, or keep it as a
//     changed configuration file): each error names both;
//   - plans again, from the view of the steps before it, every resource
//     whose type reads predictions (resources.Foreseer) and whose thing an
//     earlier step predicts: a template over a package's configuration
//     file is then planned from the file the package ships, a service
//     from the unit it ships;
//   - says, in the reason of each step with work whose need an earlier
//     prediction meets, where it comes from ("/etc/nginx: created by
//     package[nginx] (nginx-common 1.22.1-9+deb12u9)").
//
// results are updated in place; the Foresight is returned (nil when
// nothing predicts anything) for the notified runs, which see all of it.
func (p *Planner) foresee(ctx context.Context, logger hclog.Logger, order []*eval.Instance, results map[*eval.Instance]outcome, current func(*eval.Instance) *eval.Instance, salt string) (*resources.Foresight, hcl.Diagnostics) {
	fs := resources.NewForesight()
	for i, inst := range order {
		for _, st := range results[inst].steps {
			if st.Kind.IsWork() {
				for _, n := range st.Provides {
					fs.Add(i, n)
				}
			}
		}
	}
	if fs.Empty() {
		return nil, nil
	}
	diags := shippedTwice(fs, order)
	reads := resources.NewReads()
	defer reads.Close()
	pre := p.preloadForeseen(resources.WithReads(ctx, reads), logger, fs, order, results, current)
	for i, inst := range order {
		o, ok := results[inst]
		if !ok || o.res == nil {
			continue
		}
		diags = append(diags, overwrittenLater(fs, order, i, current(inst))...)
		view := fs.Before(i)
		var itself string // where the resource's own thing comes from
		if f, ok := inst.Type.(resources.Foreseer); ok && inst.Resource != nil && o.res.Kind != resources.Skip && inst.Resource.Action != "nothing" {
			if n, pred := resources.ForeseenBy(view, f.Foresees(current(inst).Resource)); n != nil {
				absent := o.res.Current != nil && !o.res.Current.Exists
				logger.Debug("planning again from what an earlier step predicts", "resource", o.res.Address, "thing", n.Value)
				res, steps, d := p.planOne(resources.WithForesight(ctx, view), logger, current(inst), salt, pre[current(inst)])
				o = outcome{res, steps, d}
				if res != nil && inst.Parent != nil {
					res.Parent, res.ParentStep = inst.Parent.Address(), inst.ParentStep
				}
				results[inst] = o
				if res != nil && absent && res.Current != nil && res.Current.Exists && n.Namespace == resources.NamespacePath {
					// The host lacks it; the plan read it from the
					// step that makes it.
					verb := "created"
					if pred.Fact("package") != "" && pred.Fact("kind") != "directory" {
						verb = "shipped"
					}
					itself = fmt.Sprintf("%s: %s by %s", n.Value, verb, pred.By)
				}
			}
		}
		if o.res != nil {
			o.res.Provided = providedWords(view, o.steps)
			if itself != "" {
				o.res.Provided = append([]string{itself}, o.res.Provided...)
			}
		}
	}
	return fs, diags
}

// preloadForeseen reads again, together, the resources of a type that
// reads in batches shared with others (resources.BatchSharer: the file
// editors) whose thing an earlier step predicts, one batch per thing,
// through the view of the first of them: the editors of a configuration
// file a package ships are planned, each on what those before it leave,
// from the file the package ships. (Read one by one, each would be
// planned on the shipped file alone.)
func (p *Planner) preloadForeseen(ctx context.Context, logger hclog.Logger, fs *resources.Foresight, order []*eval.Instance, results map[*eval.Instance]outcome, current func(*eval.Instance) *eval.Instance) map[*eval.Instance]*resources.State {
	groups := map[string][]int{}
	var keys []string
	for i, inst := range order {
		o, ok := results[inst]
		if !ok || o.res == nil || o.res.Kind == resources.Skip || inst.Resource == nil || inst.Resource.Action == "nothing" {
			continue
		}
		f, ok := inst.Type.(resources.Foreseer)
		if _, shares := inst.Type.(resources.BatchSharer); !ok || !shares {
			continue
		}
		n, _ := resources.ForeseenBy(fs.Before(i), f.Foresees(current(inst).Resource))
		if n == nil {
			continue
		}
		k := needKey(*n)
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := map[*eval.Instance]*resources.State{}
	for _, k := range keys {
		idx := groups[k]
		insts := make([]*eval.Instance, len(idx))
		for j, i := range idx {
			insts[j] = current(order[i])
		}
		for inst, st := range p.preload(resources.WithForesight(ctx, fs.Before(idx[0])), logger, insts) {
			out[inst] = st
		}
	}
	return out
}

// providedWords says where the needs of steps that earlier predictions
// meet come from: "/etc/nginx: created by package[nginx]
// (nginx-common 1.22.1-9+deb12u9)"; none when no prediction meets one.
func providedWords(view *resources.Foresight, steps []*resources.Step) []string {
	var ws []string
	seen := map[string]bool{}
	for _, st := range steps {
		if !st.Kind.IsWork() {
			continue
		}
		for _, n := range st.Needs {
			p := view.Lookup(n.Namespace, n.Value)
			if p == nil || seen[needKey(n)] {
				continue
			}
			seen[needKey(n)] = true
			what := n.Value
			if n.Namespace != resources.NamespacePath {
				what = n.What + " " + n.Value
			}
			ws = append(ws, fmt.Sprintf("%s: created by %s", what, p.By))
		}
	}
	return ws
}

// shippedTwice refuses each path (not a directory) that two steps predict,
// unless one's package replaces the other's (Debian's Replaces, which lets
// dpkg move the file), or diverts the path (its preinst's dpkg-divert
// moves the other's file aside).
func shippedTwice(fs *resources.Foresight, order []*eval.Instance) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, k := range fs.Keys() {
		if k.Namespace != resources.NamespacePath {
			continue
		}
		ps := fs.Providers(k.Namespace, k.Value)
		if len(ps) < 2 {
			continue
		}
		for a := 0; a < len(ps); a++ {
			for b := a + 1; b < len(ps); b++ {
				pa, pb := ps[a].Need.Prediction, ps[b].Need.Prediction
				if pa.Fact("kind") == "directory" && pb.Fact("kind") == "directory" {
					continue
				}
				if pa.Fact("package") == "" || pb.Fact("package") == "" {
					continue // not two packages (the keys of one sysctl conf_file)
				}
				if pa.By == pb.By || pa.Fact("package") == pb.Fact("package") || replaces(pa, pb) || replaces(pb, pa) ||
					pa.Fact("diverts") == "yes" || pb.Fact("diverts") == "yes" {
					continue
				}
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Two packages ship one path",
					Detail: fmt.Sprintf("%s ships %s, and so does %s: dpkg refuses to install a package that overwrites another's file (neither declares Replaces for the other). Install only one of them, or check the package names.",
						pa.By, k.Value, pb.By),
					Subject: declRange(order[ps[b].Pos]),
				})
			}
		}
	}
	return diags
}

// replaces reports whether a's package declares Replaces of b's.
func replaces(a, b *resources.Prediction) bool {
	pkg := b.Fact("package")
	if pkg == "" {
		return false
	}
	for _, r := range strings.Fields(a.Fact("replaces")) {
		if r == pkg {
			return true
		}
	}
	return false
}

// overwrittenLater refuses inst, at position i, when it manages a path
// (an identity property of the path namespace) that a later step ships
// as anything but a directory: the package would replace what inst
// wrote, or keep it as a changed configuration file, and the plan could
// not say which it ends with.
func overwrittenLater(fs *resources.Foresight, order []*eval.Instance, i int, inst *eval.Instance) hcl.Diagnostics {
	if inst == nil || inst.Resource == nil || inst.Resource.Action == "nothing" {
		return nil
	}
	var diags hcl.Diagnostics
	for _, path := range managedPaths(inst.Resource) {
		for _, pr := range fs.Providers(resources.NamespacePath, path) {
			if pr.Pos <= i || pr.Need.Prediction.Fact("kind") == "directory" {
				continue
			}
			what, summary, who := "ships it", "A later package overwrites a managed path", "the package"
			if pr.Need.Prediction.Fact("conffile") == "yes" {
				what = "ships it as a configuration file (dpkg then keeps the file as changed, or asks)"
			}
			if pr.Need.Prediction.Fact("package") == "" {
				what, summary, who = "writes it", "A later resource rewrites a managed path", "it"
			}
			addr := instAddress(inst)
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  summary,
				Detail: fmt.Sprintf("%s manages %s, and %s, declared after it, %s: %s would replace what %s writes. Resources converge in the order they are declared: declare %s after %s, so that it changes the file %s leaves.",
					addr, path, pr.Need.Prediction.By, what, who, addr, addr, instAddress(order[pr.Pos]), who),
				Subject: declRange(inst),
			})
			break
		}
	}
	return diags
}

// managedPaths are the values of r's identity properties of the path
// namespace (a file's path).
func managedPaths(r *resources.Resource) []string {
	var out []string
	for _, n := range r.Things() {
		if n.Namespace == resources.NamespacePath {
			out = append(out, n.Value)
		}
	}
	sort.Strings(out)
	return out
}
