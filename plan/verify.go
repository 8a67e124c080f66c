package plan

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/resources"
)

// ErrInconsistent is returned by Read for a plan whose checksum holds but
// whose content contradicts itself: a live value that does not match its
// digest, a fingerprint that is not its reading's, a guard result with no
// guard. The planner never writes such a plan; it was edited, and its
// checksum computed again.
var ErrInconsistent = errors.New("the plan contradicts itself")

// check verifies what a reviewer is shown against what apply uses, so that
// a rendering derived from the plan (Show) can be trusted: every value
// kept in full matches its digest, every fingerprint is its reading's, an
// address names its type and name, every guard result has its guard. It
// does not (cannot) check the plan against the host: apply does, and
// refuses a reading that no longer matches.
func (p *Plan) check(types *resources.Registry) error {
	if types == nil {
		return errors.New("no resource types to check the plan against")
	}
	reg, err := p.TypeRegistry(types)
	if err != nil {
		return err
	}
	if err := p.checkData(reg); err != nil {
		return err
	}
	addrs := make(map[string]bool, len(p.Resources))
	at := make(map[string]int, len(p.Resources))
	for i, r := range p.Resources {
		if r == nil {
			return fmt.Errorf("resource %d is null", i)
		}
		want := resources.InstanceAddress(r.Type, r.Name, r.Index)
		if r.Parent != "" {
			want = r.Parent + "." + want
		}
		if r.Address != want {
			return fmt.Errorf("resource %d is named %q, but its type and name make %q", i, r.Address, want)
		}
		if err := p.checkParent(reg, r, at); err != nil {
			return err
		}
		at[r.Address] = i
		if addrs[r.Address] {
			return fmt.Errorf("%s is planned twice", r.Address)
		}
		addrs[r.Address] = true
		if err := p.checkLazy(r); err != nil {
			return err
		}
		needsReading := r.Kind.IsWork() || (r.Kind == resources.NoOp && r.Action != "nothing")
		if err := p.checkStep(r.Address, needsReading, r.Current, r.Fingerprint, r.Guards, r.GuardSpecs, r.Kind); err != nil {
			return err
		}
		if len(r.Then) > 0 && (!needsReading || r.Action == "nothing") {
			return fmt.Errorf("%s: further actions of a resource that takes none", r.Address)
		}
		for j, st := range r.Then {
			if st == nil || st.Current == nil {
				return fmt.Errorf("%s: action %d without the state it is planned from", r.Address, j+2)
			}
			for _, k := range slices.Sorted(maps.Keys(st.Current.Values)) {
				if err := p.checkStored(st.Current.Values[k]); err != nil {
					return fmt.Errorf("%s: action %d's predicted value of %q %w", r.Address, j+2, k, err)
				}
			}
		}
	}
	for _, r := range p.Resources {
		if err := p.checkAwaits(reg, r); err != nil {
			return err
		}
	}
	h := p.hiding()
	for _, r := range p.Resources {
		if err := p.checkHidden(reg, r, h); err != nil {
			return err
		}
	}
	incoming := p.IncomingEdges()
	for _, r := range p.Resources {
		if !sameTriggers(r.NotifiedBy, incoming[r.Address]) {
			return fmt.Errorf("%s: its notified_by edges are not the notifications that name it", r.Address)
		}
	}
	for i, nr := range p.NotifiedRuns {
		if nr == nil {
			return fmt.Errorf("notified run %d is null", i)
		}
		if !addrs[nr.Address] {
			return fmt.Errorf("notified run %d runs %q, which the plan does not hold", i, nr.Address)
		}
		if nr.Slot < 0 || nr.Slot > len(p.Resources) || nr.Step < 0 || (nr.Slot < len(p.Resources) && nr.Step >= p.Resources[nr.Slot].Steps()) {
			return fmt.Errorf("notified run %d of %s runs at a place the plan does not have", i, nr.Address)
		}
		where := fmt.Sprintf("the notified run of %s", nr.Address)
		if err := p.checkStep(where, nr.Kind != resources.Skip, nr.Current, nr.Fingerprint, nr.Guards, nr.GuardSpecs, nr.Kind); err != nil {
			return err
		}
	}
	return nil
}

