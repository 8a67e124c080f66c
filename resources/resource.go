package resources

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/words"
)

// Type is one resource type. Built-in types are Go code; types written in
// HCL (resource_type blocks) are adapted to the same interface.
//
// The framework calls the methods in this order for each resource:
// Schema (once, at registration), Load, Plan through PlanStep, and — at
// apply time, after loading again — the function of Steps for the kind of
// step Plan returned for the live state, through ConvergeStep. A type
// writes what is its own: how to read the thing, what each action would
// change, and how to create, update, delete or run it; the framework
// resolves the action, answers "nothing", refuses undeclared actions,
// skips no-ops and words every step a type cannot carry out.
type Type interface {
	// Schema describes the type's properties and actions. It must return the
	// same value every time.
	Schema() *Schema

	// Load reads the live state of the thing r names. r holds only the
	// identity and non-state properties of the desired resource (the seed's
	// "fresh resource"); Load must not read desired-state properties from it.
	// It returns a State whose Values hold the desired-state properties it
	// could read, or a State with Exists false. Load must not change the host.
	// A returned error means the state could not be read (permission denied,
	// I/O error), not that the thing is absent.
	Load(ctx context.Context, r *Resource) (*State, error)

	// Plan decides what action would do to a host in state current.
	// action is one the schema declares, never "nothing" (PlanStep answers
	// it), and desired.Action holds it. Plan does no I/O beyond what Load
	// already did (it may call pure helpers such as Diff). It must be
	// deterministic: apply calls it again on a fresh reading and compares
	// the result with the saved plan.
	Plan(action string, desired *Resource, current *State) (*Step, error)

	// Steps returns the functions that carry out the kinds of step Plan
	// returns (ConvergeStep calls them).
	Steps() Steps
}

// Env is what Converge may use besides the resource itself.
type Env struct {
	// StateDir is toque's state directory; backups go under StateDir/backup.
	StateDir string
	Logger   hclog.Logger
	// Sensitive is set for a sensitive resource: Converge must keep its
	// values (commands, output, content) out of logs and errors.
	Sensitive bool
	// Output, when set, shows the output of a resource that sets
	// live_stream = true, line by line as its process prints it: stream is
	// "stdout" or "stderr", line is one line without its ending, with every
	// character that could drive a terminal escaped (words.Printable). It
	// is never called for a sensitive resource, nor by guards. Calls for
	// one process never overlap, but come from another goroutine than
	// Converge's, while Converge runs; they should return quickly. When
	// Output is nil, live_stream logs the lines at info level instead.
	Output func(stream, line string)
	// Later holds work to do once after a batch of converges (a
	// daemon-reload after unit files changed); see Later. It is shared by
	// every resource of one apply. nil runs deferred work at once.
	Later *Later
}

// Log is env's logger, or one that discards everything when env or its
// Logger is nil.
func (env *Env) Log() hclog.Logger {
	if env == nil || env.Logger == nil {
		return hclog.NewNullLogger()
	}
	return env.Logger
}

// BackupDir is where types keep copies of the files they replace and
// delete, under the state directory (Env.StateDir).
func BackupDir(stateDir string) string { return filepath.Join(stateDir, "backup") }

// Kind is what a planned step does to the host.
type Kind string

const (
	NoOp   Kind = "no-op"
	Create Kind = "create"
	Update Kind = "update"
	Delete Kind = "delete"
	Run    Kind = "run"
	// Skip is set by the planner (a guard decided), never by a type.
	Skip Kind = "skip"
)

// IsWork reports whether a step of kind k changes the host (create,
// update, delete, run), as opposed to a no-op or a skip.
func (k Kind) IsWork() bool {
	switch k {
	case Create, Update, Delete, Run:
		return true
	}
	return false
}

