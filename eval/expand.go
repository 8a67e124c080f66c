package eval

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/resources"
)

// Instances: a resource block with for_each or count stands for its
// instances, as Terraform's do. Each is a copy of the block keyed by its
// instance key (config.ResourceBlock.Key), evaluated like any block in a
// scope where each.key and each.value (for_each) or count.index (count)
// are its own; it is addressed as the block followed by its key:
// template[vhost]["example.com"], sysctl[hardening][3]. The collection is
// evaluated when the block is, with the final node attributes and the
// host facts: it must be known then (a lazy(…) key would make the plan's
// resources depend on apply).

// Variables of an instance's scope.
const (
	EachVar  = "each"
	CountVar = "count"
)

// instanceOf is one instance of a resource block to evaluate: the block
// itself, or a keyed copy of a block with for_each or count, and what its
// expressions see.
type instanceOf struct {
	block *config.ResourceBlock
	// ctx is what the instance's expressions see (each or count added);
	// plain is unmarkingContext(ctx).
	ctx, plain *hcl.EvalContext
}

// expander evaluates the for_each and count of blocks.
type expander struct {
	scope  *Scope
	source func(hcl.Range) string
	// marked is scope.Node with its sensitive leaves marked, made the
	// first time a collection reads one.
	marked cty.Value
	// unexpanded holds the block addresses whose collection is not known
	// yet (validate, without the host): their instances are not known,
	// so references to them are not checked.
	unexpanded map[string]bool
	// expanded holds the blocks expanded, by address, whatever their
	// number of instances.
	expanded map[string]*config.ResourceBlock
}

func newExpander(scope *Scope, source func(hcl.Range) string) *expander {
	return &expander{scope: scope, source: source}
}

// validating reports whether the host is not known (validate): a
// collection that reads it is not known either, and that is no error.
func (x *expander) validating() bool {
	return x.scope == nil || x.scope.Host == cty.NilVal || !x.scope.Host.IsWhollyKnown()
}