// checkParent checks a child resource against its parent, which comes
// before it: the parent's step exists, and its action declares the child.
func (p *Plan) checkParent(reg *resources.Registry, r *Resource, at map[string]int) error {
	if r.Parent == "" {
		if r.ParentStep != 0 {
			return fmt.Errorf("%s: a parent step without a parent", r.Address)
		}
		return nil
	}
	pi, ok := at[r.Parent]
	if !ok {
		return fmt.Errorf("%s: its parent %s is not planned before it", r.Address, r.Parent)
	}
	parent := p.Resources[pi]
	if r.ParentStep < 0 || r.ParentStep >= parent.Steps() {
		return fmt.Errorf("%s: its parent %s has no step %d", r.Address, r.Parent, r.ParentStep)
	}
	t, ok := reg.Lookup(parent.Type)
	if !ok {
		return fmt.Errorf("%s: its parent %s is of type %q, which the plan does not define", r.Address, r.Parent, parent.Type)
	}
	comp, ok := t.(resources.Composite)
	if !ok {
		return fmt.Errorf("%s: its parent %s is of type %q, which declares no child resources", r.Address, r.Parent, parent.Type)
	}
	action := parent.StepView(r.ParentStep).Action
	local := resources.Address(r.Type, r.Name)
	for _, it := range comp.Sequence(action) {
		if it.Child == local {
			return nil
		}
	}
	return fmt.Errorf("%s: the action %s of %s declares no %s", r.Address, action, parent.Type, local)
}

// checkStep checks one step's reading and guards. needsReading is whether
// the planner reads the live state for it.
func (p *Plan) checkStep(where string, needsReading bool, cur *Current, fingerprint string, guards []GuardResult, specs []*guard.Spec, kind resources.Kind) error {
	switch {
	case cur == nil && needsReading:
		return fmt.Errorf("%s: a step of kind %q without the live reading it was planned from", where, kind)
	case cur == nil && fingerprint != "":
		return fmt.Errorf("%s: a fingerprint without a live reading", where)
	case cur != nil:
		for _, k := range slices.Sorted(maps.Keys(cur.Values)) {
			if err := p.checkStored(cur.Values[k]); err != nil {
				return fmt.Errorf("%s: the live value of %q %w", where, k, err)
			}
		}
		if fingerprint != cur.Fingerprint() {
			return fmt.Errorf("%s: the fingerprint is not the live reading's", where)
		}
	}
	if len(guards) > len(specs) {
		return fmt.Errorf("%s: %d guard results for %d guards", where, len(guards), len(specs))
	}
	for i, g := range guards {
		s := specs[i]
		if s == nil {
			continue
		}
		if s.AtApply && g.Decided {
			return fmt.Errorf("%s: guard %d is decided at apply, but its plan-time result decides", where, i)
		}
		if !s.AtApply && g.Error != "" {
			return fmt.Errorf("%s: guard %d has an error, which only a guard decided at apply may have", where, i)
		}
	}
	for i, s := range specs {
		if s == nil {
			return fmt.Errorf("%s: guard %d is null", where, i)
		}
		switch {
		case s.AtApply && s.Form == guard.Expression && (s.Lazy == nil || s.ExprValue != nil):
			return fmt.Errorf("%s: guard %d is decided at apply by an expression, but holds a value instead of its expression", where, i)
		case s.Lazy != nil && !(s.AtApply && s.Form == guard.Expression):
			return fmt.Errorf("%s: guard %d holds an expression to evaluate at apply, but is not an expression decided at apply", where, i)
		case s.Lazy != nil:
			if s.Lazy.OneLine() != s.Source {
				return fmt.Errorf("%s: guard %d evaluates another expression than the one it shows", where, i)
			}
			if err := p.checkLazyExpr(s.Lazy); err != nil {
				return fmt.Errorf("%s: guard %d's expression %w", where, i, err)
			}
		}
		if s.Kind != guard.OnlyIf && s.Kind != guard.NotIf {
			return fmt.Errorf("%s: guard %d is of kind %q, neither only_if nor not_if", where, i, truncate(string(s.Kind), 40))
		}
		if s.Form != guard.Script && s.Form != guard.Expression {
			return fmt.Errorf("%s: guard %d is of form %q, neither script nor expression", where, i, truncate(string(s.Form), 40))
		}
		// What a script guard runs is its code (or command) value when a
		// resource type runs it, and its source with /bin/sh: they must be
		// the one script reviewers are shown (an argv guard's source is its
		// words quoted, guard.ArgvSource).
		for _, k := range []string{"code", "command"} {
			v, ok := s.Values[k]
			if !ok {
				continue
			}
			if !runsSource(v.Value, s.Source) {
				return fmt.Errorf("%s: guard %d runs a %s that is not its source", where, i, k)
			}
		}
	}
	return nil
}

