package hcltype

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
)

// customType is a TypeDef as a Type.
type customType struct {
	def    *resources.TypeDef
	schema *resources.Schema
	// groups holds each action's converge groups (ActionDef.Groups).
	groups map[string][]string
	// specs are the processes of the type's scripts (scriptSpec).
	specs map[*resources.ScriptDef]shellexec.Spec
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

// New makes the Type a definition describes. validate holds
// further checks of property values (a property's validation conditions,
// which only the HCL has: apply, which reads values evaluated and checked
// at plan time, passes none).
func New(def *resources.TypeDef, validate map[string]func(cty.Value) error, reg *resources.Registry) (resources.Type, error) {
	if def == nil {
		return nil, errors.New("no resource type definition")
	}
	if err := def.Check(); err != nil {
		return nil, err
	}
	t := &customType{def: def, groups: map[string][]string{}, specs: map[*resources.ScriptDef]shellexec.Spec{}}
	addSpec := func(sd *resources.ScriptDef, defaultTimeout int) error {
		spec, err := scriptSpec(reg, sd, defaultTimeout)
		if err != nil {
			return fmt.Errorf("type %s: the script at %s cannot run: %w", def.Name, sd.Source, err)
		}
		t.specs[sd] = spec
		return nil
	}
	if def.Load != nil {
		if err := addSpec(def.Load, resources.DefaultLoadTimeout); err != nil {
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
	s := &resources.Schema{Name: def.Name, Description: def.Description, DefaultAction: def.DefaultAction, Identified: true}
	for _, a := range def.Actions {
		s.Actions = append(s.Actions, a.Name)
		t.groups[a.Name] = a.Groups()
	}
	for _, pd := range def.Properties {
		p := &resources.Property{
			Name:         pd.Name,
			Type:         pd.Type.Type,
			Identity:     pd.Identity || pd.NameProperty,
			NameProperty: pd.NameProperty,
			NonState:     pd.NonState,
			Required:     pd.Required,
			Sensitive:    pd.Sensitive,
			Content:      pd.Content,
			Description:  pd.Description,
			Validate:     resources.PropertyDefValidator(pd, validate[pd.Name]),
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

// Def is the definition the type was made from.
func (t *customType) Def() *resources.TypeDef { return t.def }

func (t *customType) Schema() *resources.Schema { return t.schema }

// Sequence is the order action converges its groups and children in.
func (t *customType) Sequence(action string) []resources.SequenceItem {
	a := t.def.Action(action)
	if a == nil {
		return nil
	}
	groups := t.groups[action]
	out := make([]resources.SequenceItem, len(a.Steps))
	for i, s := range a.Steps {
		if s.Kind == resources.StepResource {
			out[i] = resources.SequenceItem{Child: s.Resource}
		} else {
			out[i] = resources.SequenceItem{Group: groups[i]}
		}
	}
	return out
}

// covered is the set of properties step s of a converges (every
// desired-state property when it names none).
func (t *customType) covered(s *resources.StepDef) []string {
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
func (t *customType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	a := t.def.Action(action)
	if a == nil {
		return nil, resources.UnknownAction(t.schema, action)
	}
	groups := t.groups[action]
	covers := map[string]bool{}
	for _, s := range a.Steps {
		if s.Kind == resources.StepConvergeIfChanged {
			for _, p := range t.covered(s) {
				covers[p] = true
			}
		}
	}
	keep := func(cs []resources.Change) []resources.Change {
		var out []resources.Change
		for _, c := range cs {
			if covers[c.Property] {
				out = append(out, c)
			}
		}
		return out
	}
	step := &resources.Step{}
	if !slices.ContainsFunc(a.Steps, func(s *resources.StepDef) bool { return s.Kind != resources.StepResource }) {
		step.Kind, step.Reason = resources.NoOp, "the "+action+" action converges only its child resources"
		return step, nil
	}
	var by []string
	if !current.Exists {
		step.Changes = keep(resources.CreateDiff(desired))
		for i, s := range a.Steps {
			switch {
			case s.Kind == resources.StepConvergeIfChanged,
				s.Kind == resources.StepConvergeBy && s.When != resources.WhenExists:
				step.Groups = append(step.Groups, groups[i])
			}
		}
		if len(step.Groups) == 0 {
			step.Kind, step.Reason = resources.NoOp, "does not exist, and the "+action+" action does nothing then"
			return step, nil
		}
		step.Kind, step.Reason = resources.Create, "does not exist"
		return step, nil
	}
	step.Changes = keep(resources.Diff(desired, current))
	changed := map[string]bool{}
	for _, c := range step.Changes {
		changed[c.Property] = true
	}
	for i, s := range a.Steps {
		switch s.Kind {
		case resources.StepConvergeIfChanged:
			if slices.ContainsFunc(t.covered(s), func(p string) bool { return changed[p] }) {
				step.Groups = append(step.Groups, groups[i])
			}
		case resources.StepConvergeBy:
			if s.When != resources.WhenAbsent {
				step.Groups = append(step.Groups, groups[i])
				by = append(by, s.Description)
			}
		}
	}
	switch {
	case len(step.Changes) > 0:
		step.Kind, step.Reason = resources.Update, resources.Differ(resources.PropertyNames(step.Changes))
	case len(by) > 0:
		step.Kind, step.Reason = resources.Run, "converge_by always runs: "+strings.Join(by, "; ")
	default:
		step.Kind, step.Reason = resources.NoOp, "already in the desired state"
	}
	return step, nil
}

// The custom types are Composites, and batch ones BatchLoaders.
var (
	_ resources.Composite   = (*customType)(nil)
	_ resources.BatchLoader = (*batchCustomType)(nil)
)