// expand returns b's instances: b itself, in ctx, when it has neither
// for_each nor count; else one keyed copy per element of the
// collection, in key order, none for an empty one. A collection not
// known yet (validate) gives one instance whose each or count is unknown,
// so that its expressions are checked, and records b as unexpanded.
func (x *expander) expand(b *config.ResourceBlock, ctx, plain *hcl.EvalContext) ([]instanceOf, hcl.Diagnostics) {
	m := &b.Meta
	if !m.Expands() {
		return []instanceOf{{block: b, ctx: ctx, plain: plain}}, nil
	}
	if x.expanded == nil {
		x.expanded = map[string]*config.ResourceBlock{}
	}
	x.expanded[b.BlockAddress()] = b
	var keys []resources.Key
	var values []cty.Value
	var diags hcl.Diagnostics
	known := true
	if m.ForEach != nil {
		keys, values, known, diags = x.forEach(b, ctx)
	} else {
		keys, known, diags = x.count(b, ctx)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	if !known {
		if x.unexpanded == nil {
			x.unexpanded = map[string]bool{}
		}
		x.unexpanded[b.BlockAddress()] = true
		v := cty.ObjectVal(map[string]cty.Value{"key": cty.UnknownVal(cty.String), "value": cty.DynamicVal})
		name := EachVar
		if m.Count != nil {
			v, name = cty.ObjectVal(map[string]cty.Value{"index": cty.UnknownVal(cty.Number)}), CountVar
		}
		c := withVar(ctx, name, v)
		return []instanceOf{{block: b, ctx: c, plain: unmarkingContext(c)}}, diags
	}
	out := make([]instanceOf, len(keys))
	copies := make([]config.ResourceBlock, len(keys))
	for i, k := range keys {
		copies[i] = *b
		copies[i].Key = k
		name, v := CountVar, cty.ObjectVal(map[string]cty.Value{"index": k.Value()})
		if m.ForEach != nil {
			name, v = EachVar, cty.ObjectVal(map[string]cty.Value{"key": k.Value(), "value": values[i]})
		}
		// plain is ctx's unmarking context already: the instance's adds
		// its variable, unmarked (unmarkingContext would copy the whole
		// function library for each instance).
		pv := v
		if pv.ContainsMarked() {
			pv, _ = pv.UnmarkDeep()
		}
		out[i] = instanceOf{block: &copies[i], ctx: withVar(ctx, name, v), plain: withVar(plain, name, pv)}
	}
	return out, diags
}

// withVar is ctx with one more variable, as a flat copy (its functions
// shared): code that reads ctx.Variables sees every variable.
func withVar(ctx *hcl.EvalContext, name string, v cty.Value) *hcl.EvalContext {
	vars := make(map[string]cty.Value, len(ctx.Variables)+1)
	maps.Copy(vars, ctx.Variables)
	vars[name] = v
	return &hcl.EvalContext{Variables: vars, Functions: ctx.Functions}
}

func forEachDiag(rng hcl.Range, detail string) hcl.Diagnostics {
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid for_each argument", Detail: detail, Subject: rng.Ptr()}}
}

// forEach evaluates b's for_each: a map or object (a key per element) or
// a set of strings (each string its key and value). known is false when
// the collection is not known yet (validate).
func (x *expander) forEach(b *config.ResourceBlock, ctx *hcl.EvalContext) (keys []resources.Key, values []cty.Value, known bool, diags hcl.Diagnostics) {
	expr := b.Meta.ForEach
	ev := &evaluator{ctx: ctx, scope: x.scope}
	if d := refuseLazy(ev.nativeOf(expr, x.source), "for_each", "each element is a resource the plan reads and shows, named by its key"); d.HasErrors() {
		return nil, nil, false, d
	}
	if x.scope.ReadsSensitive(expr) {
		// The node attributes as they are, sensitive leaves marked: an
		// element's sensitive parts stay marked in each.value.
		ctx = withVar(ctx, "node", x.markedNode())
		ev.ctx = ctx
	}
	if keys, ok := stringSetKeys(ev, expr); ok {
		if len(keys) > resources.MaxCount {
			return nil, nil, false, forEachDiag(expr.Range(), fmt.Sprintf("The for_each of %s has %d elements; a block makes at most %d instances.", b.BlockAddress(), len(keys), resources.MaxCount))
		}
		values = make([]cty.Value, len(keys))
		for i, k := range keys {
			values[i] = k.Value()
		}
		return keys, values, true, nil
	}
	v, diags := ev.raw(expr)
	if diags.HasErrors() {
		return nil, nil, false, diags
	}
	rng := expr.Range()
	if v.IsMarked() {
		return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s is sensitive (written with sensitive(), or computed from a sensitive node attribute): its keys would name the instances in the plan, for everyone to read. Use a collection whose keys are not secret; its values may be.", b.BlockAddress()))
	}
	t := v.Type()
	if v.IsNull() {
		return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s is null. It takes a map, or a set of strings; for no instances, give an empty one ({} or toset([])).", b.BlockAddress()))
	}
	if !v.IsKnown() {
		if x.validating() {
			return nil, nil, false, diags
		}
		return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s is not known when the plan is made, so the plan cannot say which instances there are. Make its keys known at plan: read node attributes and host facts, not values known only at apply.", b.BlockAddress()))
	}
	switch {
	case t.IsMapType() || t.IsObjectType():
		n := v.LengthInt()
		if n > resources.MaxCount {
			return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s has %d elements; a block makes at most %d instances.", b.BlockAddress(), n, resources.MaxCount))
		}
		keys, values = make([]resources.Key, 0, n), make([]cty.Value, 0, n)
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			keys = append(keys, resources.StringKey(k.AsString()))
			values = append(values, e)
		}
	case t.IsSetType():
		et := t.ElementType()
		if et != cty.String && et != cty.DynamicPseudoType {
			return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s is a set of %s; it takes a map, or a set of strings. Convert the elements to strings (toset([for x in … : tostring(x)])), or make a map.", b.BlockAddress(), et.FriendlyName()))
		}
		n := v.LengthInt()
		if n > resources.MaxCount {
			return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s has %d elements; a block makes at most %d instances.", b.BlockAddress(), n, resources.MaxCount))
		}
		keys, values = make([]resources.Key, 0, n), make([]cty.Value, 0, n)
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if !e.IsKnown() {
				if x.validating() {
					return nil, nil, false, diags
				}
				return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s holds values not known when the plan is made, so the plan cannot say which instances there are. Make them known at plan.", b.BlockAddress()))
			}
			if e.IsMarked() {
				return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s holds sensitive values: as a set's values are its keys, they would name the instances in the plan. Use a map whose keys are not secret.", b.BlockAddress()))
			}
			if e.IsNull() {
				return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s holds a null; a set for for_each holds strings only.", b.BlockAddress()))
			}
			if e.Type() != cty.String {
				return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s holds a %s; a set for for_each holds strings only.", b.BlockAddress(), e.Type().FriendlyName()))
			}
			keys = append(keys, resources.StringKey(e.AsString()))
			values = append(values, e)
		}
	case t.IsListType() || t.IsTupleType():
		return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s is a list; it takes a map, or a set of strings, whose keys name the instances (a list's positions would rename every instance after one removed). For a list of strings, write for_each = toset(LIST); for a list of objects, make a map keyed by a name: { for x in LIST : x.name => x }.", b.BlockAddress()))
	default:
		return nil, nil, false, forEachDiag(rng, fmt.Sprintf("The for_each of %s is %s; it takes a map, or a set of strings.", b.BlockAddress(), t.FriendlyName()))
	}
	// Instances in key order (cty iterates maps and sets of strings so
	// already: the order is checked, not made again).
	if slices.IsSortedFunc(keys, func(a, b resources.Key) int { return strings.Compare(a.Str(), b.Str()) }) {
		return keys, values, true, diags
	}
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return keys[idx[i]].Str() < keys[idx[j]].Str() })
	sk, sv := make([]resources.Key, len(keys)), make([]cty.Value, len(keys))
	for i, j := range idx {
		sk[i], sv[i] = keys[j], values[j]
	}
	return sk, sv, true, diags
}