// Step is the outcome of Plan: what the action will do, and why.
type Step struct {
	Kind Kind
	// Reason says why, in words a reviewer reads: "does not exist",
	// "content differs", "already in the desired state".
	Reason string
	// Changes lists property changes (empty for delete and run).
	Changes []Change
	// Groups names the converge groups that will run, in order.
	Groups []string
	// Needs are what the step needs on the host and the host lacked when
	// it was read (the parent directory of a file to create): the planner
	// refuses the plan unless an earlier step provides each one, so apply
	// never fails half-way on it.
	Needs []Need
	// Provides are what the step makes exist (a directory it creates,
	// with the parents a recursive create makes), for later steps' Needs.
	Provides []Need
}

// Need is one thing on the host, in a namespace of identities
// (NamespacePath: a directory path).
type Need struct {
	Namespace string
	Value     string
	// What words it for a reviewer: "directory".
	What string
	// Missing, when set, is what the plan says when no earlier step
	// provides the need, in place of the planner's wording for a missing
	// directory ("package nginx is not available from any configured
	// repository…").
	Missing string
	// AtApply marks a need that an earlier step meets only when it runs,
	// at apply, and Property the value of this step that is known only
	// then: a package that no configured repository offers yet, but that
	// an earlier apt_update of the plan may find, has its version known
	// only once those lists are read. The step holds a change of Property
	// whose After is unknown (what it would be, were the need met). The
	// planner accepts such a step only when an earlier step of the plan
	// with work meets the need (NeedMeeter): the plan then carries
	// Property as a value the type knows only at apply, and apply reads
	// and plans the resource again right before converging it, failing
	// it if the need is still unmet. When no earlier step meets it, the
	// need is Missing, as any other. A need met at apply names a Property;
	// StillMissing is what apply says when the need is still unmet right
	// before the step converges (the type's words, as Missing's).
	AtApply      bool
	Property     string
	StillMissing string
	// Prediction, on a need a step provides (Step.Provides), says what the
	// thing will be once the step has run, when the step can know it (a
	// file a package ships: its mode, owner and, for a configuration
	// file, its content). The planner builds the plan's Foresight from
	// these.
	Prediction *Prediction
}

// NeedMeeter is implemented by a type whose steps with work meet needs
// that later steps wait for at apply (Need.AtApply): apt_update, whose
// run reads the lists a package's version is known from. Meets says,
// from a resource's desired values and action alone, with no I/O, whether
// a step of it with work meets n. The planner asks it of the resources
// converging before one whose value waits, and a plan is checked with it
// when it is read, so that a plan defers a value only to what its own
// earlier resources provide.
type NeedMeeter interface {
	Type
	Meets(desired *Resource, n Need) bool
}

// MeetsNeed reports whether a step of desired's type t with work meets n
// (t is a NeedMeeter that says so).
func MeetsNeed(t Type, desired *Resource, n Need) bool {
	m, ok := t.(NeedMeeter)
	return ok && desired != nil && m.Meets(desired, n)
}

// Awaiter is implemented by a type whose steps may leave a value known
// only at apply (Need.AtApply). KnownFrom reports whether fact, a key of
// its reading's State.Extra, is one of those property is known from (for
// package's version: what the repositories offer), with no I/O. A plan
// that defers property leaves those facts unchecked: pre-flight, which
// treats property as unknown, does not call the plan stale because one
// moved, nor does apply report the resource as differing from the plan;
// every other part of the reading is compared exactly.
type Awaiter interface {
	Type
	KnownFrom(property, fact string) bool
}

// KnownFrom reports whether fact of a reading of type t is one that
// property, deferred to apply, is known from (t is an Awaiter that says
// so).
func KnownFrom(t Type, property, fact string) bool {
	a, ok := t.(Awaiter)
	return ok && a.KnownFrom(property, fact)
}

// AwaitedNeeds lists the needs of step that an earlier step meets only at
// apply, each naming the value it leaves unknown (Need.AtApply).
func (st *Step) AwaitedNeeds() []Need {
	var out []Need
	for _, n := range st.Needs {
		if n.AtApply && n.Property != "" {
			out = append(out, n)
		}
	}
	return out
}

// MissingError says the host lacks something a value names (a user or a
// group by name) that an earlier resource of the plan may create. A
// HostCheck returns it so that the planner makes it a need of the step
// (Step.Needs) rather than an error: the plan fails only when no earlier
// step provides it.
type MissingError struct{ Need Need }

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s %q does not exist on this host", e.Need.What, e.Need.Value)
}