// checkStored checks that a value kept in full is the value its digest
// (and size) describe.
func (p *Plan) checkStored(sv StoredValue) error {
	sensitive := false
	switch {
	case strings.HasPrefix(sv.Digest, "sha256:"):
	case strings.HasPrefix(sv.Digest, "hmac-sha256:"):
		sensitive = true
	default:
		return fmt.Errorf("has a digest of no known kind (%q)", truncate(sv.Digest, 40))
	}
	if sv.Value == nil {
		return nil
	}
	if sv.Private != "" || sensitive {
		return errors.New("is kept in full, but it is private or sensitive")
	}
	v := sv.Value.Value
	if v == cty.NilVal {
		return errors.New("is kept without a value")
	}
	if got := DigestValue(v, p.Salt, sensitive); got != sv.Digest {
		return fmt.Errorf("does not match its digest (the value's digest is %s, the plan says %s)", ShortDigest(got), ShortDigest(sv.Digest))
	}
	var size int64
	if s, ok := stringOf(v); ok {
		size = int64(len(s))
	}
	if sv.Size != size {
		return fmt.Errorf("is %d bytes long, but the plan says %d", size, sv.Size)
	}
	return nil
}

// runsSource reports whether a guard's code or command value is the source
// it is shown by: the same string, or the argv its source quotes.
func runsSource(v cty.Value, source string) bool {
	if text, ok := stringOf(v); ok {
		return text == source
	}
	if v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType()) {
		return false
	}
	var argv []string
	for _, e := range v.AsValueSlice() {
		text, ok := stringOf(e)
		if !ok {
			return false
		}
		argv = append(argv, text)
	}
	return guard.ArgvSource(argv) == source
}

func sameTriggers(a, b []Trigger) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = sortedTriggers(a), sortedTriggers(b)
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sortedTriggers orders edges for comparison.
func sortedTriggers(ts []Trigger) []Trigger {
	out := append([]Trigger(nil), ts...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Notifier != b.Notifier {
			return a.Notifier < b.Notifier
		}
		if a.Action != b.Action {
			return a.Action < b.Action
		}
		if a.Timing != b.Timing {
			return a.Timing < b.Timing
		}
		return !a.Subscribe && b.Subscribe
	})
	return out
}

// checkLazy checks r's values known at apply: each is a property the plan
// gives no value, and each expression is one the planner could have
// written, reading node attributes that are the plan's.
func (p *Plan) checkLazy(r *Resource) error {
	for _, k := range slices.Sorted(maps.Keys(r.Lazy)) {
		e := r.Lazy[k]
		if e == nil {
			return fmt.Errorf("%s: the value of %q known at apply is null", r.Address, k)
		}
		if _, both := r.Desired[k]; both {
			return fmt.Errorf("%s: %q has both a value and a value known at apply", r.Address, k)
		}
		if e.Variables != "" {
			_, known := r.Desired[e.Variables]
			_, later := r.Lazy[e.Variables]
			if (!known && !later) || e.Variables == k {
				return fmt.Errorf("%s: %q is rendered with the variables of %q, which the plan does not hold", r.Address, k, e.Variables)
			}
		}
		if err := p.checkLazyExpr(e); err != nil {
			return fmt.Errorf("%s: the value of %q known at apply %w", r.Address, k, err)
		}
	}
	return nil
}

