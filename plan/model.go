package plan

import (
	"encoding/json"
	"time"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/internal/typedvalue"
	"github.com/toquehq/toque/resources"
)

// FormatVersion is the plan file format this build writes and reads. A file
// of another format version is refused, with the reason.
//
// Format 2 keeps no display strings: a plan holds the values apply uses
// (desired values, guard specs, the live reading with its digests, the
// live text of content it diffs) and every rendering derives what it shows
// from them (Show), so that what a reviewer reads is what apply runs.
// Format 1 kept rendered changes, contexts and guard commands beside those
// values, and is refused.
//
// Format 3 adds values known only at apply (Resource.Lazy, guards decided
// at apply: guard.Spec.AtApply and Lazy, GuardResult.Error). A build that
// reads format 2 would converge a resource without its lazy values, so
// format 2 builds refuse format 3 plans, and this build refuses format 2
// ones: make a new plan.
//
// Format 4 adds values a resource type knows only at apply
// (Resource.Awaits: a package's version when only a repository the same
// plan adds offers it). A format 3 build would read such a plan without
// checking what its deferred values wait for, so it refuses format 4,
// and this build refuses format 3 plans as it refuses any other: make a
// new plan.
//
// Format 5 adds instances of resource blocks with for_each or count
// (Resource.Index: template[vhost]["a.com"], sysctl[hardening][3]), the
// guards a resource_group puts on its resources (guard.Spec.Group), and
// what a value known at apply reads of its instance (lazy.Scope.Each and
// Count). A format 4 build would refuse an instance's address, or
// evaluate such a value without its each, so it refuses format 5; this
// build refuses format 4 plans as it refuses any other: make a new plan.
//
// Format 6 adds the data blocks the plan read (Plan.Data: each one's
// arguments, its answer or, when sensitive, only its HMAC, and the
// digest apply's pre-flight compares a second reading with) and what a
// value known at apply reads of their answers (lazy.Scope.Data). A
// format 5 build would apply such a plan without checking that the data
// it was made from still holds, or evaluate such a value without data,
// so it refuses format 6; this build refuses format 5 plans as it
// refuses any other: make a new plan.
const FormatVersion = 6

// Plan is the persisted result of `toque plan`: everything apply needs, with
// no HCL re-read, and everything a reviewer reads.
type Plan struct {
	FormatVersion int       `json:"format_version"`
	ToqueVersion  string    `json:"toque_version"`
	CreatedAt     time.Time `json:"created_at"`
	Host          Host      `json:"host"`
	// InputsDigest is a sha256 over the recipe files (names and bytes) the
	// plan was made from.
	InputsDigest string `json:"inputs_digest"`
	// LockRevision is the policy lock's revision id in policy mode, and
	// Policy the policy's name.
	LockRevision string `json:"lock_revision,omitempty"`
	Policy       string `json:"policy,omitempty"`
	// Salt keys the HMACs that stand in for sensitive live values.
	Salt string `json:"salt"`
	// Errored marks a plan that failed part-way; it can be shown, never
	// applied.
	Errored bool     `json:"errored,omitempty"`
	Errors  []string `json:"errors,omitempty"`
	// Attributes are the merged node attributes, one leaf each, with
	// provenance.
	Attributes []Attribute `json:"attributes"`
	// Data are the data blocks read at plan, in the order they were
	// declared (data.go). (Before Resources, which stays the last field:
	// canonical encodes it apart.)
	Data      []*DataRead `json:"data,omitempty"`
	Resources []*Resource `json:"resources"`
	// Types are the definitions of the resource types written in HCL
	// (resource_type) that the plan's resources use, so that apply and
	// show rebuild them from the plan alone (TypeRegistry): the scripts
	// apply runs are the ones reviewed.
	Types []*resources.TypeDef `json:"types,omitempty"`
	// NotifiedRuns are the runs of notification targets the plan expects,
	// in the order they will run: those whose notifier is planned to
	// change. Apply runs a notified action only when it is listed here and
	// its notifier really changed.
	NotifiedRuns []*NotifiedRun `json:"notified_runs,omitempty"`
}

// Host identifies the machine a plan was made on.
type Host struct {
	Hostname  string `json:"hostname"`
	MachineID string `json:"machine_id,omitempty"`
}