// Change is one property that will change.
type Change struct {
	Property string
	// Before is the live value (cty.NilVal when the thing does not exist or
	// the property was not readable).
	Before cty.Value
	// After is the value it will have.
	After cty.Value
	// Default is true when After is the schema default (the recipe did not
	// set the property and the thing is being created).
	Default bool
	// Note is one line the plan shows under the change for a reviewer
	// ("apt also installs libfoo 1.2-1"); never for a sensitive value.
	Note string
}

// Groups returns the distinct converge groups of changes, in schema order.
func (s *Schema) Groups(changes []Change) []string {
	seen := map[string]bool{}
	for _, c := range changes {
		if p := s.Property(c.Property); p != nil {
			seen[p.GroupName()] = true
		}
	}
	var out []string
	for _, p := range s.Properties {
		g := p.GroupName()
		if seen[g] {
			out = append(out, g)
			delete(seen, g)
		}
	}
	return out
}

// HasGroup reports whether step runs converge group g.
func (st *Step) HasGroup(g string) bool {
	for _, x := range st.Groups {
		if x == g {
			return true
		}
	}
	return false
}

// Change returns the change of property name, or nil.
func (st *Step) Change(name string) *Change {
	for i := range st.Changes {
		if st.Changes[i].Property == name {
			return &st.Changes[i]
		}
	}
	return nil
}

// State is the live value of a resource, as Load read it.
type State struct {
	Exists bool
	// Values holds the desired-state properties read from the host.
	Values map[string]cty.Value
	// Extra holds facts read from the host that are not properties but
	// that the plan depends on (for example the kind of file found at a
	// path). They take part in the staleness fingerprint.
	Extra map[string]string
	// Private names live values that no output may show beyond their size
	// and digest, each with the reason, which outputs show instead (a
	// file's current content when not every user of the host may read
	// it). It applies to Content properties: the planner shows no diff
	// from a private value. Not part of the fingerprint: Load derives it
	// from what Values and Extra hold and from the directories on the way.
	Private map[string]string

	// Local is what a type's Load hands its own Plan and steps, and no
	// one else reads (the identity of the file Load read, so that a step
	// changes that file and no other; a download Load made): never
	// stored in a plan nor compared. A prediction keeps it as it was.
	Local any
}

// Absent is the State of a thing that does not exist.
func Absent() *State { return &State{Exists: false, Values: map[string]cty.Value{}} }

// Resource is one evaluated resource: its type, name, requested action and
// the property values the recipe set.
type Resource struct {
	Type string
	// Name is the block's label; Key, for an instance of a block with
	// for_each or count, which instance it is (the zero Key otherwise).
	Name   string
	Key    Key
	Action string
	// Values holds the properties the recipe set (normalised and converted
	// to their schema types), including the name property, which defaults to
	// the block label.
	Values map[string]cty.Value
	schema *Schema
	// secretAll and secret say which values carry secrets beyond the
	// schema's sensitive properties: every value (a sensitive resource),
	// or those the recipe made sensitive. Set with WithSecrets; a type
	// that hands values to a process keeps them off its command line and
	// out of its environment (IsSecret).
	secretAll bool
	secret    []string
	// later are the actions the resource takes after this one
	// (WithLater), for a Load whose reading serves them too.
	later []string
}

// WithLater returns a copy of r (values shared) that knows the actions
// the resource takes after its Action (action = ["install", "upgrade"]):
// the planner and apply read a resource of several actions once, and the
// later actions are planned from the state the first is predicted to
// leave, so a Load that reads only what the action needs (a package's
// candidate only when an action may install it) reads for them too.
func (r *Resource) WithLater(actions []string) *Resource {
	c := *r
	c.later = actions
	return &c
}

// Later lists the actions the resource takes after its Action (WithLater).
func (r *Resource) Later() []string { return r.later }

