package eval

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
)

// Notification is one resolved notification edge: when Notifier changes,
// Target's Action runs at Timing. An edge declared by a subscribes block
// is stored the same way, from the resource it names to the subscriber.
type Notification struct {
	Notifier *config.ResourceBlock
	Target   *config.ResourceBlock
	Action   string
	Timing   string
	// Subscribe is true when the edge was declared by Target's subscribes
	// block rather than Notifier's notifies block.
	Subscribe bool
	// DeclRange is the notifies or subscribes block's header;
	// ResourceRange is its resource attribute.
	DeclRange     hcl.Range
	ResourceRange hcl.Range
}

// String is "NOTIFIER -> TARGET (ACTION, TIMING)".
func (n *Notification) String() string {
	return fmt.Sprintf("%s -> %s (%s, %s)", n.Notifier.Address(), n.Target.Address(), n.Action, n.Timing)
}

// Notifications resolves every notifies and subscribes block of the
// collection into edges, in collection order, and checks them: the
// reference is TYPE[NAME] of a declared resource, the action is one the
// target's type has, the timing is known, a resource does not notify
// itself, and no cycle runs through `before` or `immediately` edges
// (those would never end; `delayed` ones run once each). The resource and
// timing expressions see node, host and the functions; a reference not
// known yet (validate, without the host) is left out unchecked. Blocks
// with for_each or count are not expanded here (Resources does): use
// Resources for the edges of their instances.
func Notifications(c *config.Config, reg *resources.Registry, scope *Scope) ([]*Notification, hcl.Diagnostics) {
	ctxs := map[string]*hcl.EvalContext{}
	ctxOf := func(dir string) *hcl.EvalContext {
		ctx := ctxs[dir]
		if ctx == nil {
			ctx = scope.EvalContext(dir)
			ctxs[dir] = ctx
		}
		return ctx
	}
	return notificationsOf(c.Resources, reg, func(b *config.ResourceBlock) *hcl.EvalContext { return ctxOf(b.Dir) },
		notifyScope{groupCtx: func(g *config.GroupBlock) *hcl.EvalContext { return ctxOf(g.Dir) }})
}

// notifyScope is what resolving references needs besides the blocks.
type notifyScope struct {
	// unexpanded holds the addresses of blocks whose instances are not
	// known yet (validate): a reference to one is not checked.
	unexpanded map[string]bool
	// groupCtx is what a resource group's notifications are evaluated in.
	groupCtx func(*config.GroupBlock) *hcl.EvalContext
	// expands holds, by address, the blocks with for_each or count, of
	// any number of instances (none too): a reference to one names its
	// instances.
	expands map[string]*config.ResourceBlock
}

// notifyBlock is one notifies or subscribes block of a resource (its own,
// one its dynamic blocks generate, or its group's), with what it is
// evaluated in.
type notifyBlock struct {
	nb        *config.NotifyBlock
	subscribe bool
	ctx       *hcl.EvalContext
	// group is set for a block of the resource's group.
	group *config.GroupBlock
}

// notifyBlocks lists b's notifies and subscribes blocks: its own, those
// its dynamic blocks generate (in ctx), then its group's.
func notifyBlocks(b *config.ResourceBlock, ctx *hcl.EvalContext, ns notifyScope, groupBlocks map[*config.GroupBlock][]notifyBlock) ([]notifyBlock, hcl.Diagnostics) {
	var out []notifyBlock
	var diags hcl.Diagnostics
	for _, nb := range b.Meta.Notifies {
		out = append(out, notifyBlock{nb: nb, ctx: ctx})
	}
	for _, nb := range b.Meta.Subscribes {
		out = append(out, notifyBlock{nb: nb, ctx: ctx})
		out[len(out)-1].subscribe = true
	}
	if len(b.Meta.Dynamic) > 0 {
		gen, d := expandDynamicNotify(b.Meta.Dynamic, ctx)
		diags = append(diags, d...)
		out = append(out, gen...)
	}
	if g := b.Group; g != nil && len(g.Notifies)+len(g.Subscribes)+len(g.Dynamic) > 0 {
		gb, seen := groupBlocks[g]
		if !seen {
			gctx := ns.groupCtx(g)
			for _, nb := range g.Notifies {
				gb = append(gb, notifyBlock{nb: nb, ctx: gctx, group: g})
			}
			for _, nb := range g.Subscribes {
				gb = append(gb, notifyBlock{nb: nb, ctx: gctx, group: g, subscribe: true})
			}
			gen, d := expandDynamicNotify(g.Dynamic, gctx)
			diags = append(diags, d...)
			for _, n := range gen {
				n.group = g
				gb = append(gb, n)
			}
			groupBlocks[g] = gb
		}
		out = append(out, gb...)
	}
	return out, diags
}

