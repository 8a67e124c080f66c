package plan

import (
	"fmt"

	"github.com/toquehq/toque/resources"
)

// TypeRegistry returns base with the resource types written in HCL that
// the plan carries (Plan.Types), rebuilt from their definitions: what
// apply and show use, so that a plan needs no HCL, and runs the scripts
// reviewers were shown. A definition that is not valid, or that would
// replace one of base's types, is an error.
func (p *Plan) TypeRegistry(base *resources.Registry) (*resources.Registry, error) {
	if len(p.Types) == 0 {
		return base, nil
	}
	types := make([]resources.Type, 0, len(p.Types))
	seen := map[string]bool{}
	for _, def := range p.Types {
		if def == nil {
			return nil, fmt.Errorf("the plan holds an empty resource type")
		}
		if _, builtin := base.Lookup(def.Name); builtin {
			return nil, fmt.Errorf("the plan's resource type %q would replace the built-in type of that name", def.Name)
		}
		if seen[def.Name] {
			return nil, fmt.Errorf("the plan defines the resource type %q twice", def.Name)
		}
		seen[def.Name] = true
		t, err := base.Define(def, nil)
		if err != nil {
			return nil, fmt.Errorf("the plan's resource type %q: %w", def.Name, err)
		}
		types = append(types, t)
	}
	return base.With(types...), nil
}