// NewResource makes a Resource of schema s. values holds the set properties.
func NewResource(s *Schema, name, action string, values map[string]cty.Value) *Resource {
	if values == nil {
		values = map[string]cty.Value{}
	}
	return &Resource{Type: s.Name, Name: name, Action: action, Values: values, schema: s}
}

// WithAction returns a copy of r whose action is action (the values are
// shared: resources are not changed after evaluation).
func (r *Resource) WithAction(action string) *Resource {
	c := *r
	c.Action = action
	return &c
}

// Schema returns the resource's schema.
func (r *Resource) Schema() *Schema { return r.schema }

// Address is TYPE[NAME], how resources are named in output and
// notifications, followed by the instance key of an instance of a block
// with for_each or count (template[vhost]["a.com"]).
func (r *Resource) Address() string { return InstanceAddress(r.Type, r.Name, r.Key) }

// Address formats TYPE[NAME].
func Address(typ, name string) string { return fmt.Sprintf("%s[%s]", typ, name) }

// IsSet reports whether the recipe set property name.
// Things lists the things r changes, as needs (Namespace and Value): the
// value of each identity or name property of a namespace, and of each
// property that shares one (Property.Shares: an editor's path, and each
// element of a list such as an execute's writes).
func (r *Resource) Things() []Need {
	var out []Need
	for _, p := range r.Schema().Properties {
		ns := p.Namespace
		if ns == "" {
			ns = p.Shares
		}
		if ns == "" || !r.IsSet(p.Name) {
			continue
		}
		v := r.Values[p.Name]
		switch {
		case v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull():
		case v.Type() == cty.String && (p.Identity || p.NameProperty || p.Shares != ""):
			if s := v.AsString(); s != "" {
				out = append(out, Need{Namespace: ns, Value: s})
			}
		case p.Shares != "" && (v.Type().IsListType() || v.Type().IsSetType() || v.Type().IsTupleType()):
			for it := v.ElementIterator(); it.Next(); {
				if _, x := it.Element(); !x.IsNull() && x.Type() == cty.String && x.AsString() != "" {
					out = append(out, Need{Namespace: ns, Value: x.AsString()})
				}
			}
		}
	}
	return out
}

func (r *Resource) IsSet(name string) bool {
	v, ok := r.Values[name]
	return ok && v != cty.NilVal && !v.IsNull()
}

// Get returns the set value of name, or its default, or a null value.
func (r *Resource) Get(name string) cty.Value {
	if r.IsSet(name) {
		return r.Values[name]
	}
	if p := r.schema.Property(name); p != nil {
		if p.Default != cty.NilVal {
			return p.Default
		}
		return cty.NullVal(p.Type)
	}
	return cty.DynamicVal
}

