package plan

import (
	"encoding/json"
	"time"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/typedvalue"
	"github.com/toquehq/toque/resources"
)

// FormatVersion is the plan file format this build writes and reads. A file
// with another major format version is refused.
const FormatVersion = 1

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
	// LockRevision is the policy lock's revision id in policy mode.
	LockRevision string `json:"lock_revision,omitempty"`
	// Salt keys the HMACs that stand in for sensitive live values.
	Salt string `json:"salt"`
	// Errored marks a plan that failed part-way; it can be shown, never
	// applied.
	Errored bool     `json:"errored,omitempty"`
	Errors  []string `json:"errors,omitempty"`
	// Attributes are the merged node attributes, one leaf each, with
	// provenance.
	Attributes []Attribute `json:"attributes"`
	Resources  []*Resource `json:"resources"`
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
type Resource struct {
	Address string `json:"address"` // TYPE[NAME]
	Type    string `json:"type"`
	Name    string `json:"name"`
	Source  Range  `json:"source"`
	// Action is the action the recipe asked for ("create").
	Action string `json:"action"`
	// Kind is what will happen; Reason says why.
	Kind   resources.Kind `json:"kind"`
	Reason string         `json:"reason"`
	// Sensitive marks a resource whose every property is hidden in output.
	Sensitive     bool `json:"sensitive,omitempty"`
	IgnoreFailure bool `json:"ignore_failure,omitempty"`
	// Desired holds the evaluated value of every property the recipe set,
	// in full (sensitive ones too: only the plan file holds them).
	Desired map[string]Value `json:"desired"`
	// SensitiveProperties names the set properties whose values are hidden:
	// those the type marks sensitive, and those whose value the recipe made
	// sensitive (sensitive(), or an expression reading a sensitive node
	// attribute). Every property is, besides, when Sensitive is set.
	SensitiveProperties []string `json:"sensitive_properties,omitempty"`
	// Current is the live value read at plan time; nil when it was not read
	// (a resource skipped by a guard before loading).
	Current *Current `json:"current,omitempty"`
	// Changes are the property changes of a create or update, in schema
	// order.
	Changes []Change `json:"changes,omitempty"`
	// Unmanaged lists state properties the recipe did not set and that will
	// be left as they are, with their live value (for the reviewer).
	Unmanaged []Unmanaged `json:"unmanaged,omitempty"`
	// Context lists properties shown beside the changes so a reviewer sees
	// what the resource is: identity and name properties whose value is not
	// the block label (directory "www" { path = "/srv/www" }), and, for a
	// type that only acts (execute, the script types: no desired-state
	// property), every property the recipe set — what will run, where, as
	// whom. Display forms; sensitive values hidden.
	Context []ContextValue `json:"context,omitempty"`
	// Groups are the converge groups that will run.
	Groups []string `json:"groups,omitempty"`
	// Guards are the guard results in evaluation order, up to the one
	// that decided to skip.
	Guards []GuardResult `json:"guards,omitempty"`
	// GuardSpecs are every guard of the resource, resolved, in evaluation
	// order (those after a deciding guard too), so that apply can evaluate
	// them again without HCL.
	GuardSpecs []*guard.Spec `json:"guard_specs,omitempty"`
	// Notifications are the outgoing notification edges: what this
	// resource notifies when it changes (subscribes edges naming it too).
	Notifications []Notification `json:"notifications,omitempty"`
	// NotifiedBy are the incoming notification edges: which resources
	// notify this one, with which action and timing.
	NotifiedBy []Trigger `json:"notified_by,omitempty"`
	// Fingerprint is a sha256 over everything Load read (absence included).
	Fingerprint string `json:"fingerprint"`
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

// StoredValue is a live property value as kept in the plan: in full when small
// and not sensitive, otherwise only its size and digest.
type StoredValue struct {
	// Value is present when the value is kept in full.
	Value *Value `json:"value,omitempty"`
	// Digest is "sha256:HEX" of the value's canonical JSON, or, for a
	// sensitive value, "hmac-sha256:HEX" keyed with the plan's salt.
	Digest string `json:"digest"`
	// Size is the length in bytes of a string value.
	Size int64 `json:"size,omitempty"`
	// Display is how the value is shown ("(sensitive)", "(12 KiB, sha256:…)").
	Display string `json:"display"`
}

// Change is one property change, already rendered for reviewers.
type Change struct {
	Property string `json:"property"`
	// Before and After are display forms; Before is empty when there was no
	// value.
	Before    string `json:"before,omitempty"`
	After     string `json:"after"`
	Default   bool   `json:"default,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
	// Diff is a unified diff of text content (absent for binary, huge or
	// sensitive content; DiffNote says why).
	Diff     string `json:"diff,omitempty"`
	DiffNote string `json:"diff_note,omitempty"`
}

// Unmanaged is a property left as it is because the recipe did not set it.
type Unmanaged struct {
	Property string `json:"property"`
	Current  string `json:"current"`
}

// ContextValue is a property and its display form.
type ContextValue struct {
	Property string `json:"property"`
	Value    string `json:"value"`
}

// GuardResult records one evaluated guard.
type GuardResult struct {
	Kind        string            `json:"kind"`    // only_if | not_if
	Form        string            `json:"form"`    // script | expression
	Command     string            `json:"command"` // the script, or the expression's source text
	Interpreter string            `json:"interpreter,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	User        string            `json:"user,omitempty"`
	Inherited   []string          `json:"inherited,omitempty"` // parameters inherited from the resource
	ExitCode    *int              `json:"exit_code,omitempty"`
	DurationMS  int64             `json:"duration_ms,omitempty"`
	Output      string            `json:"output,omitempty"`
	Passed      bool              `json:"passed"` // the condition held (true for only_if means run)
	Decided     bool              `json:"decided"`
	Warning     string            `json:"warning,omitempty"`
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
	// Before is true when it runs before that resource converges.
	Slot   int  `json:"slot"`
	Before bool `json:"before,omitempty"`
	// Kind, Reason, Changes and Groups are what the action will do, as
	// for a Resource; Reason starts with "notified by …".
	Kind    resources.Kind `json:"kind"`
	Reason  string         `json:"reason"`
	Changes []Change       `json:"changes,omitempty"`
	Groups  []string       `json:"groups,omitempty"`
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
}

// Counts tallies p's resources by kind. A notified run counts as the work
// it does; an action-nothing resource with such a run is not also counted
// as unchanged.
func (p *Plan) Counts() Counts {
	var c Counts
	for _, r := range p.Resources {
		if !c.add(r.Kind) {
			if r.Action == "nothing" && p.notifiedWork(r.Address) {
				continue // counted by its notified run
			}
			c.NoOp++
		}
	}
	for _, n := range p.NotifiedRuns {
		c.add(n.Kind)
	}
	return c
}

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

// notifiedWork reports whether a planned notified run of addr has work.
func (p *Plan) notifiedWork(addr string) bool {
	for _, n := range p.NotifiedRuns {
		if n.Address == addr && n.HasWork() {
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
