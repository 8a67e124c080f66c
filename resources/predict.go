package resources

import (
	"fmt"
	"maps"

	"github.com/zclconf/go-cty/cty"
)

// Predictor is implemented by a type whose actions leave a state that its
// steps' Changes do not say (a service's restart, a package's purge of
// its configuration): Predict returns the state desired's action, taking
// step, leaves current in. It must not do I/O.
type Predictor interface {
	Predict(desired *Resource, current *State, step *Step) (*State, error)
}

// Predict is the state a resource's action is expected to leave when it
// takes step from current, so that the next action of the same resource
// (action = ["enable", "start"]) is planned from it: the type's own
// prediction when it implements Predictor, else the framework's — a create
// or update leaves the thing existing with each changed property at its
// new value, a delete leaves it absent, anything else (a run, a no-op, a
// skip) leaves it as it was. current is never changed.
func Predict(t Type, desired *Resource, current *State, step *Step) (*State, error) {
	if p, ok := t.(Predictor); ok {
		st, err := p.Predict(desired, current, step)
		if err == nil && st == nil {
			err = fmt.Errorf("the resource type predicted no state")
		}
		return st, err
	}
	return PredictFromChanges(current, step), nil
}

// PredictFromChanges is the framework's prediction (see Predict).
func PredictFromChanges(current *State, step *Step) *State {
	switch step.Kind {
	case Delete:
		st := Absent()
		st.Local = current.Local
		return st
	case Create, Update:
		st := current.Clone()
		st.Exists = true
		for _, c := range step.Changes {
			if c.After != cty.NilVal {
				st.Values[c.Property] = c.After
			}
		}
		return st
	}
	return current.Clone()
}

// Clone copies s's maps, so that a prediction never changes the reading
// it starts from. What Load recorded of the objects it read is kept: the
// next action acts on the same thing.
func (s *State) Clone() *State {
	c := *s
	c.Values = maps.Clone(s.Values)
	if c.Values == nil {
		c.Values = map[string]cty.Value{}
	}
	c.Extra = maps.Clone(s.Extra)
	c.Private = maps.Clone(s.Private)
	return &c
}