// notificationsOf resolves the edges of blocks (top-level resources and
// child resources), each block's expressions evaluated in ctxFor(block).
// A child's reference is looked up among its siblings first (the
// resources its parent's action declares), then at the top level, then as
// a full address.
func notificationsOf(blocks []*config.ResourceBlock, reg *resources.Registry, ctxFor func(*config.ResourceBlock) *hcl.EvalContext, ns notifyScope) ([]*Notification, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	hasEdges := false
	for _, b := range blocks {
		if len(b.Meta.Notifies)+len(b.Meta.Subscribes)+len(b.Meta.Dynamic) > 0 ||
			(b.Group != nil && len(b.Group.Notifies)+len(b.Group.Subscribes)+len(b.Group.Dynamic) > 0) {
			hasEdges = true
			break
		}
	}
	if !hasEdges {
		return nil, nil
	}
	idx := newAddrIndex(blocks, ns.unexpanded, ns.expands)
	var edges []*Notification
	seen := map[string]bool{}
	groupBlocks := map[*config.GroupBlock][]notifyBlock{}
	groupDiags := map[*config.GroupBlock]bool{}
	for _, b := range blocks {
		nbs, d := notifyBlocks(b, ctxFor(b), ns, groupBlocks)
		if g := b.Group; g != nil && groupDiags[g] {
			d = nil // (a group's dynamic blocks are reported once)
		} else if g != nil {
			groupDiags[g] = true
		}
		diags = append(diags, d...)
		for _, n := range nbs {
			found, d := resolveNotify(b, n.nb, n.subscribe, idx, reg, n.ctx)
			if n.group != nil {
				// A group's reference is the same for each of its
				// resources: report its errors once.
				if idx.reported[n.nb] {
					d = nil
				}
				if d.HasErrors() {
					idx.reported[n.nb] = true
				}
			}
			diags = append(diags, d...)
			for _, e := range found {
				key := e.String()
				if seen[key] {
					continue
				}
				seen[key] = true
				edges = append(edges, e)
			}
		}
	}
	diags = append(diags, cycles(edges)...)
	return edges, diags
}

// addrIndex finds the resources references name.
type addrIndex struct {
	// byAddr holds every resource by its address (an instance by its
	// own: template[vhost]["a.com"]).
	byAddr map[string]*config.ResourceBlock
	// instances holds, by the address of a block with for_each or count
	// (template[vhost]), its instances, in order: a reference to the
	// block names them all.
	instances map[string][]*config.ResourceBlock
	// expands holds the addresses of blocks with for_each or count,
	// whatever their number of instances (none too).
	expands map[string]*config.ResourceBlock
	// unexpanded are blocks whose instances are not known yet.
	unexpanded map[string]bool
	// reported marks the group blocks whose errors were reported.
	reported map[*config.NotifyBlock]bool
}

func newAddrIndex(blocks []*config.ResourceBlock, unexpanded map[string]bool, expands map[string]*config.ResourceBlock) *addrIndex {
	idx := &addrIndex{
		byAddr:     make(map[string]*config.ResourceBlock, len(blocks)),
		instances:  map[string][]*config.ResourceBlock{},
		expands:    map[string]*config.ResourceBlock{},
		unexpanded: unexpanded,
		reported:   map[*config.NotifyBlock]bool{},
	}
	maps.Copy(idx.expands, expands)
	for _, b := range blocks {
		idx.byAddr[b.Address()] = b
		if b.Meta.Expands() {
			ba := b.BlockAddress()
			idx.expands[ba] = b
			if !b.Key.IsZero() {
				idx.instances[ba] = append(idx.instances[ba], b)
			}
		}
	}
	return idx
}

// lookup finds what ref names, seen from b: one resource, or every
// instance of a block with for_each or count (none for an empty one);
// found is false when it names nothing declared, unchecked true when it
// names instances not known yet (validate).
func (idx *addrIndex) lookup(b *config.ResourceBlock, ref string) (targets []*config.ResourceBlock, found, unchecked bool) {
	var prefixes []string
	if b.Parent != "" {
		// A sibling, declared by the same action of the same resource.
		prefixes = append(prefixes, b.Parent+".")
	}
	prefixes = append(prefixes, "")
	canonical := ""
	if block, key, ok := resources.SplitKey(ref); ok {
		canonical = block + key.String()
	}
	for _, p := range prefixes {
		if t, ok := idx.byAddr[p+ref]; ok {
			return []*config.ResourceBlock{t}, true, false
		}
		if canonical != "" {
			if t, ok := idx.byAddr[p+canonical]; ok {
				return []*config.ResourceBlock{t}, true, false
			}
		}
		if _, ok := idx.expands[p+ref]; ok {
			if idx.unexpanded[p+ref] {
				return nil, true, true
			}
			return idx.instances[p+ref], true, false
		}
		if block, _, ok := resources.SplitKey(ref); ok && idx.unexpanded[p+block] {
			return nil, true, true
		}
	}
	return nil, false, false
}

