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
	return predictFromChanges(current, step), nil
}

// predictFromChanges is the framework's prediction (see Predict).
func predictFromChanges(current *State, step *Step) *State {
	switch step.Kind {
	case Delete:
		st := Absent()
		st.Local = current.Local
		return st
	case Create, Update:
		st := current.clone()
		st.Exists = true
		for _, c := range step.Changes {
			if c.After != cty.NilVal {
				st.Values[c.Property] = c.After
			}
		}
		return st
	}
	return current.clone()
}

// predictKind is the file-system types' prediction: the framework's, and
// a thing created is of kind (Extra "kind"), as Load would read it.
func predictKind(current *State, step *Step, kind string) *State {
	st := predictFromChanges(current, step)
	if step.Kind == Create {
		if st.Extra == nil {
			st.Extra = map[string]string{}
		}
		st.Extra["kind"] = kind
		r := *fsr(st)
		r.parentMissing = false
		st.Local = &r
	}
	return st
}

// Predict is the file's and the template's: a created file is a regular
// file.
func (t *fileType) Predict(_ *Resource, current *State, step *Step) (*State, error) {
	return predictKind(current, step, "file"), nil
}

// Predict is the directory's: a created directory is a directory.
func (t *directoryType) Predict(_ *Resource, current *State, step *Step) (*State, error) {
	return predictKind(current, step, "directory"), nil
}

// Predict is the link's: a created link is a symbolic link, or a name of
// its source (a hard link).
func (t *linkType) Predict(desired *Resource, current *State, step *Step) (*State, error) {
	kind := "symlink"
	if desired.String("link_type") == "hard" {
		kind = "file"
	}
	return predictKind(current, step, kind), nil
}

// Predict is the template's: the file's.
func (t *templateType) Predict(desired *Resource, current *State, step *Step) (*State, error) {
	return t.file.Predict(desired, current, step)
}

// clone copies s's maps, so that a prediction never changes the reading
// it starts from. What Load recorded of the objects it read is kept: the
// next action acts on the same thing.
func (s *State) clone() *State {
	c := *s
	c.Values = maps.Clone(s.Values)
	if c.Values == nil {
		c.Values = map[string]cty.Value{}
	}
	c.Extra = maps.Clone(s.Extra)
	c.Private = maps.Clone(s.Private)
	return &c
}