// Attribute is one leaf of the merged node attributes.
type Attribute struct {
	// Path is the dotted path below node: "web.port".
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
	// Level is "default", "normal" (the command line: -attr, -attr-file)
	// or "override": the level the winning value came from.
	Level string `json:"level"`
	// Source is where the winning value was written (config.Leaf.Source):
	// FILE:LINE, after an origin when there is one ("-attr-file
	// prod.json:3", "-attr web.port").
	Source string `json:"source"`
	// Sensitive is set for an attribute written with sensitive(), or read
	// by a sensitive resource: its Value is null, in the file and in every
	// output (apply needs only the values resources were evaluated to).
	Sensitive bool `json:"sensitive,omitempty"`
}

// Range is a source range (file:line:col) kept so output can point at recipes.
type Range struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
}

// Resource is one resource's planned work.
//
// Nothing here is a display string: renderings derive what they show from
// Desired, GuardSpecs and Current with Plan.Show, so a plan cannot show one
// thing and run another.
type Resource struct {
	// Address is TYPE[NAME], or PARENT.TYPE[NAME] for a child resource,
	// followed by Index for an instance of a block with for_each or count
	// (template[vhost]["a.com"], sysctl[hardening][3]); Read refuses any
	// other.
	Address string `json:"address"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	// Index is, for an instance of a block with for_each or count, its
	// key (a string) or index (a number); absent otherwise.
	Index resources.Key `json:"index,omitzero"`
	// Parent is, for a child resource (declared in an action of a
	// resource type written in HCL), the address of the resource whose
	// action declares it; ParentStep is the index of that action among
	// the parent's steps. A child follows its parent in Resources, and is
	// converged by it, where the parent's action puts it.
	Parent     string `json:"parent,omitempty"`
	ParentStep int    `json:"parent_step,omitempty"`
	Source     Range  `json:"source"`
	// Action is the action the recipe asked for ("create").
	Action string `json:"action"`
	// Kind is what will happen.
	Kind resources.Kind `json:"kind"`
	// Reason says why, in words, as the planner composed it: StepReason
	// with the guards' verdicts, or the planner's own words. Apply's
	// report says it; renderings compose it again (Plan.Why) from
	// StepReason, GuardSpecs and the notification edges, so that a
	// command it names is the command apply runs.
	Reason string `json:"reason"`
	// StepReason is the resource type's own reason for Kind ("content
	// differs"); empty when the planner decided (skipped by a guard,
	// action nothing).
	StepReason string `json:"step_reason,omitempty"`
	// Sensitive marks a resource whose every property is hidden in output.
	Sensitive     bool `json:"sensitive,omitempty"`
	IgnoreFailure bool `json:"ignore_failure,omitempty"`
	// Desired holds the evaluated value of every property the recipe set,
	// in full (sensitive ones too: only the plan file holds them), but for
	// those in Lazy.
	Desired map[string]Value `json:"desired"`
	// Lazy holds the values known only at apply, by property: each an
	// expression apply evaluates right before the resource converges, with
	// what it reads that was fixed at plan (node attributes, host facts,
	// environment variables, recipe files), so that apply evaluates what
	// the reviewer was shown. The plan was made with these values unknown;
	// staleness checks treat them as unknown.
	Lazy map[string]*LazyExpr `json:"lazy,omitempty"`
	// Awaits are the values the resource type itself knows only at apply,
	// each waiting for a need an earlier resource of the plan meets when
	// it runs (Await): the version apt installs of a package only a
	// repository the plan adds offers. Each is a property of Changes
	// with no Planned value that Desired does not set; apply plans the
	// resource again right before converging it, and fails it if the
	// need is still unmet. Read refuses a plan where no earlier resource
	// with work meets one (Plan.MeetersOf). Staleness treats them as
	// unknown (resources.Awaiter).
	Awaits []Await `json:"awaits,omitempty"`
	// SensitiveProperties names the set properties whose values are hidden:
	// those the type marks sensitive, and those whose value the recipe made
	// sensitive (sensitive(), or an expression reading a sensitive node
	// attribute). Every property is, besides, when Sensitive is set.
	SensitiveProperties []string `json:"sensitive_properties,omitempty"`
	// HiddenDigest seals what renderings hide of the resource: its
	// sensitivity marks and every value shown as "(sensitive)" (its
	// desired values, values known at apply and planned values of hidden
	// properties, and its hidden guards, its notified runs' too), as an
	// HMAC keyed with the plan's salt; "" when nothing of it is hidden.
	// The encoding writes it (Plan.sealed) and Read refuses a plan where
	// it is not what the resource hides: a mark turned on, or a hidden
	// value changed, by hand.
	HiddenDigest string `json:"hidden_digest,omitempty"`
	// Current is the live value read at plan time; nil when it was not read
	// (a resource skipped by a guard before loading, or whose action is
	// nothing). Read verifies every value kept in full against its digest,
	// and Fingerprint against Current.
	Current *Current `json:"current,omitempty"`
	// Changes are the properties a create or update changes, in schema
	// order. Their values are Desired's (or the type's default) and
	// Current's.
	Changes []Change `json:"changes,omitempty"`
	// Groups are the converge groups that will run.
	Groups []string `json:"groups,omitempty"`
	// Guards are the guard results in evaluation order, up to the one
	// that decided to skip: Guards[i] is the result of GuardSpecs[i].
	Guards []GuardResult `json:"guards,omitempty"`
	// GuardSpecs are every guard of the resource, resolved, in evaluation
	// order (those after a deciding guard too), so that apply can evaluate
	// them again without HCL.
	GuardSpecs []*guard.Spec `json:"guard_specs,omitempty"`
	// Notifications are the outgoing notification edges: what this
	// resource notifies when it changes (subscribes edges naming it too).
	Notifications []Notification `json:"notifications,omitempty"`
	// NotifiedBy are the incoming notification edges: which resources
	// notify this one, with which action and timing. They are the other
	// resources' Notifications seen from here; Read refuses a plan where
	// they are not.
	NotifiedBy []Trigger `json:"notified_by,omitempty"`
	// Fingerprint is a sha256 over everything Load read (absence
	// included): Current.Fingerprint(), "" when nothing was read.
	Fingerprint string `json:"fingerprint"`
	// Then are the steps of the actions after the first, when the recipe
	// asks for several (action = ["enable", "start"]), in the order they
	// run, each planned from the state the previous action is predicted
	// to leave. Action, Kind, StepReason, Changes, Groups and Current
	// above are the first action's; Kind stays Skip or NoOp for a
	// resource that is skipped or not read.
	Then []*ActionStep `json:"then,omitempty"`
	// Provided says where what the resource's steps need comes from when
	// an earlier step of the plan brings it with a prediction (the plan's
	// Foresight): "/etc/nginx: created by package[nginx] (nginx-common
	// 1.22.1-9+deb12u9)". For reviewers only: apply reads nothing of it.
	Provided []string `json:"provided,omitempty"`
}

// ActionStep is one further action of a resource.
type ActionStep struct {
	Action     string         `json:"action"`
	Kind       resources.Kind `json:"kind"`
	Reason     string         `json:"reason"`
	StepReason string         `json:"step_reason,omitempty"`
	Changes    []Change       `json:"changes,omitempty"`
	Groups     []string       `json:"groups,omitempty"`
	// Current is the state the previous action is predicted to leave, in
	// the stored form: what the step's changes start from. It was never
	// read from the host, so it has no fingerprint.
	Current *Current `json:"current,omitempty"`
}

// Steps is the number of actions r plans: 1 + len(Then).
func (r *Resource) Steps() int { return 1 + len(r.Then) }

// StepView is r as its i-th action's step (0 is r itself): the action,
// kind, reasons, changes, groups and the state it starts from are the
// step's; the guards, edges and desired values are r's. A view of a
// further step has no fingerprint: its state is predicted.
func (r *Resource) StepView(i int) *Resource {
	if i <= 0 || i > len(r.Then) {
		return r
	}
	st := r.Then[i-1]
	v := *r
	v.Action, v.Kind, v.Reason, v.StepReason = st.Action, st.Kind, st.Reason, st.StepReason
	v.Changes, v.Groups, v.Current, v.Fingerprint = st.Changes, st.Groups, st.Current, ""
	v.Then = nil
	return &v
}

// AddressesOf lists, in plan order, the resources with a step of kind k
// (any of their actions) and then the targets of notified runs of kind k,
// each once.
func (p *Plan) AddressesOf(k resources.Kind) []string {
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, r := range p.Resources {
		for si := 0; si < r.Steps(); si++ {
			if r.StepView(si).Kind == k {
				add(r.Address)
			}
		}
	}
	for _, nr := range p.NotifiedRuns {
		if nr.Kind == k {
			add(nr.Address)
		}
	}
	return out
}

// AnyWork reports whether any of r's steps changes the host.
func (r *Resource) AnyWork() bool {
	if r.Kind.IsWork() {
		return true
	}
	for _, st := range r.Then {
		if st.Kind.IsWork() {
			return true
		}
	}
	return false
}

// Value is a cty value kept with its exact type; in JSON it is
// {"value": …, "type": …} (package typedvalue).
type Value = typedvalue.Value

// Current is a live reading.
type Current struct {
	Exists bool                   `json:"exists"`
	Values map[string]StoredValue `json:"values,omitempty"`
	Extra  map[string]string      `json:"extra,omitempty"`
}

// StoredValue is a live property value as kept in the plan: in full when it
// is small, or text content a diff is made from, and not sensitive;
// otherwise only its size and digest. How it is shown is decided when it is
// shown (Display), from these.
type StoredValue struct {
	// Value is present when the value is kept in full. Read refuses a plan
	// where it does not match Digest.
	Value *Value `json:"value,omitempty"`
	// Digest is "sha256:HEX" of the value (the bytes of a string, the
	// typed JSON of anything else), or, for a sensitive value,
	// "hmac-sha256:HEX" keyed with the plan's salt.
	Digest string `json:"digest"`
	// Size is the length in bytes of a string value.
	Size int64 `json:"size,omitempty"`
	// Private, when set, says why no output may show the value beyond
	// its size (a file not every user of the host may read): it is kept
	// keyed like a sensitive value, and renderings show this reason
	// instead of a diff from it.
	Private string `json:"private,omitempty"`
}

// Change names one property a create or update changes. Its values are
// not here: the planned value is Desired's (or, when the recipe did not
// set it and the thing is created, the type's default), the live one
// Current's.
type Change struct {
	Property string `json:"property"`
	// Planned is the value the change sets when the resource type
	// computed it from the host rather than took it from the recipe: the
	// version apt would install, the sha256 of what a URL serves. Absent:
	// Desired's value, or the type's default. Apply refuses a step whose
	// value is not this one.
	Planned *Value `json:"planned,omitempty"`
	// Note is the type's word to a reviewer on the change: "apt also
	// installs toque-dep 1.0".
	Note string `json:"note,omitempty"`
}

// GuardResult is the outcome of one evaluated guard at plan time: the
// guard itself (what ran) is the GuardSpecs entry of the same index.
type GuardResult struct {
	ExitCode   *int   `json:"exit_code,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	Output     string `json:"output,omitempty"`
	// Passed is the guard's condition: the exit code was in returns, or
	// the expression was true (for only_if, true means run).
	Passed  bool   `json:"passed"`
	Decided bool   `json:"decided"`
	Warning string `json:"warning,omitempty"`
	// Error is set for a guard decided at apply that could not be
	// evaluated at plan ("cannot run now"): it decides at apply, and this
	// is what it said now. Passed is then meaningless.
	Error string `json:"error,omitempty"`
}

