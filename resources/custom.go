package resources

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/typedvalue"
)

// This file holds resource types written in HCL (resource_type blocks):
// their compiled definition, TypeDef, and the Type it makes. Package eval
// compiles the HCL into a TypeDef; plans carry the TypeDef of every type
// they use, so that apply and show rebuild the type from the plan alone
// (NewCustomType), and what runs is what was reviewed. custom_run.go runs
// their scripts.

// Steps of an action of a custom type.
const (
	StepConvergeIfChanged = "converge_if_changed"
	StepConvergeBy        = "converge_by"
	StepResource          = "resource"
)

// When a converge_by step runs.
const (
	WhenAlways = "always"
	WhenExists = "exists"
	WhenAbsent = "absent"
)

// ConvergeByWhen lists the values of a converge_by's when; the first is
// the default.
var ConvergeByWhen = []string{WhenAlways, WhenExists, WhenAbsent}

// DefaultLoadTimeout bounds a load_current_value script that sets no
// timeout, as a guard's default does: reading must be quick.
const DefaultLoadTimeout = 60

// TypeDef is a resource type declared in HCL, compiled: what its
// resources need to be read, planned and converged, with no HCL left.
type TypeDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Source is where the resource_type block is (FILE:LINE:COL, the
	// file as plans name recipe files).
	Source     SourcePos      `json:"source"`
	Properties []*PropertyDef `json:"properties"`
	// Load is the load_current_value script; nil when the type has none
	// (every resource then exists and every set property differs).
	Load *ScriptDef `json:"load_current_value,omitempty"`
	// Batch: Load reads every resource of the type in one run, a JSON
	// array in and out.
	Batch         bool         `json:"batch,omitempty"`
	Actions       []*ActionDef `json:"actions"`
	DefaultAction string       `json:"default_action"`
}

// SourcePos is a place in a file.
type SourcePos struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
}

func (s SourcePos) String() string {
	if s.Filename == "" {
		return "(unknown)"
	}
	return fmt.Sprintf("%s:%d:%d", s.Filename, s.Line, s.Column)
}

// PropertyDef is one property of a custom type.
type PropertyDef struct {
	Name         string          `json:"name"`
	Type         typedvalue.Type `json:"type"`
	Description  string          `json:"description,omitempty"`
	Identity     bool            `json:"identity,omitempty"`
	NameProperty bool            `json:"name_property,omitempty"`
	// NonState is desired_state = false.
	NonState  bool              `json:"non_state,omitempty"`
	Required  bool              `json:"required,omitempty"`
	Default   *typedvalue.Value `json:"default,omitempty"`
	Sensitive bool              `json:"sensitive,omitempty"`
	Content   bool              `json:"content,omitempty"`
	// Allowed lists the values the property may have; empty: any.
	Allowed []typedvalue.Value `json:"allowed,omitempty"`
	// Regex is an RE2 expression a string value must match; "": any.
	Regex string `json:"regex,omitempty"`
}

// ActionDef is one action: its steps, in the order they converge.
type ActionDef struct {
	Name  string     `json:"name"`
	Steps []*StepDef `json:"steps"`
}

// StepDef is one step of an action: a converge_if_changed or converge_by
// script, or a child resource (whose values the plan holds; the step
// names it, TYPE[NAME], for the order it converges in).
type StepDef struct {
	Kind string `json:"kind"`
	// Properties are the properties a converge_if_changed covers; empty:
	// every desired-state property.
	Properties []string `json:"properties,omitempty"`
	// Description is a converge_by's; When says when it runs (""
	// always).
	Description string     `json:"description,omitempty"`
	When        string     `json:"when,omitempty"`
	Script      *ScriptDef `json:"script,omitempty"`
	// Resource is a child resource's local address, TYPE[NAME].
	Resource string    `json:"resource,omitempty"`
	Source   SourcePos `json:"source"`
}

