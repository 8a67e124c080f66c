package resources

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/internal/typedvalue"
)

// This file holds the definition of resource types written in HCL
// (resource_type blocks): TypeDef. Package eval compiles the HCL into a
// TypeDef; plans carry the TypeDef of every type they use, so that apply
// and show rebuild the type from the plan alone (Registry.Define, which
// resources/hcltype implements), and what runs is what was reviewed.

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
// eval compiles, or hcltype.New refuses it.
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
	if b, err := JSONValue(v); err == nil {
		return string(b)
	}
	return v.GoString()
}

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

// PropEnv is the environment variable a property's value is passed in:
// PROP_ and its name in upper case.
func PropEnv(name string) string { return "PROP_" + strings.ToUpper(name) }

// JSONValue is v as plain JSON.
func JSONValue(v cty.Value) ([]byte, error) {
	if v == cty.NilVal || v.IsNull() {
		return []byte("null"), nil
	}
	return ctyjson.Marshal(v, v.Type())
}

// KeywordLoadCurrentValue names the load script in messages.
const KeywordLoadCurrentValue = "load_current_value"