// Notification is an outgoing notification edge.
type Notification struct {
	Target string `json:"target"` // TYPE[NAME]
	Action string `json:"action"`
	Timing string `json:"timing"` // delayed | immediately | before
	// Subscribe is true when the edge was declared by the target's
	// subscribes block.
	Subscribe bool `json:"subscribe,omitempty"`
}

// Trigger is an incoming notification edge.
type Trigger struct {
	Notifier  string `json:"notifier"` // TYPE[NAME]
	Action    string `json:"action"`
	Timing    string `json:"timing"`
	Subscribe bool   `json:"subscribe,omitempty"`
}

// NotifiedRun is one planned run of a notification target: the target's
// Action, planned from the plan-time reading as any resource is, run at
// apply only when one of Notifiers really changes.
type NotifiedRun struct {
	// Address is the target, TYPE[NAME]; it is in Plan.Resources, whose
	// Desired values the run uses.
	Address string `json:"address"`
	Action  string `json:"action"`
	Timing  string `json:"timing"`
	// Notifiers are the resources whose planned change triggers this run:
	// one for before and immediately; for delayed, every notifier that
	// queues it (the run happens once).
	Notifiers []string `json:"notifiers"`
	// Slot is the index in Plan.Resources of the resource in whose turn
	// the run happens (len(Resources) for delayed runs, at the end);
	// Step is the action of that resource (0 for its first); Before is
	// true when it runs before that action converges.
	Slot   int  `json:"slot"`
	Step   int  `json:"step,omitempty"`
	Before bool `json:"before,omitempty"`
	// Kind, Reason, StepReason, Changes and Groups are what the action
	// will do, as for a Resource; Reason starts with "notified by …".
	Kind       resources.Kind `json:"kind"`
	Reason     string         `json:"reason"`
	StepReason string         `json:"step_reason,omitempty"`
	Changes    []Change       `json:"changes,omitempty"`
	Groups     []string       `json:"groups,omitempty"`
	// Guards and GuardSpecs are the target's guards, which decide a
	// notified run as they decide a resource.
	Guards      []GuardResult `json:"guards,omitempty"`
	GuardSpecs  []*guard.Spec `json:"guard_specs,omitempty"`
	Current     *Current      `json:"current,omitempty"`
	Fingerprint string        `json:"fingerprint,omitempty"`
}