// String returns the string value of name ("" when null).
func (r *Resource) String(name string) string {
	v := r.Get(name)
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// Bool returns the bool value of name (false when null).
func (r *Resource) Bool(name string) bool {
	v := r.Get(name)
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Bool {
		return false
	}
	return v.True()
}

// Int returns the number value of name as an int (0 when null).
func (r *Resource) Int(name string) int {
	v := r.Get(name)
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Number {
		return 0
	}
	i, _ := v.AsBigFloat().Int64()
	return int(i)
}

// WithSecrets returns a copy of r (values shared) whose every value is a
// secret when all is set, and else those of props, besides the schema's
// sensitive properties.
func (r *Resource) WithSecrets(all bool, props []string) *Resource {
	c := *r
	c.secretAll, c.secret = all, props
	return &c
}

// IsSecret reports whether the value of property name carries a secret:
// the resource is sensitive, the property is, or the recipe made its
// value sensitive.
func (r *Resource) IsSecret(name string) bool {
	if r.secretAll || slices.Contains(r.secret, name) {
		return true
	}
	p := r.schema.Property(name)
	return p != nil && p.Sensitive
}

// LoadView is the seed's fresh resource: a copy holding only the identity
// and non-state properties of r (plus any marked LoadInput). Load receives it.
//
// A value known only at apply (lazy(…), unknown until then) is left out:
// Load reads as if it were not set, and is given it once it is known.
func (r *Resource) LoadView() *Resource {
	out := NewResource(r.schema, r.Name, r.Action, nil)
	out.Key = r.Key
	out.secretAll, out.secret, out.later = r.secretAll, r.secret, r.later
	for k, v := range r.Values {
		if v != cty.NilVal && !v.IsWhollyKnown() {
			continue
		}
		if p := r.schema.Property(k); p != nil && (p.Identity || p.NameProperty || !p.IsDesiredState() || p.LoadInput) {
			out.Values[k] = v
		}
	}
	return out
}

// Schema describes a resource type.
type Schema struct {
	// Name is the type name used in recipes: "file".
	Name string
	// Properties, in the order they are shown.
	Properties []*Property
	// Actions the type accepts; DefaultAction is used when none is given.
	Actions       []string
	DefaultAction string
	// Description is one line for docs and errors.
	Description string
	// Identified says that the identity and name properties together name
	// one thing on the host (a custom type's identity, as in Chef): two
	// resources of the type with the same values manage the same thing,
	// which the recipe check refuses as it refuses one path managed twice
	// (Property.Namespace).
	Identified bool

	indexOnce sync.Once
	index     map[string]*Property
}

// Property returns the named property, or nil. It is safe for concurrent
// use (the planner loads resources in parallel).
func (s *Schema) Property(name string) *Property {
	s.indexOnce.Do(func() {
		s.index = make(map[string]*Property, len(s.Properties))
		for _, p := range s.Properties {
			s.index[p.Name] = p
		}
	})
	return s.index[name]
}

// PropertyNames lists the names of s's properties, in order, in a new
// slice.
func (s *Schema) PropertyNames() []string {
	names := make([]string, len(s.Properties))
	for i, p := range s.Properties {
		names[i] = p.Name
	}
	return names
}

// NameProperty returns the property that defaults to the block label, or nil.
func (s *Schema) NameProperty() *Property {
	for _, p := range s.Properties {
		if p.NameProperty {
			return p
		}
	}
	return nil
}

// HasAction reports whether a is one of the type's actions ("nothing" is
// accepted by every type).
func (s *Schema) HasAction(a string) bool {
	if a == "nothing" {
		return true
	}
	for _, x := range s.Actions {
		if x == a {
			return true
		}
	}
	return false
}

// Property describes one typed value of a resource.
type Property struct {
	Name string
	// Type is the cty type values are converted to. cty.DynamicPseudoType
	// accepts any type and leaves conversion to Normalize (mode takes
	// strings and numbers).
	Type cty.Type
	// Identity properties name the thing (path).
	Identity bool
	// NameProperty defaults to the block label. It is also an identity.
	NameProperty bool
	// NonState marks desired_state = false: how to act, not what to reach
	// (backup, atomic_update). Non-state properties are never compared.
	NonState bool
	Required bool
	// Default is used when the recipe does not set the property and the
	// thing is created. cty.NilVal means no default.
	Default   cty.Value
	Sensitive bool
	// Content marks a text property shown as a unified diff and kept in the
	// plan as size and digest when large (file content).
	Content bool
	// Group is the converge group (the seed's compound converge_if_changed);
	// empty means the property is its own group.
	Group string
	// Normalize returns the canonical form used to compare values (mode
	// "644" → "0644"). It must be pure; it is applied to desired values when
	// they are decoded and to live values before comparison. nil: identity.
	Normalize func(cty.Value) (cty.Value, error)
	// Equal, when set, compares two normalised values (owner "root" equals
	// owner "0"). It may consult the host's user database. nil: cty equality.
	Equal func(a, b cty.Value) bool
	// Validate checks a decoded value without I/O; its error becomes a
	// diagnostic on the attribute.
	Validate func(cty.Value) error
	// HostCheck checks a set value against the host at plan time, reading
	// only (an owner that must exist). The planner calls it before Load, so
	// a value apply could not use fails the plan instead of half an apply.
	// A *MissingError is not a failure but a need of the resource's steps
	// (a user an earlier user resource creates). validate does not call
	// it: it never reads the host.
	HostCheck func(cty.Value) error
	// LoadInput marks a desired-state property that Load also receives in
	// LoadView, because the live state can only be read relative to it (the
	// seed passes load_current_value the desired resource "in case it is
	// needed"): link's `to`, without which a hard link cannot be told from a
	// plain file. The property is still compared and converged; Load must
	// never copy it into the State without checking the host.
	LoadInput bool
	// Namespace, on an identity property, names what its value identifies
	// on the host: two resources whose identity properties of the same
	// namespace hold the same value manage the same thing and would fight
	// on every apply (a file and a template at one path), which is an
	// error. "" means the value identifies nothing shared (execute's
	// command may run twice).
	Namespace string
	// Shares, on a property without a Namespace, names the namespace of a
	// thing the resource changes together with others of the plan (the
	// editors of one file, and the file that creates it; each path of an
	// execute's writes), read through Resource.Things:
	// no duplicate, but apply's end-state check knows that a later
	// resource on the same thing may leave it otherwise than this one's
	// steps predict, and plan.Writers bounds what the resource could change
	// to that path, as it does a path identity's.
	Shares string
	// Runs marks a setting whose value is a command apply runs (a file's
	// verify): the plan shows it whenever the resource has work, not only
	// when it creates or deletes, so that a reviewer sees every command.
	Runs bool
	// SensitiveWhen, when set, hides a set value for which it returns true
	// as if the recipe had written it with sensitive(): a URL that carries
	// a password (https://user:secret@host/…) is shown as "(sensitive)" in
	// every output, and kept in full only in the plan file. It gets the
	// normalised value and does no I/O.
	SensitiveWhen func(cty.Value) bool
	// Warn, when set, returns a warning about a valid value that is
	// probably not what the recipe meant (mode = 644, a decimal number
	// that reads like octal), or "". It gets the value as written, before
	// Normalize.
	Warn func(cty.Value) string
	// Description is one line for docs.
	Description string
}

// NamespacePath is the namespace of file-system paths (file, template,
// directory and link).
const NamespacePath = "path"

// Unknown is the property's value while it is known only at apply
// (lazy(…)): an unknown value of its type. Load and Plan may see it (a
// plan is made with it); Converge never does.
func (p *Property) Unknown() cty.Value {
	if p.Type == cty.NilType || p.Type == cty.DynamicPseudoType {
		return cty.DynamicVal
	}
	return cty.UnknownVal(p.Type)
}

// NamespaceUser and NamespaceGroup are the namespaces of user and group
// names in the host's account databases: a user resource's name, a step
// that needs a user to exist (a group member, a cron file's user) or a
// group (a user's primary group, by name or id).
const (
	NamespaceUser  = "user"
	NamespaceGroup = "group"
)

// NamespaceAptSource is the namespace of the need "a repository offers
// this package", met at apply by an earlier apt_update that runs (it
// reads the lists of the repositories an apt_repository adds); an
// apt_repository that adds or changes one provides it too, but apt sees
// the repository only once its lists are read.
const NamespaceAptSource = "apt-source"

// NamespaceUnit is the namespace of unit names ("web.service"): a
// systemd_unit that writes a unit's file provides the unit
// (Step.Provides), and an action on a unit the host lacks needs it
// (Step.Needs), so the plan refuses a service nothing creates.
const NamespaceUnit = "unit"

// NoGuardReason is the Reason of a run step that nothing decided: no guard
// and no `creates`. The planner replaces it when a guard decides.
const NoGuardReason = "no guard: runs every time"

// PropertyError is a Plan error caused by one property's value on this
// host (a uid another user has): the planner points its diagnostic at
// that property's attribute rather than at the whole block.
type PropertyError struct {
	Property string
	Err      error
}

func (e *PropertyError) Error() string { return e.Err.Error() }

func (e *PropertyError) Unwrap() error { return e.Err }

// IsDesiredState reports whether the property is compared and converged.
func (p *Property) IsDesiredState() bool { return !p.NonState && !p.Identity && !p.NameProperty }

// GroupName is the converge group the property belongs to.
func (p *Property) GroupName() string {
	if p.Group != "" {
		return p.Group
	}
	return p.Name
}

// Equals compares two values of the property after normalisation.
func (p *Property) Equals(a, b cty.Value) bool {
	if a == cty.NilVal || b == cty.NilVal {
		return a == b
	}
	if a.IsNull() || b.IsNull() {
		return a.IsNull() && b.IsNull()
	}
	if a.RawEquals(b) {
		return true // the same value normalises the same
	}
	if p.Normalize != nil {
		if na, err := p.Normalize(a); err == nil {
			a = na
		}
		if nb, err := p.Normalize(b); err == nil {
			b = nb
		}
	}
	if p.Equal != nil {
		return p.Equal(a, b)
	}
	if !a.Type().Equals(b.Type()) {
		return false
	}
	return a.RawEquals(b)
}

// Diff is converge_if_changed: the set desired-state properties whose
// desired value differs from the live one. Properties the recipe did not set
// keep their live value and never appear.
func Diff(desired *Resource, current *State) []Change {
	s := desired.schema
	var out []Change
	for _, p := range s.Properties {
		if !p.IsDesiredState() || !desired.IsSet(p.Name) {
			continue
		}
		want := desired.Values[p.Name]
		have, ok := current.Values[p.Name]
		if ok && have != cty.NilVal && p.Equals(want, have) {
			continue
		}
		before := cty.NilVal
		if ok {
			before = have
		}
		out = append(out, Change{Property: p.Name, Before: before, After: want})
	}
	return out
}

// CreateDiff lists what creating desired sets: every set desired-state
// property, and each default it will use (marked Default).
func CreateDiff(desired *Resource) []Change {
	s := desired.schema
	var out []Change
	for _, p := range s.Properties {
		if !p.IsDesiredState() {
			continue
		}
		if desired.IsSet(p.Name) {
			out = append(out, Change{Property: p.Name, Before: cty.NilVal, After: desired.Values[p.Name]})
		} else if p.Default != cty.NilVal && !p.Default.IsNull() {
			out = append(out, Change{Property: p.Name, Before: cty.NilVal, After: p.Default, Default: true})
		}
	}
	return out
}

// ConvergeIfChanged is the common Plan for a "create" action: create when
// absent, update the changed set properties when present, no-op otherwise.
func ConvergeIfChanged(desired *Resource, current *State) *Step {
	s := desired.schema
	if !current.Exists {
		ch := CreateDiff(desired)
		return &Step{Kind: Create, Reason: "does not exist", Changes: ch, Groups: s.Groups(ch)}
	}
	ch := Diff(desired, current)
	if len(ch) == 0 {
		return &Step{Kind: NoOp, Reason: "already in the desired state"}
	}
	return &Step{Kind: Update, Reason: Differ(PropertyNames(ch)), Changes: ch, Groups: s.Groups(ch)}
}

// PropertyNames lists the properties of changes, in order.
func PropertyNames(changes []Change) []string {
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = c.Property
	}
	return names
}

