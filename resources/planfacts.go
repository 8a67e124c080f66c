package resources

// PlanFacter is implemented by a type whose readings hold, beside the
// thing's state, facts about the plan's circumstances: what a package's
// repositories offer (its candidate), what apt would do, the .debs an
// install unpacks. They take part in staleness like any fact, but they
// are not the thing's state: apply's end-state check, which compares the
// reading at the end of an apply with the state the plan predicted, does
// not compare them. PlanFact says, with no I/O, whether fact (a key of
// State.Extra) is one.
type PlanFacter interface {
	Type
	PlanFact(fact string) bool
}

// IsPlanFact reports whether fact of a reading of type t is about the
// plan's circumstances rather than the thing (t is a PlanFacter that says
// so).
func IsPlanFact(t Type, fact string) bool {
	p, ok := t.(PlanFacter)
	return ok && p.PlanFact(fact)
}
