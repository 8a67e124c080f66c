package apply

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// The end-state check (design §8, "Apply proves where it ended"): once
// the last step and the delayed notifications are done, apply reads every
// resource of the plan once more — batched as the planner reads, so that
// it costs what a no-op plan costs — and compares each reading with the
// state the plan's steps predict (resources.Predict): a resource planned
// unchanged should read as the plan read it, one that converged as its
// steps say they leave it. Whatever did not end so (a side effect of an
// earlier step, a package's maintainer script, another process) is listed
// with the property, the predicted and the actual value, counted in the
// report, and makes Apply return an *EndStateError. Applier.SkipVerify
// turns the check off.
//
// What is compared: whether the thing exists; every property value the
// prediction holds; every fact (State.Extra) the prediction holds with a
// value, but for the facts a type says are about what the plan could do
// rather than about the thing (resources.PlanFacter: a package's
// candidate). A resource whose last step is a run of a type that
// predicts nothing of it (execute) is not compared: a run leaves no
// state the plan can say.

// EndDifference is one way a resource did not end as the plan predicted.
type EndDifference struct {
	Address   string `json:"address"`
	Property  string `json:"property"`
	Predicted string `json:"predicted"`
	Actual    string `json:"actual"`
}

// EndStateError is returned, with the report, by an apply that carried out
// its plan but found, reading the host again at the end, that some
// resources did not end where the plan said. Exit status 7.
type EndStateError struct {
	Differences []EndDifference
}

func (e *EndStateError) Error() string {
	var b strings.Builder
	n := countAddresses(e.Differences)
	fmt.Fprintf(&b, "the apply carried out the plan, but %d resource%s did not end as planned:\n", n, plural(n))
	for _, d := range e.Differences {
		fmt.Fprintf(&b, "\n  %s: %s: predicted %s, actual %s", d.Address, d.Property, orNone(d.Predicted), orNone(d.Actual))
	}
	b.WriteString("\n\nSomething besides the plan's steps changed them (a side effect of an earlier step, a package's maintainer script, another process). Run toque plan again to see what it would take now.")
	return b.String()
}

// countAddresses counts the resources ds name.
func countAddresses(ds []EndDifference) int {
	seen := map[string]bool{}
	for _, d := range ds {
		seen[d.Address] = true
	}
	return len(seen)
}

// expectFrom sets e's predicted end state: st, the state its action si is
// planned from, carried through that action and the later ones (each
// planned again from the state the one before leaves, as the planner
// did). Pure: no I/O. A failure to predict leaves e unchecked.
func (r *run) expectFrom(e *entry, si int, st *resources.State) {
	if e.typ == nil || e.desired == nil || st == nil {
		return
	}
	for ; si < e.pr.Steps(); si++ {
		d := e.desired.WithAction(e.pr.StepView(si).Action)
		step, err := resources.PlanStep(e.typ, d, st)
		if err != nil {
			e.expect = nil
			return
		}
		if st, err = resources.Predict(e.typ, d, st, step); err != nil {
			e.expect = nil
			return
		}
		e.lastRun = step.Kind == resources.Run
		e.managed(step)
	}
	e.expect = st
}

// things are what e acts on, as keys of namespaces: its identity
// properties' (a path, a unit file), what its type reads (Foreseer: a
// service's unit) and what its steps provide (a unit file's unit). Two
// resources that share one act on one thing: a systemd_unit that writes
// a unit and the service that then starts it.
func (e *entry) things() []string {
	var out []string
	if e.desired == nil {
		return nil
	}
	for _, n := range e.desired.Things() {
		out = append(out, n.Namespace+"\x00"+n.Value)
	}
	if f, ok := e.typ.(resources.Foreseer); ok {
		for _, n := range f.Foresees(e.desired) {
			out = append(out, n.Namespace+"\x00"+n.Value)
		}
	}
	return append(out, e.provided...)
}

// managed records the properties e's checks compare: those the recipe
// sets, and those a step changes (a package's version from its
// candidate).
func (e *entry) managed(step *resources.Step) {
	if e.checked == nil {
		e.checked = map[string]bool{}
		for k := range e.desired.Values {
			if e.desired.IsSet(k) {
				e.checked[k] = true
			}
		}
	}
	if step != nil {
		for _, c := range step.Changes {
			e.checked[c.Property] = true
		}
		if step.Kind.IsWork() {
			for _, n := range step.Provides {
				if n.Namespace != resources.NamespacePath {
					e.provided = append(e.provided, n.Namespace+"\x00"+n.Value)
				}
			}
		}
	}
}