// Differ is an update's reason: "content differs", "mode and owner
// differ".
func Differ(names []string) string {
	if len(names) == 1 {
		return words.Join(names, "") + " differs"
	}
	return words.Join(names, "") + " differ"
}

// Registry maps type names to types, and makes the types written in HCL
// (resource_type blocks, which plans carry as TypeDefs) with the function
// its assembler gives it (WithDefine).
type Registry struct {
	types map[string]Type
	// data are the data sources (data blocks), by name (data.go).
	data   map[string]DataSource
	define DefineFunc
}

// DefineFunc makes the type def defines, whose scripts run as reg's script
// types (Runner); validate holds further checks of property values (a
// property's validation conditions, which only the HCL has).
type DefineFunc func(def *TypeDef, validate map[string]func(cty.Value) error, reg *Registry) (Type, error)

// NewRegistry makes a registry of the given types, which defines none
// written in HCL (WithDefine).
func NewRegistry(types ...Type) *Registry {
	r := &Registry{types: map[string]Type{}, data: map[string]DataSource{}}
	for _, t := range types {
		r.types[t.Schema().Name] = t
	}
	return r
}

// With returns a new registry of r's types and data sources, and types
// (which replace r's of the same name).
func (r *Registry) With(types ...Type) *Registry {
	out := &Registry{types: make(map[string]Type, len(r.types)+len(types)), data: make(map[string]DataSource, len(r.data)), define: r.define}
	for k, v := range r.types {
		out.types[k] = v
	}
	for k, v := range r.data {
		out.data[k] = v
	}
	for _, t := range types {
		out.types[t.Schema().Name] = t
	}
	return out
}