// Counts tallies a plan's resources by kind.
type Counts struct {
	Create, Update, Delete, Run, Skip, NoOp int
	// DecidedAtApply counts the resources with work whose guards include
	// one decided at apply, and KnownAtApply those with work and values
	// known only at apply; both are counted by their kind too.
	DecidedAtApply, KnownAtApply int
}

// Counts tallies p's resources by kind. A notified run counts as the work
// it does (or as skipped); an action-nothing resource with such a run is
// not also counted as unchanged, nor is a resource whose own step is a no-op but whose
// child resources change (they are counted).
func (p *Plan) Counts() Counts {
	var c Counts
	tree := p.Tree()
	for i, r := range p.Resources {
		if !c.add(r.Kind) {
			if r.Action == "nothing" && p.notifiedCounted(r.Address) {
				continue // counted by its notified run
			}
			if !r.AnyWork() && !tree.ChildWork(i) {
				c.NoOp++
			}
		}
		for _, st := range r.Then {
			c.add(st.Kind) // each further action that works counts
		}
	}
	for _, n := range p.NotifiedRuns {
		c.add(n.Kind)
	}
	c.DecidedAtApply, c.KnownAtApply = len(p.DecidedAtApply()), len(p.KnownAtApply())
	return c
}

// DecidedAtApply lists, in plan order, the resources with work (their own,
// or a notified run's) whose guards include one decided at apply, each
// once.
func (p *Plan) DecidedAtApply() []string {
	return p.deferredWork(func(r *Resource, nr *NotifiedRun) bool {
		if nr != nil {
			for _, s := range nr.GuardSpecs {
				if s != nil && s.AtApply {
					return true
				}
			}
			return false
		}
		return r.HasGuardAtApply()
	})
}