// candidates lists the addresses a reference of type typ may have meant:
// the resources of that type, and the blocks of that type with for_each
// or count.
func (idx *addrIndex) candidates(typ string) []string {
	var out []string
	for a, ob := range idx.byAddr {
		if ob.Type == typ {
			out = append(out, a)
		}
	}
	for a, ob := range idx.expands {
		if ob.Type == typ {
			if _, dup := idx.byAddr[a]; !dup {
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

func resolveNotify(b *config.ResourceBlock, nb *config.NotifyBlock, subscribe bool, idx *addrIndex, reg *resources.Registry, ctx *hcl.EvalContext) ([]*Notification, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	kw := "notifies"
	if subscribe {
		kw = "subscribes"
	}
	if nb.Resource == nil {
		return nil, nil // the block's decoder reported the missing attribute
	}
	refRange := nb.Resource.Range()
	errAt := func(rng hcl.Range, summary, detail string) ([]*Notification, hcl.Diagnostics) {
		return nil, diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()})
	}

	if d := refuseLazy(nb.Resource, kw, "the plan shows which resource each change notifies"); d.HasErrors() {
		return nil, d
	}
	if d := refuseLazy(nb.Timing, kw+" timing", "the plan shows where each notified run happens"); d.HasErrors() {
		return nil, d
	}
	v, d := nb.Resource.Value(ctx)
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	if !v.IsWhollyKnown() {
		return nil, diags
	}
	v, _ = v.UnmarkDeep()
	if v.IsNull() || v.Type() != cty.String {
		return errAt(refRange, "Invalid resource reference", fmt.Sprintf("The resource of a %s block is a string naming a resource as TYPE[NAME], for example \"execute[reload-web]\".", kw))
	}
	ref := v.AsString()
	typ, _, ok := config.ParseAddress(ref)
	if !ok {
		return errAt(refRange, "Invalid resource reference", fmt.Sprintf("%q does not name a resource: write TYPE[NAME], for example \"execute[reload-web]\", and TYPE[NAME][\"KEY\"] or TYPE[NAME][INDEX] for one instance of a resource with for_each or count.", ref))
	}
	targets, found, unchecked := idx.lookup(b, ref)
	if unchecked {
		return nil, diags
	}
	if !found {
		hint := didYouMeanAddress(ref, idx.candidates(typ))
		if _, known := reg.Lookup(typ); !known {
			hint = fmt.Sprintf(" There is no resource type %q.", typ)
		} else if block, _, ok := resources.SplitKey(ref); ok {
			if eb := idx.expands[block]; eb != nil {
				keys := make([]string, 0, len(idx.instances[block]))
				for _, in := range idx.instances[block] {
					keys = append(keys, in.Key.String())
				}
				if len(keys) == 0 {
					hint += fmt.Sprintf(" %s has no instances in this plan.", block)
				} else {
					hint += fmt.Sprintf(" The instances of %s are %s.", block, words.Join(truncateList(keys, 10), ""))
				}
			}
		}
		return errAt(refRange, "Notification to a resource that does not exist",
			fmt.Sprintf("%s %s %s, but no resource %s is declared.%s Declare it, or fix the reference.", b.Address(), kw, ref, ref, hint))
	}
	var out []*Notification
	for _, other := range targets {
		n, d := notificationTo(b, other, nb, subscribe, kw, refRange, reg, ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return nil, diags
		}
		if n != nil {
			out = append(out, n)
		}
	}
	return out, diags
}

// didYouMeanAddress is words.DidYouMean for an address; one with an
// instance key (quotes of its own) is written as it is.
func didYouMeanAddress(ref string, candidates []string) string {
	s := words.Closest(ref, candidates)
	if strings.Contains(s, `"`) {
		return " Did you mean " + s + "?"
	}
	return words.DidYouMean(ref, candidates)
}

// truncateList is xs, or its first n and "…".
func truncateList(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(append([]string(nil), xs[:n]...), "…")
}

// notificationTo is the edge nb of b declares to (or, subscribing, from)
// other, checked.
func notificationTo(b, other *config.ResourceBlock, nb *config.NotifyBlock, subscribe bool, kw string, refRange hcl.Range, reg *resources.Registry, ctx *hcl.EvalContext) (*Notification, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	errAt := func(rng hcl.Range, summary, detail string) (*Notification, hcl.Diagnostics) {
		return nil, diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()})
	}
	if other == b {
		return errAt(nb.DeclRange, "Resource notifies itself",
			fmt.Sprintf("%s %s itself. A resource cannot be notified by its own change; declare the action as a separate resource (for example an execute) and notify that.", b.Address(), kw))
	}

	n := &Notification{Action: nb.Action, Timing: config.TimingDelayed, Subscribe: subscribe, DeclRange: nb.DeclRange, ResourceRange: refRange}
	if subscribe {
		n.Notifier, n.Target = other, b
	} else {
		n.Notifier, n.Target = b, other
	}

	if t, ok := reg.Lookup(n.Target.Type); ok {
		s := t.Schema()
		if n.Action == "nothing" || !s.HasAction(n.Action) {
			detail := fmt.Sprintf("%s has no action %q.%s Its actions are %s.", n.Target.Address(), n.Action, words.DidYouMean(n.Action, s.Actions), words.Quoted(s.Actions))
			if n.Action == "nothing" {
				detail = "Notifying the action nothing would do nothing. Name the action the target should run: " + words.Quoted(s.Actions) + "."
			}
			detail += fmt.Sprintf(" %s is declared at %s:%d.", n.Target.Address(), n.Target.DeclRange.Filename, n.Target.DeclRange.Start.Line)
			return errAt(nb.DeclRange, "Unsupported notification action", detail)
		}
	}

	if nb.Timing != nil {
		tv, d := nb.Timing.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return nil, diags
		}
		tv, _ = tv.UnmarkDeep()
		switch {
		case !tv.IsKnown():
			return nil, diags
		case tv.IsNull():
		case tv.Type() != cty.String:
			return errAt(nb.Timing.Range(), "Invalid notification timing", fmt.Sprintf("The timing is a string: one of %s.", words.Quoted(config.Timings)))
		default:
			n.Timing = tv.AsString()
			if !contains(config.Timings, n.Timing) {
				return errAt(nb.Timing.Range(), "Invalid notification timing", fmt.Sprintf("There is no timing %q.%s The timings are %s (%s is the default).", n.Timing, words.DidYouMean(n.Timing, config.Timings), words.Quoted(config.Timings), config.TimingDelayed))
			}
		}
	}
	return n, diags
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// cycles reports each cycle through before and immediately edges once,
// with the chain and the range of every edge in it.
func cycles(edges []*Notification) hcl.Diagnostics {
	out := map[*config.ResourceBlock][]*Notification{}
	var order []*config.ResourceBlock
	for _, e := range edges {
		if e.Timing == config.TimingDelayed {
			continue
		}
		if _, ok := out[e.Notifier]; !ok {
			order = append(order, e.Notifier)
		}
		out[e.Notifier] = append(out[e.Notifier], e)
	}
	const (
		white = iota
		grey
		black
	)
	color := map[*config.ResourceBlock]int{}
	var stack []*Notification
	var diags hcl.Diagnostics
	var visit func(b *config.ResourceBlock)
	visit = func(b *config.ResourceBlock) {
		color[b] = grey
		for _, e := range out[b] {
			switch color[e.Target] {
			case white:
				stack = append(stack, e)
				visit(e.Target)
				stack = stack[:len(stack)-1]
			case grey:
				// The cycle is the part of the stack from e.Target on, plus e.
				start := 0
				for i, s := range stack {
					if s.Notifier == e.Target {
						start = i
						break
					}
				}
				chain := append(append([]*Notification(nil), stack[start:]...), e)
				diags = diags.Append(cycleDiag(chain))
			}
		}
		color[b] = black
	}
	for _, b := range order {
		if color[b] == white {
			visit(b)
		}
	}
	return diags
}