// WithDefine returns a copy of r that makes the types written in HCL with
// f.
func (r *Registry) WithDefine(f DefineFunc) *Registry {
	out := r.With()
	out.define = f
	return out
}

// Define makes the type def defines (DefineFunc). It is an error for a
// registry that was given no way to (WithDefine).
func (r *Registry) Define(def *TypeDef, validate map[string]func(cty.Value) error) (Type, error) {
	if r.define == nil {
		return nil, fmt.Errorf("resource type %s is written in HCL, and this build of toque's types cannot run such types", def.Name)
	}
	return r.define(def, validate, r)
}

// Runner returns the script type called name (one of ScriptTypes), which
// runs the scripts of types written in HCL.
func (r *Registry) Runner(name string) (Runner, bool) {
	if !slices.Contains(ScriptTypes, name) {
		return nil, false
	}
	t, ok := r.types[name].(Runner)
	return t, ok
}

// Has reports whether r holds a type called name.
func (r *Registry) Has(name string) bool {
	_, ok := r.types[name]
	return ok
}

// Lookup returns the type called name.
func (r *Registry) Lookup(name string) (Type, bool) {
	t, ok := r.types[name]
	return t, ok
}

// Names lists the registered type names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.types))
	for n := range r.types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Runner is implemented by types whose action runs a process: execute and