// checkLazyExpr checks one expression known at apply (lazy.Expr.Check), and
// that what it reads of node is the plan's node attributes and of host the
// plan's host: apply evaluates it with what it carries.
func (p *Plan) checkLazyExpr(e *LazyExpr) error {
	if err := e.Check(); err != nil {
		return err
	}
	// node and host are objects (the node attributes, the host facts):
	// anything else would be read by an expression and checked by nothing
	// below, which walks objects.
	for _, s := range []struct {
		name, what string
		v          *Value
	}{{"node", "the node attributes'", e.Scope.Node}, {"host", "the host facts'", e.Scope.Host}} {
		if s.v != nil && s.v.Value != cty.NilVal && !s.v.Value.IsNull() && !s.v.Value.Type().IsObjectType() && !s.v.Value.Type().IsMapType() {
			return fmt.Errorf("carries %s as a %s value, not as %s object", s.name, s.v.Value.Type().FriendlyName(), s.what)
		}
	}
	if n := e.Scope.Node; n != nil && n.Value != cty.NilVal {
		attrs := make(map[string]Attribute, len(p.Attributes))
		for _, a := range p.Attributes {
			attrs[a.Path] = a
		}
		var bad error
		walkLeaves(n.Value, nil, func(path []string, v cty.Value) {
			if bad != nil {
				return
			}
			key := strings.Join(path, ".")
			a, ok := attrs[key]
			switch {
			case !ok:
				bad = fmt.Errorf("reads node.%s, which is not one of the plan's node attributes", truncate(key, 80))
			case a.Sensitive:
			default:
				b, err := (Value{Value: v}).MarshalJSON()
				if err != nil || string(b) != string(a.Value) {
					bad = fmt.Errorf("reads node.%s with another value than the plan's node attributes", truncate(key, 80))
				}
			}
		})
		if bad != nil {
			return bad
		}
	}
	if d := e.Scope.Data; d != nil {
		if err := p.checkLazyData(d.Value); err != nil {
			return err
		}
	}
	if h := e.Scope.Host; h != nil && h.Value != cty.NilVal && h.Value.Type().IsObjectType() {
		for name, want := range map[string]string{"hostname": p.Host.Hostname, "machine_id": p.Host.MachineID} {
			if !h.Value.Type().HasAttribute(name) {
				continue
			}
			got, ok := stringOf(h.Value.GetAttr(name))
			if !ok || got != want {
				return fmt.Errorf("reads host.%s with another value than the plan's host", name)
			}
		}
	}
	return nil
}

// walkLeaves calls f for each leaf of v, an object of node attributes:
// objects and maps are walked, anything else is a leaf.
func walkLeaves(v cty.Value, path []string, f func([]string, cty.Value)) {
	if v.IsKnown() && !v.IsNull() && (v.Type().IsObjectType() || v.Type().IsMapType()) {
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			walkLeaves(e, append(append([]string(nil), path...), k.AsString()), f)
		}
		return
	}
	if len(path) > 0 {
		f(path, v)
	}
}

// checkAwaits checks r's values known only at apply by its type
// (Resource.Awaits): each is a property of its type the recipe does not
// set, whose change holds no planned value, of a resource of one action
// with work, and an earlier resource or notified run of the plan with
// work meets what it waits for (MeetersOf) — the planner's own rule, so
// a plan cannot defer a value to something that is not in it, nor hide a
// value it does carry behind "(known at apply)".
func (p *Plan) checkAwaits(reg *resources.Registry, r *Resource) error {
	if len(r.Awaits) == 0 {
		return nil
	}
	if !r.Kind.IsWork() || len(r.Then) > 0 {
		return fmt.Errorf("%s: a value known at apply of a resource that takes no action, or several", r.Address)
	}
	t, ok := reg.Lookup(r.Type)
	if !ok {
		return fmt.Errorf("%s: a value known at apply of type %q, which the plan does not define", r.Address, r.Type)
	}
	seen := map[string]bool{}
	for _, a := range r.Awaits {
		prop := t.Schema().Property(a.Property)
		switch {
		case prop == nil:
			return fmt.Errorf("%s: a value known at apply for %q, which type %q does not have", r.Address, truncate(a.Property, 40), r.Type)
		case prop.Identity || prop.NameProperty:
			return fmt.Errorf("%s: a value known at apply for %q, which names the resource", r.Address, a.Property)
		case seen[a.Property]:
			return fmt.Errorf("%s: %q is known at apply twice", r.Address, a.Property)
		case r.Lazy[a.Property] != nil:
			return fmt.Errorf("%s: %q is known at apply both from the recipe and from its type", r.Address, a.Property)
		}
		if _, set := r.Desired[a.Property]; set {
			return fmt.Errorf("%s: %q has a value and a value known at apply", r.Address, a.Property)
		}
		seen[a.Property] = true
		changed := false
		for _, c := range r.Changes {
			if c.Property == a.Property {
				if c.Planned != nil {
					return fmt.Errorf("%s: %q has a planned value and is known at apply", r.Address, a.Property)
				}
				changed = true
			}
		}
		if !changed {
			return fmt.Errorf("%s: %q is known at apply, but the plan does not change it", r.Address, a.Property)
		}
		if len(p.MeetersOf(reg, r, a)) == 0 {
			return fmt.Errorf("%s: its %s is known only at apply, once %s, but no earlier resource of the plan with work provides that", r.Address, a.Property, truncate(a.What, 80))
		}
	}
	return nil
}

