// Package resourcetest holds resource types for the tests of the packages
// built on the resource framework (config, eval, plan, apply, guard): types
// that never touch the host, with schemas shaped like the built-in ones.
// Only tests import it, as they import net/http/httptest; it imports
// nothing of toque but the framework's contract.
package resourcetest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// Type is a resource type for tests. Load returns the state Set gave a
// resource's name, or an absent one; Plan is the framework's
// ConvergeIfChanged for a create (and for any action other than delete
// and run), a delete of what exists, and a run every time; its steps
// change nothing and record what they were given (Converged).
type Type struct {
	schema *resources.Schema

	mu        sync.Mutex
	states    map[string]*resources.State
	converged []*resources.Step
}

// New returns a Type of schema s.
func New(s *resources.Schema) *Type {
	return &Type{schema: s, states: map[string]*resources.State{}}
}

func (t *Type) Schema() *resources.Schema { return t.schema }

// Set makes the resource named name exist with values.
func (t *Type) Set(name string, values map[string]cty.Value) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.states[name] = &resources.State{Exists: true, Values: values}
}

// Load returns a copy of the state Set gave r's name, or an absent state.
func (t *Type) Load(_ context.Context, r *resources.Resource) (*resources.State, error) {
	t.mu.Lock()
	st := t.states[r.Name]
	t.mu.Unlock()
	if st == nil {
		return resources.Absent(), nil
	}
	cp := &resources.State{Exists: st.Exists, Values: map[string]cty.Value{}, Extra: st.Extra}
	for k, v := range st.Values {
		cp.Values[k] = v
	}
	return cp, nil
}

func (t *Type) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	switch action {
	case "delete", "remove":
		if !current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: "does not exist"}, nil
		}
		return &resources.Step{Kind: resources.Delete, Reason: "exists"}, nil
	case "run":
		return &resources.Step{Kind: resources.Run, Reason: resources.NoGuardReason}, nil
	}
	return resources.ConvergeIfChanged(desired, current), nil
}

// Steps record each step and change nothing.
func (t *Type) Steps() resources.Steps {
	return resources.Same(func(_ context.Context, _ *resources.Env, _ *resources.Resource, _ *resources.State, step *resources.Step) error {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.converged = append(t.converged, step)
		return nil
	})
}

// Converged lists the steps carried out, in order.
func (t *Type) Converged() []*resources.Step {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*resources.Step(nil), t.converged...)
}

// NormalizeMode accepts 420, "644" and "0644" and returns "0644", as the
// built-in file types' mode does.
func NormalizeMode(v cty.Value) (cty.Value, error) {
	var n int64
	switch v.Type() {
	case cty.Number:
		bf := v.AsBigFloat()
		if !bf.IsInt() {
			return cty.NilVal, fmt.Errorf("mode must be a whole number")
		}
		n, _ = bf.Int64()
	case cty.String:
		var err error
		n, err = strconv.ParseInt(v.AsString(), 8, 32)
		if err != nil {
			return cty.NilVal, fmt.Errorf("mode %q is not an octal number", v.AsString())
		}
	default:
		return cty.NilVal, fmt.Errorf("mode must be a string or a number")
	}
	if n < 0 || n > 0o7777 {
		return cty.NilVal, fmt.Errorf("mode %o is out of range", n)
	}
	return cty.StringVal(fmt.Sprintf("%04o", n)), nil
}

// FileSchema is a file-like type's: an absolute path named by the label,
// content shown as a diff, a mode written either way, a non-state backup
// and a list of tags; actions create (the default), delete and touch.
func FileSchema() *resources.Schema {
	return &resources.Schema{
		Name: "file",
		Properties: []*resources.Property{
			{Name: "path", Type: cty.String, NameProperty: true, Validate: func(v cty.Value) error {
				if !strings.HasPrefix(v.AsString(), "/") {
					return fmt.Errorf("path %q is not absolute", v.AsString())
				}
				return nil
			}},
			{Name: "content", Type: cty.String, Content: true},
			{Name: "mode", Type: cty.DynamicPseudoType, Normalize: NormalizeMode},
			{Name: "backup", Type: cty.Number, NonState: true},
			{Name: "tags", Type: cty.List(cty.String)},
		},
		Actions:       []string{"create", "delete", "touch"},
		DefaultAction: "create",
	}
}

// AccountSchema is a user-like type's: a username named by the label and
// a required uid; actions create (the default) and remove.
func AccountSchema() *resources.Schema {
	return &resources.Schema{
		Name: "account",
		Properties: []*resources.Property{
			{Name: "username", Type: cty.String, NameProperty: true},
			{Name: "uid", Type: cty.Number, Required: true},
		},
		Actions:       []string{"create", "remove"},
		DefaultAction: "create",
	}
}

// Registry holds a file and an account type (FileSchema, AccountSchema).
func Registry() *resources.Registry {
	return resources.NewRegistry(New(FileSchema()), New(AccountSchema()))
}