// KnownAtApply lists, in plan order, the resources with work (their own,
// or a notified run's) and values known only at apply (the recipe's,
// Lazy, or their type's, Awaits), each once.
func (p *Plan) KnownAtApply() []string {
	return p.deferredWork(func(r *Resource, _ *NotifiedRun) bool { return len(r.Lazy) > 0 || len(r.Awaits) > 0 })
}

// deferredWork lists the addresses of resources with work, and then of
// targets of notified runs with work, for which has holds, each once.
func (p *Plan) deferredWork(has func(r *Resource, nr *NotifiedRun) bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range p.Resources {
		if r != nil && r.AnyWork() && has(r, nil) && !seen[r.Address] {
			seen[r.Address] = true
			out = append(out, r.Address)
		}
	}
	if len(p.NotifiedRuns) == 0 {
		return out
	}
	// (Indexed only when there are notified runs: a plan of 100,000
	// resources has no use for the map otherwise.)
	byAddr := make(map[string]*Resource, len(p.Resources))
	for _, r := range p.Resources {
		if r != nil {
			byAddr[r.Address] = r
		}
	}
	for _, nr := range p.NotifiedRuns {
		r := byAddr[nr.Address]
		if nr == nil || r == nil || !nr.HasWork() || seen[nr.Address] || !has(r, nr) {
			continue
		}
		seen[nr.Address] = true
		out = append(out, nr.Address)
	}
	return out
}