// sealed is p with each resource's HiddenDigest what the resource hides
// now: p itself when every seal is already so, else a shallow copy with
// copies of the resources whose seal changes. p is not modified.
func (p *Plan) sealed() *Plan {
	h := p.hiding()
	var out []*Resource
	for i, r := range p.Resources {
		if r == nil {
			continue
		}
		d, err := p.hiddenDigest(r, h)
		if err != nil {
			// An unencodable value fails the plan's own encoding just
			// after; a seal that says so cannot collide with a real one.
			d = "hmac-sha256:(unencodable: " + err.Error() + ")"
		}
		if d == r.HiddenDigest {
			continue
		}
		if out == nil {
			out = append([]*Resource(nil), p.Resources...)
		}
		c := *r
		c.HiddenDigest = d
		out[i] = &c
	}
	if out == nil {
		return p
	}
	q := *p
	q.Resources = out
	return &q
}

// hiding is what of a plan bears on what its resources hide: the node
// attributes it hides, and each target's notified runs.
type hiding struct {
	attrs map[string]bool
	runs  map[string][]*NotifiedRun
}

func (p *Plan) hiding() hiding {
	var h hiding
	for _, a := range p.Attributes {
		if a.Sensitive {
			if h.attrs == nil {
				h.attrs = map[string]bool{}
			}
			h.attrs[a.Path] = true
		}
	}
	for _, nr := range p.NotifiedRuns {
		if nr == nil {
			continue
		}
		if h.runs == nil {
			h.runs = map[string][]*NotifiedRun{}
		}
		h.runs[nr.Address] = append(h.runs[nr.Address], nr)
	}
	return h
}

// hiddenMaterial is what a resource's seal covers: its marks, and every
// value of it that renderings show as "(sensitive)".
type hiddenMaterial struct {
	Address    string                   `json:"address"`
	Sensitive  bool                     `json:"sensitive"`
	Properties []string                 `json:"sensitive_properties"`
	Desired    map[string]Value         `json:"desired,omitempty"`
	Lazy       map[string]*LazyExpr     `json:"lazy,omitempty"`
	Planned    []hiddenPlanned          `json:"planned,omitempty"`
	Guards     map[string][]*guard.Spec `json:"guards,omitempty"`
}

// hiddenPlanned is a hidden property's planned value in one step (0 the
// resource's first action, then its further ones, then its notified runs).
type hiddenPlanned struct {
	Step     string `json:"step"`
	Property string `json:"property"`
	Planned  *Value `json:"planned"`
}

// hiddenDigest is the seal of what r hides ("" when it hides nothing):
// an HMAC, keyed with the plan's salt, of hiddenMaterial's JSON.
func (p *Plan) hiddenDigest(r *Resource, h hiding) (string, error) {
	m, any := p.hiddenOf(r, h)
	if !any {
		return "", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, []byte(p.Salt))
	mac.Write(b)
	return "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil)), nil
}