// ScriptDef is a script and how it runs: the values of a resource of a
// script type (Type: sh, bash, csh, python, perl, powershell_script, or
// script with an interpreter), whose CommandSpec is the process.
type ScriptDef struct {
	Type   string                      `json:"type"`
	Values map[string]typedvalue.Value `json:"values"`
	Source SourcePos                   `json:"source"`
}

// ScriptTypes names the types a script of a custom type may run as: the
// script family (execute takes a command, not code).
var ScriptTypes = []string{"sh", "bash", "csh", "python", "perl", "powershell_script", "script"}

// Label is how a step is named in plans: its converge group.
// converge_if_changed (mode, content), converge_by "reload the site", or
// the child's address.
func (s *StepDef) Label() string {
	switch s.Kind {
	case StepConvergeIfChanged:
		if len(s.Properties) == 0 {
			return StepConvergeIfChanged
		}
		return StepConvergeIfChanged + " (" + strings.Join(s.Properties, ", ") + ")"
	case StepConvergeBy:
		return fmt.Sprintf("%s %q", StepConvergeBy, s.Description)
	}
	return s.Resource
}

// Action returns the definition of the action called name, or nil.
func (d *TypeDef) Action(name string) *ActionDef {
	for _, a := range d.Actions {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Property returns the definition of the property called name, or nil.
func (d *TypeDef) Property(name string) *PropertyDef {
	for _, p := range d.Properties {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Groups are the converge groups of an action's steps, one per step
// ("" for a child resource), unique within the action: a step's label,
// numbered when two steps share one.
func (a *ActionDef) Groups() []string {
	out := make([]string, len(a.Steps))
	seen := map[string]int{}
	for i, s := range a.Steps {
		if s.Kind == StepResource {
			continue
		}
		l := s.Label()
		seen[l]++
		if n := seen[l]; n > 1 {
			l = fmt.Sprintf("%s #%d", l, n)
		}
		out[i] = l
	}
	return out
}

// Children lists the local addresses of an action's child resources, in
// order.
func (a *ActionDef) Children() []string {
	var out []string
	for _, s := range a.Steps {
		if s.Kind == StepResource {
			out = append(out, s.Resource)
		}
	}
	return out
}

// Check verifies a definition read from a plan file: it is what
// eval compiles, or NewCustomType refuses it.
func (d *TypeDef) Check() error {
	if d.Name == "" {
		return errors.New("a resource type without a name")
	}
	seen := map[string]bool{}
	names := 0
	for _, p := range d.Properties {
		if p == nil || p.Name == "" {
			return fmt.Errorf("type %s: a property without a name", d.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("type %s: property %q is declared twice", d.Name, p.Name)
		}
		seen[p.Name] = true
		if p.Type.Type == cty.NilType {
			return fmt.Errorf("type %s: property %q has no type", d.Name, p.Name)
		}
		if p.NameProperty {
			names++
		}
		if p.Regex != "" {
			if _, err := regexp.Compile(p.Regex); err != nil {
				return fmt.Errorf("type %s: property %q: regex: %w", d.Name, p.Name, err)
			}
		}
	}
	if names > 1 {
		return fmt.Errorf("type %s: more than one name property", d.Name)
	}
	if d.Load != nil {
		if err := d.Load.check(); err != nil {
			return fmt.Errorf("type %s: load_current_value: %w", d.Name, err)
		}
	}
	if len(d.Actions) == 0 {
		return fmt.Errorf("type %s has no action", d.Name)
	}
	acts := map[string]bool{}
	for _, a := range d.Actions {
		if a == nil || a.Name == "" || a.Name == "nothing" || acts[a.Name] {
			return fmt.Errorf("type %s: an action that is empty, nothing, or declared twice", d.Name)
		}
		acts[a.Name] = true
		children := map[string]bool{}
		for _, s := range a.Steps {
			if s == nil {
				return fmt.Errorf("type %s: action %s has an empty step", d.Name, a.Name)
			}
			switch s.Kind {
			case StepConvergeIfChanged, StepConvergeBy:
				if s.Script == nil {
					return fmt.Errorf("type %s: action %s: a %s without its script", d.Name, a.Name, s.Kind)
				}
				if err := s.Script.check(); err != nil {
					return fmt.Errorf("type %s: action %s: %s: %w", d.Name, a.Name, s.Label(), err)
				}
				if s.When != "" && !slices.Contains(ConvergeByWhen, s.When) {
					return fmt.Errorf("type %s: action %s: %s runs when %q, which is not one of %s", d.Name, a.Name, s.Label(), s.When, strings.Join(ConvergeByWhen, ", "))
				}
				for _, name := range s.Properties {
					if p := d.Property(name); p == nil || p.Identity || p.NameProperty || p.NonState {
						return fmt.Errorf("type %s: action %s: converge_if_changed covers %q, which is not a desired-state property", d.Name, a.Name, name)
					}
				}
			case StepResource:
				if children[s.Resource] || s.Resource == "" {
					return fmt.Errorf("type %s: action %s declares the child %q twice", d.Name, a.Name, s.Resource)
				}
				children[s.Resource] = true
			default:
				return fmt.Errorf("type %s: action %s has a step of unknown kind %q", d.Name, a.Name, s.Kind)
			}
		}
	}
	if !acts[d.DefaultAction] {
		return fmt.Errorf("type %s: its default action %q is not one of its actions", d.Name, d.DefaultAction)
	}
	return nil
}

func (s *ScriptDef) check() error {
	if !slices.Contains(ScriptTypes, s.Type) {
		return fmt.Errorf("the script runs as %q, which is not one of %s", s.Type, strings.Join(ScriptTypes, ", "))
	}
	if v, ok := s.Values["code"]; !ok || v.Value == cty.NilVal || v.Value.IsNull() || v.Value.Type() != cty.String {
		return errors.New("the script has no code")
	}
	return nil
}

// customType is a TypeDef as a Type.
type customType struct {
	def    *TypeDef
	schema *Schema
	// groups holds each action's converge groups (ActionDef.Groups).
	groups map[string][]string
	// specs are the processes of the type's scripts (scriptSpec).
	specs map[*ScriptDef]shellexec.Spec
	// sensitive is set when a property is: the scripts' command lines
	// and output are then kept out of logs.
	sensitive bool
}

// batchCustomType is a custom type whose load_current_value reads every
// resource of the type in one run.
type batchCustomType struct {
	*customType
	// timedOut holds the error of a batch of several resources that ran
	// out of time. When a batch fails, the lifecycle reads each resource
	// alone (so that a resource the script chokes on names itself), and
	// a script that hangs would then hang once per resource: those reads
	// return this error instead.
	mu       sync.Mutex
	timedOut error
}

// NewCustomType makes the Type a definition describes. validate holds
// further checks of property values (a property's validation conditions,
// which only the HCL has: apply, which reads values evaluated and checked
// at plan time, passes none).
func NewCustomType(def *TypeDef, validate map[string]func(cty.Value) error, reg *Registry) (Type, error) {
	if def == nil {
		return nil, errors.New("no resource type definition")
	}
	if err := def.Check(); err != nil {
		return nil, err
	}
	t := &customType{def: def, groups: map[string][]string{}, specs: map[*ScriptDef]shellexec.Spec{}}
	addSpec := func(sd *ScriptDef, defaultTimeout int) error {
		spec, err := scriptSpec(reg, sd, defaultTimeout)
		if err != nil {
			return fmt.Errorf("type %s: the script at %s cannot run: %w", def.Name, sd.Source, err)
		}
		t.specs[sd] = spec
		return nil
	}
	if def.Load != nil {
		if err := addSpec(def.Load, DefaultLoadTimeout); err != nil {
			return nil, err
		}
	}
	for _, a := range def.Actions {
		for _, st := range a.Steps {
			if st.Script != nil {
				if err := addSpec(st.Script, 0); err != nil {
					return nil, err
				}
			}
		}
	}
	s := &Schema{Name: def.Name, Description: def.Description, DefaultAction: def.DefaultAction, Identified: true}
	for _, a := range def.Actions {
		s.Actions = append(s.Actions, a.Name)
		t.groups[a.Name] = a.Groups()
	}
	for _, pd := range def.Properties {
		p := &Property{
			Name:         pd.Name,
			Type:         pd.Type.Type,
			Identity:     pd.Identity || pd.NameProperty,
			NameProperty: pd.NameProperty,
			NonState:     pd.NonState,
			Required:     pd.Required,
			Sensitive:    pd.Sensitive,
			Content:      pd.Content,
			Description:  pd.Description,
			Validate:     PropertyDefValidator(pd, validate[pd.Name]),
		}
		if pd.Default != nil {
			p.Default = pd.Default.Value
		}
		t.sensitive = t.sensitive || pd.Sensitive
		s.Properties = append(s.Properties, p)
	}
	t.schema = s
	if def.Batch && def.Load != nil {
		return &batchCustomType{customType: t}, nil
	}
	return t, nil
}

// PropertyDefValidator is the Validate of a custom type's property: its
// allowed values and regex, then extra (its validation conditions); nil
// when there is nothing to check.
func PropertyDefValidator(pd *PropertyDef, extra func(cty.Value) error) func(cty.Value) error {
	var re *regexp.Regexp
	if pd.Regex != "" {
		re = regexp.MustCompile(pd.Regex) // Check compiled it
	}
	if len(pd.Allowed) == 0 && re == nil && extra == nil {
		return nil
	}
	return func(v cty.Value) error {
		if v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() {
			return nil
		}
		if len(pd.Allowed) > 0 {
			ok := false
			var shown []string
			for _, a := range pd.Allowed {
				if av, err := convert.Convert(a.Value, v.Type()); err == nil && av.RawEquals(v) {
					ok = true
					break
				}
				shown = append(shown, displayValue(a.Value))
			}
			if !ok {
				return fmt.Errorf("%s is not allowed: it must be one of %s", displayValue(v), strings.Join(shown, ", "))
			}
		}
		if re != nil {
			if v.Type() != cty.String {
				return fmt.Errorf("%s is not a string, so it cannot match %s", displayValue(v), re)
			}
			if !re.MatchString(v.AsString()) {
				return fmt.Errorf("%q does not match the regular expression %s", v.AsString(), re)
			}
		}
		if extra != nil {
			return extra(v)
		}
		return nil
	}
}

// displayValue shows a value in a message: strings quoted, others as JSON.
func displayValue(v cty.Value) string {
	if v.Type() == cty.String {
		return fmt.Sprintf("%q", v.AsString())
	}
	if b, err := jsonValue(v); err == nil {
		return string(b)
	}
	return v.GoString()
}

// Def is the definition the type was made from.
func (t *customType) Def() *TypeDef { return t.def }

func (t *customType) Schema() *Schema { return t.schema }

// Definer is implemented by resource types declared in HCL: Def is the
// definition a plan carries.
type Definer interface {
	Def() *TypeDef
}

// Composite is implemented by a type whose actions declare child
// resources (a custom type's action holding file, template… blocks): the
// planner plans the children as resources of their own, under the
// parent's address, and apply converges each where Sequence puts it, in
// between the parent's own converge groups.
type Composite interface {
	Type
	// Sequence lists what action converges, in order: each entry is one
	// of the action's converge groups (Group), or one child resource
	// (Child, its local address TYPE[NAME]).
	Sequence(action string) []SequenceItem
}

// SequenceItem is one entry of Composite.Sequence.
type SequenceItem struct {
	Group string
	Child string
}

// Sequence is the order action converges its groups and children in.
func (t *customType) Sequence(action string) []SequenceItem {
	a := t.def.Action(action)
	if a == nil {
		return nil
	}
	groups := t.groups[action]
	out := make([]SequenceItem, len(a.Steps))
	for i, s := range a.Steps {
		if s.Kind == StepResource {
			out[i] = SequenceItem{Child: s.Resource}
		} else {
			out[i] = SequenceItem{Group: groups[i]}
		}
	}
	return out
}

// covered is the set of properties step s of a converges (every
// desired-state property when it names none).
func (t *customType) covered(s *StepDef) []string {
	if len(s.Properties) > 0 {
		return s.Properties
	}
	var out []string
	for _, p := range t.schema.Properties {
		if p.IsDesiredState() {
			out = append(out, p.Name)
		}
	}
	return out
}

// Plan is converge_if_changed as a value. When the thing does not exist,
// every step runs (a converge_by only when it runs always or when
// absent) and the step creates, listing every set property (and default)
// a converge_if_changed covers. When it exists, a converge_if_changed
// runs when a property it covers that the recipe set differs from the
// live value (defaults do not count: an unset property keeps its live
// value), a converge_by when it runs always or when the thing exists;
// the step updates when properties differ, runs when only converge_by
// steps do, and is a no-op otherwise.
func (t *customType) Plan(action string, desired *Resource, current *State) (*Step, error) {
	a := t.def.Action(action)
	if a == nil {
		return nil, UnknownAction(t.schema, action)
	}
	groups := t.groups[action]
	covers := map[string]bool{}
	for _, s := range a.Steps {
		if s.Kind == StepConvergeIfChanged {
			for _, p := range t.covered(s) {
				covers[p] = true
			}
		}
	}
	keep := func(cs []Change) []Change {
		var out []Change
		for _, c := range cs {
			if covers[c.Property] {
				out = append(out, c)
			}
		}
		return out
	}
	step := &Step{}
	if !slices.ContainsFunc(a.Steps, func(s *StepDef) bool { return s.Kind != StepResource }) {
		step.Kind, step.Reason = NoOp, "the "+action+" action converges only its child resources"
		return step, nil
	}
	var by []string
	if !current.Exists {
		step.Changes = keep(CreateDiff(desired))
		for i, s := range a.Steps {
			switch {
			case s.Kind == StepConvergeIfChanged,
				s.Kind == StepConvergeBy && s.When != WhenExists:
				step.Groups = append(step.Groups, groups[i])
			}
		}
		if len(step.Groups) == 0 {
			step.Kind, step.Reason = NoOp, "does not exist, and the "+action+" action does nothing then"
			return step, nil
		}
		step.Kind, step.Reason = Create, "does not exist"
		return step, nil
	}
	step.Changes = keep(Diff(desired, current))
	changed := map[string]bool{}
	for _, c := range step.Changes {
		changed[c.Property] = true
	}
	for i, s := range a.Steps {
		switch s.Kind {
		case StepConvergeIfChanged:
			if slices.ContainsFunc(t.covered(s), func(p string) bool { return changed[p] }) {
				step.Groups = append(step.Groups, groups[i])
			}
		case StepConvergeBy:
			if s.When != WhenAbsent {
				step.Groups = append(step.Groups, groups[i])
				by = append(by, s.Description)
			}
		}
	}
	switch {
	case len(step.Changes) > 0:
		step.Kind, step.Reason = Update, Differ(PropertyNames(step.Changes))
	case len(by) > 0:
		step.Kind, step.Reason = Run, "converge_by always runs: "+strings.Join(by, "; ")
	default:
		step.Kind, step.Reason = NoOp, "already in the desired state"
	}
	return step, nil
}

// The custom types are Composites, and batch ones BatchLoaders.
var (
	_ Composite   = (*customType)(nil)
	_ BatchLoader = (*batchCustomType)(nil)
)
