package apply

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// allowed checks that step, planned from a reading taken in this run, does
// no more than the plan showed: the same kind of step (or an update instead
// of a planned create), changing only properties the plan listed, to the
// values the plan showed for those the type computes from the host
// (samePlanned). Every path that converges a resource asks it: one at a
// time, a staged group, a child resource.
func allowed(pr *plan.Resource, step *resources.Step) error {
	if err := withinKinds(pr, step); err != nil {
		return err
	}
	return samePlanned(pr, step)
}

// withinKinds is allowed's check of the step's kind and properties.
func withinKinds(pr *plan.Resource, step *resources.Step) error {
	planned, now := pr.Kind, step.Kind
	if planned != now && !(planned == resources.Create && now == resources.Update) {
		return fmt.Errorf("refused to %s: the plan showed %s, and an earlier change in this run means the resource now needs %s, which nobody reviewed; run toque plan again", now, planned, now)
	}
	if now != resources.Create && now != resources.Update {
		return nil
	}
	shown := map[string]bool{}
	for _, c := range pr.Changes {
		shown[c.Property] = true
	}
	var extra []string
	for _, c := range step.Changes {
		if !shown[c.Property] {
			extra = append(extra, c.Property)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("refused to %s: after an earlier change in this run it would also change %s, which the plan did not show as changing; run toque plan again", now, strings.Join(extra, ", "))
	}
	return nil
}

// samePlanned checks that step, planned from a reading taken in this run,
// gives each property whose value the type computes from the host (the
// version apt would install, the sha256 of what a URL serves: a change's
// Planned value) the value the plan showed. The host may move after
// pre-flight — an earlier resource of the run updates apt's lists — and
// apply must not then carry out a value nobody reviewed.
func samePlanned(pr *plan.Resource, step *resources.Step) error {
	planned := map[string]*plan.Value{}
	for _, c := range pr.Changes {
		if c.Planned != nil {
			planned[c.Property] = c.Planned
		}
	}
	for _, c := range step.Changes {
		want, ok := planned[c.Property]
		if !ok || c.After == cty.NilVal {
			continue
		}
		if !want.Value.RawEquals(c.After) {
			shown := func(v cty.Value) string {
				if pr.Sensitive || slices.Contains(pr.SensitiveProperties, c.Property) {
					return plan.Sensitive
				}
				// A file's content is summed up, as a stale plan's is,
				// rather than quoted whole, twice, on one line.
				if v.IsKnown() && !v.IsNull() && v.Type() == cty.String && (len(v.AsString()) > 80 || strings.Contains(v.AsString(), "\n")) {
					return plan.Summary(int64(len(v.AsString())), plan.DigestValue(v, "", false))
				}
				return plan.DisplayValue(v)
			}
			return fmt.Errorf("refused to %s: %s would now become %s, but the plan showed %s (the host changed during this apply); run toque plan again", step.Kind, c.Property, shown(c.After), shown(want.Value))
		}
	}
	return nil
}

// describeDifferences says how now, a reading of pr (of type t), differs
// from the plan's; "" when only what its values known at apply by its
// type are known from moved (exactDifferences).
func describeDifferences(t resources.Type, pr *plan.Resource, now *plan.Current) string {
	then := pr.Current
	if then == nil {
		return "not read at plan time"
	}
	ds := exactDifferences(t, pr, then, now)
	switch {
	case len(ds) == 0 && (len(pr.Awaits) > 0 || len(pr.Lazy) > 0 || then.Extra[resources.ExtraUnknownAtPlan] != ""):
		return ""
	case len(ds) == 0:
		return "the live state's fingerprint differs from the plan's"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s: %s at plan time, now %s", d.Property, orNone(d.Then), orNone(d.Now))
	}
	return strings.Join(parts, "; ")
}