// hiddenOf gathers what r hides, as the renderings decide it (Show): a
// property is hidden when the resource is sensitive or lists it in
// SensitiveProperties (Read checks that the list holds every set
// property its type marks sensitive); a value known at apply also when it
// reads a hidden node attribute; a guard when the resource or the guard
// is sensitive. It reports whether anything is hidden.
func (p *Plan) hiddenOf(r *Resource, h hiding) (*hiddenMaterial, bool) {
	if !mayHide(r, h) {
		return nil, false // most resources: nothing to gather
	}
	m := &hiddenMaterial{Address: r.Address, Sensitive: r.Sensitive, Properties: r.SensitiveProperties}
	marked := make(map[string]bool, len(r.SensitiveProperties))
	for _, k := range r.SensitiveProperties {
		marked[k] = true
	}
	hidden := func(name string) bool { return r.Sensitive || marked[name] }
	any := r.Sensitive || len(r.SensitiveProperties) > 0
	for k := range r.Desired {
		if hidden(k) {
			if m.Desired == nil {
				m.Desired = map[string]Value{}
			}
			m.Desired[k] = r.Desired[k]
		}
	}
	for k, e := range r.Lazy { // (into maps: their JSON is in key order)
		if e != nil && (hidden(k) || readsHidden(e, h.attrs)) {
			if m.Lazy == nil {
				m.Lazy = map[string]*LazyExpr{}
			}
			m.Lazy[k] = e
			any = true
		}
	}
	planned := func(step string, changes []Change) {
		for _, c := range changes {
			if c.Planned != nil && hidden(c.Property) {
				m.Planned = append(m.Planned, hiddenPlanned{Step: step, Property: c.Property, Planned: c.Planned})
			}
		}
	}
	guards := func(step string, specs []*guard.Spec) {
		for _, s := range specs {
			if s != nil && (r.Sensitive || s.Sensitive) {
				if m.Guards == nil {
					m.Guards = map[string][]*guard.Spec{}
				}
				m.Guards[step] = append(m.Guards[step], s)
				any = true
			}
		}
	}
	planned("0", r.Changes)
	guards("0", r.GuardSpecs)
	for i, st := range r.Then {
		if st != nil {
			planned(fmt.Sprint(i+1), st.Changes)
		}
	}
	for i, nr := range h.runs[r.Address] {
		step := fmt.Sprintf("notified %d %s", i, nr.Action)
		planned(step, nr.Changes)
		guards(step, nr.GuardSpecs)
	}
	return m, any
}

// mayHide reports, cheaply, whether r may hide anything: a mark, a
// sensitive guard (its own or a notified run's), or a value known at apply
// when the plan hides node attributes.
func mayHide(r *Resource, h hiding) bool {
	if r.Sensitive || len(r.SensitiveProperties) > 0 || (len(h.attrs) > 0 && len(r.Lazy) > 0) {
		return true
	}
	sensitive := func(specs []*guard.Spec) bool {
		for _, s := range specs {
			if s != nil && s.Sensitive {
				return true
			}
		}
		return false
	}
	if sensitive(r.GuardSpecs) {
		return true
	}
	for _, nr := range h.runs[r.Address] {
		if sensitive(nr.GuardSpecs) {
			return true
		}
	}
	return false
}

// readsHidden reports whether e reads a node attribute the plan hides.
func readsHidden(e *LazyExpr, attrs map[string]bool) bool {
	if len(attrs) == 0 || e.Scope.Node == nil || e.Scope.Node.Value == cty.NilVal {
		return false
	}
	found := false
	walkLeaves(e.Scope.Node.Value, nil, func(path []string, _ cty.Value) {
		found = found || attrs[strings.Join(path, ".")]
	})
	return found
}

// checkHidden checks r's seal against what it hides, and that it marks
// every set property its type marks sensitive (renderings hide those by
// the type; the seal covers what the plan marks).
func (p *Plan) checkHidden(reg *resources.Registry, r *Resource, h hiding) error {
	if t, ok := reg.Lookup(r.Type); ok && !r.Sensitive {
		marked := map[string]bool{}
		for _, k := range r.SensitiveProperties {
			marked[k] = true
		}
		for _, prop := range t.Schema().Properties {
			_, set := r.Desired[prop.Name]
			_, deferred := r.Lazy[prop.Name]
			if prop.Sensitive && (set || deferred) && !marked[prop.Name] {
				return fmt.Errorf("%s: the sensitive property %q is not marked sensitive", r.Address, prop.Name)
			}
		}
	}
	want, err := p.hiddenDigest(r, h)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Address, err)
	}
	if r.HiddenDigest != want {
		return fmt.Errorf("%s: what the plan hides of it (its sensitivity marks, and the values shown as %s) is not what the planner sealed: a mark or a hidden value was changed", r.Address, Sensitive)
	}
	return nil
}