func cycleDiag(chain []*Notification) *hcl.Diagnostic {
	parts := []string{chain[0].Notifier.Address()}
	var where []string
	for _, e := range chain {
		parts = append(parts, fmt.Sprintf("(%s, %s) %s", e.Action, e.Timing, e.Target.Address()))
		kw := "notifies"
		if e.Subscribe {
			kw = "subscribes"
		}
		where = append(where, fmt.Sprintf("%s:%d (%s)", e.DeclRange.Filename, e.DeclRange.Start.Line, kw))
	}
	last := chain[len(chain)-1]
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Notification cycle",
		Detail: fmt.Sprintf("These notifications form a cycle that would never end: %s. The edges are declared at %s. Break the cycle, or make one of its notifications delayed (a delayed action runs once).",
			strings.Join(parts, " -> "), strings.Join(where, ", ")),
		Subject: last.DeclRange.Ptr(),
	}
}

// attachNotifications sets each instance's outgoing edges.
func attachNotifications(insts []*Instance, edges []*Notification) {
	byBlock := make(map[*config.ResourceBlock]*Instance, len(insts))
	for _, inst := range insts {
		byBlock[inst.Block] = inst
	}
	for _, e := range edges {
		if inst := byBlock[e.Notifier]; inst != nil {
			inst.Notifies = append(inst.Notifies, e)
		}
	}
}