// expectConverged updates e's prediction once its action si converged
// from rd, the reading taken right before it: from that reading, which
// may differ from pre-flight's because of an earlier step of this apply.
func (r *run) expectConverged(e *entry, si int, rd *plan.Reading) {
	if rd != nil && rd.State != nil {
		r.expectFrom(e, si, rd.State)
	}
}

// expectNotifiedRun carries the prediction of the target of a notified
// run that converged (rd, the reading right before, and the run's step)
// through it: the state the run leaves, predicted from that reading. A
// target whose own action is nothing gets its prediction so.
func (r *run) expectNotifiedRun(t resources.Type, d *resources.Resource, rd *plan.Reading) {
	if rd == nil || rd.State == nil || rd.Step == nil {
		return
	}
	var e *entry
	for _, x := range r.entries {
		if x.pr.Address == d.Address() && x.pr.Parent == "" {
			e = x
			break
		}
	}
	if e == nil || e.earlier != nil {
		return
	}
	st, err := resources.Predict(t, d, rd.State, rd.Step)
	if err != nil {
		e.expect = nil
		return
	}
	if e.typ == nil {
		e.typ, e.desired = t, d
	}
	e.expect, e.lastRun, e.notified = st, rd.Step.Kind == resources.Run, true
	e.managed(rd.Step)
}

// verifyEnd is the end-state check: it reads every entry with a
// prediction again (one batch per type that reads in batches, the rest
// PreflightParallelism at a time) and returns how they differ from it.
func (r *run) verifyEnd(ctx context.Context, rep *Report) []EndDifference {
	var es []*entry
	for _, e := range r.entries {
		if e.expect == nil || e.earlier != nil || !checksEnd(e, rep.Resources[e.idx].Outcome) {
			continue
		}
		es = append(es, e)
	}
	// A later resource that acts on the same thing, and changed it, has
	// the last word on its facts (a service started after the unit file
	// was written): the earlier one's facts are not compared.
	last := map[string]int{}
	for _, e := range r.entries {
		if e.typ == nil || (rep.Resources[e.idx].Outcome != OutcomeChanged && !e.notified) {
			continue
		}
		for _, k := range e.things() {
			last[k] = max(last[k], e.idx)
		}
	}
	for _, e := range es {
		for _, k := range e.things() {
			if last[k] > e.idx {
				e.factsSuperseded = true
			}
		}
	}
	if len(es) == 0 {
		return nil
	}
	reads := resources.NewReads()
	defer reads.Close()
	ctx = resources.WithReads(ctx, reads)
	subjects := make([]*plan.Subject, len(es))
	for i, e := range es {
		subjects[i] = r.subject(e, nil)
	}
	pre := r.lc.Preload(ctx, subjects)
	diffs := make([][]EndDifference, len(es))
	parallel.For(len(es), PreflightParallelism, func(i int) {
		if ctx.Err() != nil {
			return
		}
		e := es[i]
		st := pre[subjects[i]]
		if st == nil {
			var err error
			if st, err = r.loadProtected(ctx, e); err != nil {
				diffs[i] = []EndDifference{{Address: e.pr.Address, Property: "reading", Predicted: "readable", Actual: err.Error()}}
				return
			}
		}
		diffs[i] = endDifferences(e, r.p.Salt, e.expect, st)
	})
	var out []EndDifference
	for _, d := range diffs {
		out = append(out, d...)
	}
	return out
}

// checksEnd reports whether the end-state check compares e, whose outcome
// in this apply is outcome: a resource whose steps ran as planned, or
// were found done (changed, unchanged, already done), or that a notified
// run changed; not one a guard skipped, nor one whose last step is a
// run of a type that predicts nothing of it (execute), nor one of a
// type written in HCL, whose load_current_value and converge scripts
// toque cannot assume agree.
func checksEnd(e *entry, outcome string) bool {
	if _, hcl := e.typ.(resources.Definer); hcl {
		return false
	}
	if _, predicts := e.typ.(resources.Predictor); e.lastRun && !predicts {
		return false
	}
	switch outcome {
	case OutcomeChanged, OutcomeUnchanged, OutcomeAlreadyDone:
		return true
	}
	return e.notified
}