// HasGuardAtApply reports whether one of r's guards is decided at apply.
func (r *Resource) HasGuardAtApply() bool {
	for _, s := range r.GuardSpecs {
		if s != nil && s.AtApply {
			return true
		}
	}
	return false
}

// LazyExpr is a value known only at apply (package lazy).
type LazyExpr = lazy.Expr

// add counts one step of work of kind k, reporting whether k is work (or a
// skip) rather than a no-op.
func (c *Counts) add(k resources.Kind) bool {
	switch k {
	case resources.Create:
		c.Create++
	case resources.Update:
		c.Update++
	case resources.Delete:
		c.Delete++
	case resources.Run:
		c.Run++
	case resources.Skip:
		c.Skip++
	default:
		return false
	}
	return true
}

// HasNotifiedWork reports whether a planned notified run of addr has work:
// a resource whose action is nothing is then counted (and shown) by that
// run, not as unchanged.
func (p *Plan) HasNotifiedWork(addr string) bool { return p.notifiedWork(addr) }

// notifiedWork reports whether a planned notified run of addr has work.
func (p *Plan) notifiedWork(addr string) bool {
	for _, n := range p.NotifiedRuns {
		if n.Address == addr && n.HasWork() {
			return true
		}
	}
	return false
}

// notifiedCounted reports whether a planned notified run of addr is
// counted: it has work, or a guard skips it.
func (p *Plan) notifiedCounted(addr string) bool {
	for _, n := range p.NotifiedRuns {
		if n.Address == addr && (n.HasWork() || n.Kind == resources.Skip) {
			return true
		}
	}
	return false
}

// HasWork reports whether the notified run changes something.
func (n *NotifiedRun) HasWork() bool { return n.Kind.IsWork() }

// HasChanges reports whether applying p would change anything.
func (p *Plan) HasChanges() bool {
	c := p.Counts()
	return c.Create+c.Update+c.Delete+c.Run > 0
}

// Tree is how a plan's resources nest: which child resources each
// resource's actions declare.
type Tree struct {
	p *Plan
	// children[i] are the indices of resource i's direct children, in
	// plan order.
	children [][]int
}

// Tree indexes p's child resources.
func (p *Plan) Tree() *Tree {
	t := &Tree{p: p, children: make([][]int, len(p.Resources))}
	at := make(map[string]int, len(p.Resources))
	for i, r := range p.Resources {
		if r == nil {
			continue
		}
		at[r.Address] = i
		if r.Parent == "" {
			continue
		}
		if pi, ok := at[r.Parent]; ok {
			t.children[pi] = append(t.children[pi], i)
		}
	}
	return t
}

// Children are the indices of resource i's direct children declared by
// its step si (every step when si < 0), in plan order.
func (t *Tree) Children(i, si int) []int {
	if i < 0 || i >= len(t.children) {
		return nil
	}
	if si < 0 {
		return t.children[i]
	}
	var out []int
	for _, c := range t.children[i] {
		if t.p.Resources[c].ParentStep == si {
			out = append(out, c)
		}
	}
	return out
}

// ChildWork reports whether a child resource of resource i (or one of
// theirs) changes the host, for any of i's steps.
func (t *Tree) ChildWork(i int) bool { return t.StepChildWork(i, -1) }

// StepChildWork reports whether a child resource that resource i's step
// si declares (or one of its own children) changes the host: a changed
// child marks its parent changed, as Chef's resources inside actions do.
func (t *Tree) StepChildWork(i, si int) bool {
	for _, c := range t.Children(i, si) {
		if t.p.Resources[c].AnyWork() || t.ChildWork(c) {
			return true
		}
	}
	return false
}

// StepWork reports whether resource i's step si changes the host, itself
// or through its child resources.
func (t *Tree) StepWork(i, si int) bool {
	return t.p.Resources[i].StepView(si).Kind.IsWork() || t.StepChildWork(i, si)
}