// the script family (bash, sh, csh, python, perl, powershell_script,
// script). Guard interpreters build a resource of such a type, with the
// guard string as its code, and run it.
type Runner interface {
	Type
	// CommandSpec is the process r runs. It does no I/O; the caller adds
	// a logger and runs it with shellexec.Run.
	CommandSpec(r *Resource) (shellexec.Spec, error)
}

// BatchLoader is implemented by a type that reads the live state of many
// resources with one call (one dpkg-query for every package, one
// systemctl show for every unit, one parse of /etc/passwd): the planner,
// and apply's pre-flight, call LoadAll once per type with every resource
// of it that is read, and plan each from its reading instead of calling
// Load per resource. Load is still called for the re-read right before a
// resource converges, and when LoadAll fails (each resource then reports
// its own error).
type BatchLoader interface {
	Type
	// LoadAll reads what each of rs names (each a LoadView, as Load gets)
	// and returns one State per resource, in the order of rs. Like Load,
	// it must not change the host. A nil State leaves that resource to
	// Load (one whose own reading failed, which Load then reports).
	LoadAll(ctx context.Context, rs []*Resource) ([]*State, error)
}

// BatchSharer is a BatchLoader whose batch holds resources of other types
// too: types that read one thing together, each planned from what the
// ones declared before it leave (file_line, file_block and ini_setting,
// which edit one file: each is planned on the content the editors before
// it leave). The planner and pre-flight read every resource of the types
// whose BatchKey is the same with one LoadAll (of the first such type they
// meet), in declaration order. Such a LoadAll may return, for a resource
// after others of its batch, the state those are predicted to leave rather
// than the state Load would read: what Load reads right before the
// resource converges, once the others converged. The planner reads on its
// own (Load, not in the batch) a resource whose guards may skip it, so
// that what the others are planned on never depends on a guard.
type BatchSharer interface {
	BatchLoader
	BatchKey() any
}

// BatchKeyOf is the key the resources of t are read in batches under: its
// BatchKey when it is a BatchSharer, else t itself.
func BatchKeyOf(t BatchLoader) any {
	if s, ok := t.(BatchSharer); ok {
		return s.BatchKey()
	}
	return t
}