// stringSetKeys reads for_each = toset(LIST), the idiom, when LIST is a
// list of known strings (not sensitive): the keys are its distinct
// strings, in order, as toset's elements would be, without making the set
// (go-cty orders a set's elements by comparing values, which is most of
// the cost of 10,000 instances). ok is false for anything else, which
// the caller evaluates as it is written.
func stringSetKeys(ev *evaluator, expr hcl.Expression) ([]resources.Key, bool) {
	call, ok := expr.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "toset" || len(call.Args) != 1 || call.ExpandFinal {
		return nil, false
	}
	v, d := ev.raw(call.Args[0])
	if d.HasErrors() || v.IsNull() || !v.IsWhollyKnown() || v.ContainsMarked() {
		return nil, false
	}
	t := v.Type()
	if !(t.IsTupleType() || t.IsListType()) || v.LengthInt() == 0 {
		return nil, false
	}
	strs := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return nil, false
		}
		strs = append(strs, e.AsString())
	}
	sort.Strings(strs)
	strs = slices.Compact(strs)
	keys := make([]resources.Key, len(strs))
	for i, s := range strs {
		keys[i] = resources.StringKey(s)
	}
	return keys, true
}

func countDiag(rng hcl.Range, detail string) hcl.Diagnostics {
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid count argument", Detail: detail, Subject: rng.Ptr()}}
}

// count evaluates b's count: a whole number from 0. known is false when
// it is not known yet (validate).
func (x *expander) count(b *config.ResourceBlock, ctx *hcl.EvalContext) ([]resources.Key, bool, hcl.Diagnostics) {
	expr := b.Meta.Count
	ev := &evaluator{ctx: ctx, scope: x.scope}
	if d := refuseLazy(ev.nativeOf(expr, x.source), "count", "each instance is a resource the plan reads and shows"); d.HasErrors() {
		return nil, false, d
	}
	v, diags := ev.value(expr)
	if diags.HasErrors() {
		return nil, false, diags
	}
	rng := expr.Range()
	if v.IsNull() {
		return nil, false, countDiag(rng, fmt.Sprintf("The count of %s is null. It takes a whole number: 0 for no instances.", b.BlockAddress()))
	}
	if !v.IsKnown() {
		if x.validating() {
			return nil, false, diags
		}
		return nil, false, countDiag(rng, fmt.Sprintf("The count of %s is not known when the plan is made, so the plan cannot say how many instances there are. Make it known at plan.", b.BlockAddress()))
	}
	if v.Type() != cty.Number {
		nv, err := convertNumber(v)
		if err != nil {
			return nil, false, countDiag(rng, fmt.Sprintf("The count of %s is %s; it takes a whole number.", b.BlockAddress(), v.Type().FriendlyName()))
		}
		v = nv
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return nil, false, countDiag(rng, fmt.Sprintf("The count of %s is %s; it takes a whole number.", b.BlockAddress(), bf.Text('g', -1)))
	}
	if bf.Sign() < 0 {
		return nil, false, countDiag(rng, fmt.Sprintf("The count of %s is %s; it takes a whole number from 0.", b.BlockAddress(), bf.Text('f', 0)))
	}
	if bf.Cmp(big.NewFloat(resources.MaxCount)) > 0 {
		return nil, false, countDiag(rng, fmt.Sprintf("The count of %s is %s; a block makes at most %d instances.", b.BlockAddress(), bf.Text('f', 0), resources.MaxCount))
	}
	n, _ := bf.Int64()
	keys := make([]resources.Key, n)
	for i := range keys {
		keys[i] = resources.IndexKey(i)
	}
	return keys, true, diags
}