// loadProtected reads e's live state with its type's Load, a panic
// becoming an error.
func (r *run) loadProtected(ctx context.Context, e *entry) (st *resources.State, err error) {
	defer func() {
		if v := recover(); v != nil {
			r.logger.Error("resource type panicked", "resource", e.pr.Address, "method", "Load", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			st, err = nil, fmt.Errorf("resource type %q panicked in Load: %v", e.pr.Type, v)
		}
	}()
	st, err = e.typ.Load(ctx, e.desired.WithSecrets(e.pr.Sensitive, e.pr.SensitiveProperties).LoadView())
	if err == nil && st == nil {
		err = fmt.Errorf("the resource type returned no state")
	}
	return st, err
}

// endDifferences compares actual, a reading at the end, with predicted:
// whether the thing exists; then, when it does, the value of each
// desired-state property the recipe sets or a step changes (compared as
// the property compares values: an owner by name or id), a value the
// reading lacks counting as a difference; and each fact the prediction
// holds with a value, but those about the plan's circumstances
// (resources.PlanFacter) and those the reading does not hold (a fact the
// type reads only in some states). Values are shown as plans show them
// (sensitive and private ones hidden).
func endDifferences(e *entry, salt string, predicted, actual *resources.State) []EndDifference {
	s := e.typ.Schema()
	diff := func(prop, want, got string) EndDifference {
		return EndDifference{Address: e.pr.Address, Property: prop, Predicted: want, Actual: got}
	}
	if predicted.Exists != actual.Exists {
		return []EndDifference{diff("exists", existsWord(predicted.Exists), existsWord(actual.Exists))}
	}
	if !predicted.Exists {
		return nil
	}
	shown := func(p *resources.Property, st *resources.State, v cty.Value) string {
		if v == cty.NilVal || v.IsNull() {
			return "(none)"
		}
		hidden := e.pr.Sensitive || slices.Contains(e.pr.SensitiveProperties, p.Name)
		sv := plan.StoreValue(p, v, salt, hidden)
		if why := st.Private[p.Name]; why != "" && !hidden {
			sv = plan.StoredValue{Digest: plan.DigestValue(v, salt, true), Size: sv.Size, Private: why}
		}
		return sv.Display(p.Content)
	}
	var out []EndDifference
	for _, k := range slices.Sorted(maps.Keys(e.checked)) {
		p := s.Property(k)
		want, ok := predicted.Values[k]
		if p == nil || !p.IsDesiredState() || !ok || want == cty.NilVal || want.IsNull() || !want.IsWhollyKnown() {
			continue
		}
		if (p.Content || p.Group == "content") && e.factsSuperseded {
			// A later resource rewrote the thing's content (an editor of
			// the file this one created, or of the file this editor
			// edits): it has the last word on it, and on its checksum.
			continue
		}
		have := actual.Values[k]
		if have != cty.NilVal && p.Equals(want, have) {
			continue
		}
		out = append(out, diff(k, shown(p, predicted, want), shown(p, actual, have)))
	}
	if e.factsSuperseded {
		return out
	}
	for _, k := range slices.Sorted(maps.Keys(predicted.Extra)) {
		want := predicted.Extra[k]
		have, ok := actual.Extra[k]
		if want == "" || !ok || have == want || resources.IsPlanFact(e.typ, k) {
			continue
		}
		out = append(out, diff(k, want, have))
	}
	return out
}

func existsWord(b bool) string {
	if b {
		return "exists"
	}
	return "does not exist"
}

// checkEnd runs the end-state check when the run carried out the whole
// plan (runErr nil, not interrupted) and it is not turned off, and
// records it in rep; it returns an *EndStateError when a resource did not
// end as planned.
func (r *run) checkEnd(ctx context.Context, rep *Report, runErr error, interrupted bool) error {
	if runErr != nil || interrupted || r.a.SkipVerify || ctx.Err() != nil {
		return nil
	}
	r.syncJournal() // what is done is printed before the reading
	diffs := r.verifyEnd(ctx, rep)
	if ctx.Err() != nil {
		return nil
	}
	rep.Verified, rep.NotAsPlanned, rep.DidNotEndAsPlanned = true, diffs, countAddresses(diffs)
	if len(diffs) == 0 {
		return nil
	}
	r.logger.Warn("resources did not end as planned", "count", rep.DidNotEndAsPlanned)
	return &EndStateError{Differences: diffs}
}
