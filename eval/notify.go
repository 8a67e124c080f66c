package eval

import (
	"fmt"
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
// known yet (validate, without the host) is left out unchecked.
func Notifications(c *config.Config, reg *resources.Registry, scope *Scope) ([]*Notification, hcl.Diagnostics) {
	ctxs := map[string]*hcl.EvalContext{}
	return notificationsOf(c.Resources, reg, func(b *config.ResourceBlock) *hcl.EvalContext {
		ctx := ctxs[b.Dir]
		if ctx == nil {
			ctx = scope.EvalContext(b.Dir)
			ctxs[b.Dir] = ctx
		}
		return ctx
	})
}

// notificationsOf resolves the edges of blocks (top-level resources and
// child resources), each block's expressions evaluated in ctxFor(block).
// A child's reference is looked up among its siblings first (the
// resources its parent's action declares), then at the top level, then as
// a full address.
func notificationsOf(blocks []*config.ResourceBlock, reg *resources.Registry, ctxFor func(*config.ResourceBlock) *hcl.EvalContext) ([]*Notification, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	hasEdges := false
	for _, b := range blocks {
		if len(b.Meta.Notifies)+len(b.Meta.Subscribes) > 0 {
			hasEdges = true
			break
		}
	}
	if !hasEdges {
		return nil, nil
	}
	byAddr := make(map[string]*config.ResourceBlock, len(blocks))
	for _, b := range blocks {
		byAddr[b.Address()] = b
	}
	var edges []*Notification
	seen := map[string]bool{}
	for _, b := range blocks {
		for _, group := range []struct {
			blocks    []*config.NotifyBlock
			subscribe bool
		}{{b.Meta.Notifies, false}, {b.Meta.Subscribes, true}} {
			for _, nb := range group.blocks {
				n, d := resolveNotify(b, nb, group.subscribe, byAddr, reg, ctxFor(b))
				diags = append(diags, d...)
				if n == nil {
					continue
				}
				key := n.String()
				if seen[key] {
					continue
				}
				seen[key] = true
				edges = append(edges, n)
			}
		}
	}
	diags = append(diags, cycles(edges)...)
	return edges, diags
}

func resolveNotify(b *config.ResourceBlock, nb *config.NotifyBlock, subscribe bool, byAddr map[string]*config.ResourceBlock, reg *resources.Registry, ctx *hcl.EvalContext) (*Notification, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	kw := "notifies"
	if subscribe {
		kw = "subscribes"
	}
	if nb.Resource == nil {
		return nil, nil // the block's decoder reported the missing attribute
	}
	refRange := nb.Resource.Range()
	errAt := func(rng hcl.Range, summary, detail string) (*Notification, hcl.Diagnostics) {
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
	if !v.IsKnown() {
		return nil, diags
	}
	if v.IsNull() || v.Type() != cty.String {
		return errAt(refRange, "Invalid resource reference", fmt.Sprintf("The resource of a %s block is a string naming a resource as TYPE[NAME], for example \"execute[reload-web]\".", kw))
	}
	ref := v.AsString()
	typ, _, ok := config.ParseAddress(ref)
	if !ok {
		return errAt(refRange, "Invalid resource reference", fmt.Sprintf("%q does not name a resource: write TYPE[NAME], for example \"execute[reload-web]\".", ref))
	}
	other, found := (*config.ResourceBlock)(nil), false
	if b.Parent != "" {
		// A sibling, declared by the same action of the same resource.
		other, found = byAddr[b.Parent+"."+ref]
	}
	if !found {
		other, found = byAddr[ref]
	}
	if !found {
		var addrs []string
		for a, ob := range byAddr {
			if ob.Type == typ {
				addrs = append(addrs, a)
			}
		}
		sort.Strings(addrs)
		hint := words.DidYouMean(ref, addrs)
		if _, known := reg.Lookup(typ); !known {
			hint = fmt.Sprintf(" There is no resource type %q.", typ)
		}
		return errAt(refRange, "Notification to a resource that does not exist",
			fmt.Sprintf("%s %s %s, but no resource %s is declared.%s Declare it, or fix the reference.", b.Address(), kw, ref, ref, hint))
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