// convertNumber converts a string such as "3" to a number, as HCL does
// for a number argument.
func convertNumber(v cty.Value) (cty.Value, error) {
	if v.Type() != cty.String {
		return cty.NilVal, fmt.Errorf("not a number")
	}
	f, _, err := big.ParseFloat(strings.TrimSpace(v.AsString()), 10, 512, big.ToNearestEven)
	if err != nil {
		return cty.NilVal, err
	}
	return cty.NumberVal(f), nil
}

// markedNode is the node attributes with their sensitive leaves marked
// sensitive, made once.
func (x *expander) markedNode() cty.Value {
	if x.marked != cty.NilVal {
		return x.marked
	}
	node := cty.EmptyObjectVal
	if x.scope != nil && x.scope.Node != cty.NilVal {
		node = x.scope.Node
	}
	root := &pathTrie{}
	for _, p := range x.scope.Sensitive {
		root.add(p)
	}
	x.marked = root.mark(node)
	return x.marked
}

// pathTrie holds paths below node.
type pathTrie struct {
	leaf bool
	next map[string]*pathTrie
}

func (t *pathTrie) add(p []string) {
	for _, s := range p {
		if t.leaf {
			return
		}
		if t.next == nil {
			t.next = map[string]*pathTrie{}
		}
		n := t.next[s]
		if n == nil {
			n = &pathTrie{}
			t.next[s] = n
		}
		t = n
	}
	t.leaf, t.next = true, nil
}

// mark marks the parts of v the trie's paths lead to.
func (t *pathTrie) mark(v cty.Value) cty.Value {
	if t.leaf {
		return v.Mark(SensitiveMark)
	}
	if len(t.next) == 0 || v.IsNull() || !v.IsKnown() {
		return v
	}
	ty := v.Type()
	switch {
	case ty.IsObjectType():
		attrs := v.AsValueMap()
		for k, n := range t.next {
			if a, ok := attrs[k]; ok {
				attrs[k] = n.mark(a)
			}
		}
		return cty.ObjectVal(attrs)
	case ty.IsMapType():
		elems := v.AsValueMap()
		for k, n := range t.next {
			if e, ok := elems[k]; ok {
				elems[k] = n.mark(e)
			}
		}
		return cty.MapVal(elems)
	}
	// (A list or set is a leaf of the attribute tree.)
	return v.Mark(SensitiveMark)
}

// explainEachCount rewords hcl's "Unknown variable" for each and count
// read where they are not set: in a block without for_each (or count),
// or anywhere but a resource.
func explainEachCount(diags hcl.Diagnostics) {
	for _, d := range diags {
		if d.Summary != "Unknown variable" {
			continue
		}
		switch {
		case strings.HasPrefix(d.Detail, `There is no variable named "each".`):
			d.Summary = "Reference to each outside for_each"
			d.Detail = "each.key and each.value are an instance's key and value, set in a resource whose for_each is set (and in its notifies and guards). This block has no for_each: set one, or read the value another way."
		case strings.HasPrefix(d.Detail, `There is no variable named "count".`):
			d.Summary = "Reference to count outside count"
			d.Detail = "count.index is an instance's index, set in a resource whose count is set (and in its notifies and guards). This block has no count: set one, or read the value another way."
		}
	}
}

// readsMarkedEach reports whether expr reads each while the instance's
// each.value holds sensitive parts (a for_each over node attributes with
// sensitive leaves): an expression not evaluated now (lazy) is then
// sensitive.
func (ev *evaluator) readsMarkedEach(expr hcl.Expression) bool {
	v, ok := ev.ctx.Variables[EachVar]
	if !ok || !v.ContainsMarked() || expr == nil {
		return false
	}
	for _, tr := range expr.Variables() {
		if tr.RootName() == EachVar {
			return true
		}
	}
	return false
}

// seenDiags remembers diagnostics reported, to drop repeats: the same
// error, word for word at the same place, from several instances of one
// block.
type seenDiags map[string]bool

func (s seenDiags) drop(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		key := fmt.Sprintf("%d\x00%s\x00%s", d.Severity, d.Summary, d.Detail)
		if d.Subject != nil {
			key += "\x00" + d.Subject.String()
		}
		if s[key] {
			continue
		}
		s[key] = true
		out = append(out, d)
	}
	return out
}
