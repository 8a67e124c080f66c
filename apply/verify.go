package apply

import (
	"errors"

	"github.com/toquehq/toque/plan"
)

// verify is Apply's first phase: it refuses a missing or errored plan and
// an Applier without the registry or state directory it needs. It reads
// nothing on disk; the command has already verified the plan file's
// checksum, format version and host. A nil error guarantees that p can be
// applied by a.
func (a *Applier) verify(p *plan.Plan) error {
	if p == nil {
		return errors.New("no plan to apply")
	}
	if p.Errored {
		return errors.New("the plan is marked errored: planning failed part-way, so it can be shown but never applied; fix the errors it lists and run toque plan again")
	}
	if a.Registry == nil {
		return errors.New("apply: no resource type registry")
	}
	if a.StateDir == "" {
		return errors.New("apply: no state directory")
	}
	return nil
}
