package planner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// DefaultParallelism is how many resources are read at once when
// Planner.Parallelism is not set (Terraform's default).
const DefaultParallelism = 10

// MaxDiffSize is the largest content (either side) shown as a unified diff;
// larger content is summarised by size and digest only.
const MaxDiffSize = 1 << 20

// GuardResults records evaluated guards; decidedBy is the index of the
// guard that decided to skip, -1 for none. An outcome with an error is
// left out.
func GuardResults(outs []guard.Outcome, decidedBy int) []plan.GuardResult {
	var out []plan.GuardResult
	for i, o := range outs {
		if o.Err != nil || o.Spec == nil {
			continue
		}
		s := o.Spec
		g := plan.GuardResult{
			Kind:        string(s.Kind),
			Form:        string(s.Form),
			Command:     s.Source,
			Interpreter: s.Interpreter,
			Cwd:         o.Cwd,
			Environment: o.Environment,
			User:        o.User,
			Inherited:   s.Inherited,
			ExitCode:    o.ExitCode,
			DurationMS:  o.Duration.Milliseconds(),
			Output:      o.Output,
			Passed:      o.Condition,
			Decided:     i == decidedBy,
			Warning:     o.Warning,
		}
		if s.Sensitive {
			redactGuard(&g)
		}
		out = append(out, g)
	}
	return out
}

// Planner turns evaluated resources into a Plan: it reads each resource's
// live state (in parallel), asks its type what the action would do, and
// records the result in the form reviewers read and apply replays.
type Planner struct {
	Registry *resources.Registry
	// Parallelism bounds how many resources are read at once;
	// DefaultParallelism when <= 0.
	Parallelism int
	Logger      hclog.Logger
	// Host is the facts of the host being planned; its identity is
	// recorded in the plan and its value is `host` in expressions.
	Host *host.Facts
	// Version is toque's version, recorded in the plan.
	Version string
	// Now returns the creation time; nil means time.Now.
	Now func() time.Time
	// Guards evaluates only_if / not_if; nil means guard.EvaluateAll on
	// the resource's decoded guards (Instance.Guards).
	Guards plan.GuardFunc
	// Rand is the source of the plan's salt; nil means crypto/rand.
	Rand io.Reader
}

// Plan compiles cfg's node attributes with the host facts, evaluates its
// resources against them, then plans them (PlanInstances). It
// records the node attributes with provenance and the inputs digest. On errors it still
// returns the partial plan, marked Errored, with the diagnostics; the caller
// decides whether to show or write it.
func (p *Planner) Plan(ctx context.Context, cfg *config.Config) (*plan.Plan, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	if cfg == nil {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No configuration to plan",
			Detail:   "The planner was given no configuration. This is a bug in toque.",
		})
	}
	if p.Registry == nil {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No resource types",
			Detail:   "The planner was given no resource type registry. This is a bug in toque.",
		})
	}
	if p.Host == nil {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No host facts",
			Detail:   "A plan is made for one host, but no host facts were detected. This is a bug in toque.",
		})
	}
	// Attribute blocks may read host.…: write them again with the facts.
	scope, attrs, evalDiags := eval.NewScope(cfg, p.Host.Value())
	insts, d := eval.Resources(cfg, p.Registry, scope)
	evalDiags = append(evalDiags, d...)
	diags = append(diags, evalDiags...)

	pl, planDiags := p.PlanInstances(ctx, insts)
	diags = append(diags, planDiags...)
	if pl == nil {
		return nil, diags
	}
	pl.InputsDigest = cfg.InputsDigest()
	// Sources are recorded relative to the recipe (or policy) directory:
	// the plan is read on reviewers' machines and in pull requests, where
	// this host's absolute paths are noise.
	for _, r := range pl.Resources {
		r.Source.Filename = relativeTo(cfg.Dir, r.Source.Filename)
	}
	{
		// Attributes a sensitive resource reads are as secret as it is.
		read := &eval.Scope{}
		for _, inst := range insts {
			if inst.Sensitive && inst.Block != nil {
				read.Sensitive = append(read.Sensitive, eval.NodePathsRead(inst.Block)...)
			}
		}
		recorded, err := attributesOf(attrs.Leaves(), cfg.Dir, read)
		if err != nil {
			evalDiags = evalDiags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot record node attributes",
				Detail:   fmt.Sprintf("A node attribute could not be stored in the plan: %s.", err),
			})
			diags = append(diags, evalDiags[len(evalDiags)-1])
		}
		pl.Attributes = recorded
	}
	// The planning errors are recorded already; the evaluation's go first.
	planErrs := pl.Errors
	pl.Errors = nil
	markErrored(pl, evalDiags)
	pl.Errors = append(pl.Errors, planErrs...)
	return pl, diags
}

// markErrored marks pl Errored and records the error diagnostics not already
// recorded.
func markErrored(pl *plan.Plan, diags hcl.Diagnostics) {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		pl.Errored = true
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d: %s", d.Subject.Filename, d.Subject.Start.Line, msg)
		}
		pl.Errors = append(pl.Errors, msg)
	}
}

// attributesOf records the merged node attributes; a leaf marked
// sensitive, or read by a sensitive resource (readBySensitive), is kept
// without its value.
func attributesOf(leaves []config.Leaf, dir string, readBySensitive *eval.Scope) ([]plan.Attribute, error) {
	out := make([]plan.Attribute, 0, len(leaves))
	var firstErr error
	for _, l := range leaves {
		a := plan.Attribute{
			Path:      strings.Join(l.Path, "."),
			Level:     l.Level,
			Source:    fmt.Sprintf("%s:%d", relativeTo(dir, l.Range.Filename), l.Range.Start.Line),
			Sensitive: l.Sensitive || readBySensitive.Covers(l.Path),
		}
		if l.Origin != "" {
			a.Source = l.Origin + " at " + a.Source
		}
		if l.Value == cty.NilVal || a.Sensitive {
			a.Value = []byte(`null`)
		} else if b, err := (plan.Value{Value: l.Value}).MarshalJSON(); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("node.%s: %w", a.Path, err)
			}
			a.Value = []byte(`null`)
		} else {
			a.Value = b
		}
		out = append(out, a)
	}
	return out, firstErr
}

// PlanInstances plans already-evaluated resources (their guards are
// decoded already: expression guards hold their value). Resources are read in parallel (bounded by
// Parallelism) and the plan keeps the collection's order. A resource that
// cannot be read or planned is left out of the plan, which is then marked
// Errored; the diagnostics say why, pointing at the resource's block.
func (p *Planner) PlanInstances(ctx context.Context, insts []*eval.Instance) (*plan.Plan, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	salt, err := p.salt()
	if err != nil {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot make the plan's salt",
			Detail:   fmt.Sprintf("Reading random bytes failed: %s.", err),
		})
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	pl := &plan.Plan{
		FormatVersion: plan.FormatVersion,
		ToqueVersion:  p.Version,
		CreatedAt:     now().UTC(),
		Salt:          salt,
		Attributes:    []plan.Attribute{},
		Resources:     []*plan.Resource{},
	}
	if p.Host != nil {
		pl.Host = plan.Host{Hostname: p.Host.Identity.Hostname, MachineID: p.Host.Identity.MachineID}
	}

	logger := p.logger()
	par := p.Parallelism
	if par <= 0 {
		par = DefaultParallelism
	}
	type outcome struct {
		res   *plan.Resource
		step  *resources.Step
		diags hcl.Diagnostics
	}
	results := make([]outcome, len(insts))
	start := time.Now()
	reads := p.readBatches(ctx, logger, insts)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, inst := range insts {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			results[i].diags = interrupted(inst, ctx.Err())
			continue
		}
		wg.Add(1)
		go func(i int, inst *eval.Instance) {
			defer wg.Done()
			defer func() { <-sem }()
			res, step, d := p.planOne(ctx, logger, inst, salt, reads[i])
			results[i] = outcome{res, step, d}
		}(i, inst)
	}
	wg.Wait()

	ress := make([]*plan.Resource, len(results))
	provided := map[string]string{}
	for i, o := range results {
		diags = append(diags, o.diags...)
		ress[i] = o.res
		if o.res != nil {
			pl.Resources = append(pl.Resources, o.res)
		}
		if o.step != nil {
			diags = append(diags, unmetNeeds(insts[i], o.step, provided)...)
		}
	}
	if ctx.Err() == nil {
		diags = append(diags, p.planNotifications(ctx, logger, insts, ress, pl, salt)...)
	}
	markErrored(pl, diags)
	logger.Debug("planned resources", "count", len(insts), "parallelism", par, "errored", pl.Errored, "duration", time.Since(start))
	return pl, diags
}

func (p *Planner) logger() hclog.Logger {
	if p.Logger == nil {
		return hclog.NewNullLogger()
	}
	return p.Logger
}

func (p *Planner) salt() (string, error) {
	r := p.Rand
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, 16)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func interrupted(inst *eval.Instance, err error) hcl.Diagnostics {
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Planning interrupted",
		Detail:   fmt.Sprintf("%s was not planned: %s.", instAddress(inst), err),
		Subject:  declRange(inst),
	}}
}

func instAddress(inst *eval.Instance) string {
	switch {
	case inst == nil:
		return "(nil resource)"
	case inst.Resource != nil:
		return inst.Resource.Address()
	case inst.Block != nil:
		return inst.Block.Address()
	}
	return "(unnamed resource)"
}

func declRange(inst *eval.Instance) *hcl.Range {
	if inst == nil || inst.Block == nil {
		return nil
	}
	r := inst.Block.DeclRange
	return &r
}

// lifecycle is the lifecycle the planner evaluates resources with.
func (p *Planner) lifecycle(logger hclog.Logger) *plan.Lifecycle {
	return &plan.Lifecycle{Registry: p.Registry, Logger: logger, Guards: p.Guards}
}

// readBatches reads ahead, one call per type, the live state of every
// resource whose type reads in batches (resources.BatchLoader) and that
// will be read: not those whose action is nothing. The result is aligned
// with insts; nil where Load will read the resource itself.
func (p *Planner) readBatches(ctx context.Context, logger hclog.Logger, insts []*eval.Instance) []*plan.Preread {
	reads := make([]*plan.Preread, len(insts))
	subjects := make([]*plan.Subject, len(insts))
	for i, inst := range insts {
		if inst == nil || inst.Resource == nil || inst.Type == nil || inst.Resource.Schema() == nil {
			continue
		}
		if a := inst.Resource.Action; a == "nothing" || (a == "" && inst.Resource.Schema().DefaultAction == "nothing") {
			continue
		}
		subjects[i] = &plan.Subject{Type: inst.Type, Desired: inst.Resource}
	}
	plan.ReadBatches(ctx, logger, subjects)
	for i, s := range subjects {
		if s != nil {
			reads[i] = s.Read
		}
	}
	return reads
}

// planOne plans one resource. It never panics: a panicking type becomes an
// error diagnostic. read is its reading taken ahead (nil: Load reads it).
func (p *Planner) planOne(ctx context.Context, logger hclog.Logger, inst *eval.Instance, salt string, read *plan.Preread) (*plan.Resource, *resources.Step, hcl.Diagnostics) {
	res, step, diags := p.planResource(ctx, logger, inst, salt, read)
	if res == nil {
		step = nil
	}
	return res, step, diags
}

// planResource plans one resource; step is what its action would do (nil
// when it is not read: skipped, or action nothing).
func (p *Planner) planResource(ctx context.Context, logger hclog.Logger, inst *eval.Instance, salt string, read *plan.Preread) (res *plan.Resource, step *resources.Step, diags hcl.Diagnostics) {
	addr := instAddress(inst)
	if inst == nil || inst.Resource == nil || inst.Type == nil || inst.Resource.Schema() == nil {
		return nil, nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot plan " + addr,
			Detail:   "The resource was not evaluated against a known resource type. This is a bug in toque.",
			Subject:  declRange(inst),
		}}
	}
	desired := inst.Resource
	schema := desired.Schema()
	log := logger.With("resource", addr)

	res = &plan.Resource{
		Address:       desired.Address(),
		Type:          desired.Type,
		Name:          desired.Name,
		Action:        desired.Action,
		Sensitive:     inst.Sensitive,
		IgnoreFailure: inst.IgnoreFailure,
		Desired:       plan.DesiredValues(desired),
	}
	if res.Action == "" {
		res.Action = schema.DefaultAction
	}
	var hides func(*resources.Property) bool
	res.SensitiveProperties, hides = sensitivity(inst)
	if inst.Block != nil {
		r := inst.Block.DeclRange
		res.Source = plan.Range{Filename: r.Filename, Line: r.Start.Line, Column: r.Start.Column}
	}
	res.Context = contextValues(desired, hides)

	if res.Action == "nothing" {
		res.Kind = resources.NoOp
		res.Reason = plan.ReasonNothing
		log.Debug("planned resource", "kind", res.Kind, "reason", res.Reason)
		return res, nil, nil
	}

	if d := hostChecks(inst, desired); d.HasErrors() {
		return nil, nil, append(diags, d...)
	}

	res.GuardSpecs = inst.Guards
	rd, err := p.lifecycle(logger).Evaluate(ctx, &plan.Subject{
		Address: addr, Type: inst.Type, Desired: desired, Guards: inst.Guards,
		Sensitive: inst.Sensitive, SensitiveProps: res.SensitiveProperties, Salt: salt, Read: read,
	})
	if err != nil {
		return nil, nil, lifecycleDiags(inst, rd, err)
	}
	res.Guards = GuardResults(rd.Guards, rd.DecidedBy)
	if rd.Skip {
		res.Kind = resources.Skip
		res.Reason = skipReason(res.Guards)
		log.Debug("planned resource", "kind", res.Kind, "reason", res.Reason)
		return res, nil, nil
	}
	step = rd.Step
	res.Kind = step.Kind
	res.Reason = step.Reason
	if step.Kind == resources.Run && len(res.Guards) > 0 {
		res.Reason = RunReason(step.Reason, res.Guards)
	}
	res.Groups = step.Groups
	res.Current = rd.Current
	res.Fingerprint = rd.Fingerprint()
	res.Changes = buildChanges(schema, step.Changes, rd.State, salt, hides)
	if rd.State.Exists && (step.Kind == resources.Update || step.Kind == resources.NoOp) {
		res.Unmanaged = unmanaged(schema, desired, res.Current, step.Changes)
	}
	log.Debug("planned resource", "kind", res.Kind, "reason", res.Reason, "changes", len(res.Changes))
	return res, step, nil
}

// unmetNeeds checks step's needs against what earlier steps provide (and
// records what step provides, by address): a need nothing provides would
// fail at apply, after earlier resources changed the host, so it fails the
// plan. So does, for now, a need an earlier step meets only at apply
// (Need.AtApply: a value known at apply, which toque does not have yet).
func unmetNeeds(inst *eval.Instance, step *resources.Step, provided map[string]string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if step.Kind.IsWork() {
		for _, n := range step.Needs {
			by, ok := provided[n.Namespace+"\x00"+n.Value]
			switch {
			case ok && !n.AtApply:
				continue
			case ok:
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Value known only at apply",
					Detail: fmt.Sprintf("%s needs %s, which only %s, earlier in this plan, provides, and only once it is applied: what %s would do is known only at apply, and toque does not plan values known at apply yet. Apply %s first (plan and apply with %s left out, or guarded with only_if), then plan again.",
						instAddress(inst), n.What, by, instAddress(inst), by, instAddress(inst)),
					Subject: declRange(inst),
				})
				continue
			}
			detail := n.Missing
			if detail == "" {
				detail = fmt.Sprintf("%s needs the %s %s, which does not exist, and no earlier resource of the plan creates it: apply would fail there, after earlier resources changed the host. Declare a %s resource for %s before %s (with recursive = true it creates missing parents too).",
					instAddress(inst), n.What, n.Value, n.What, n.Value, instAddress(inst))
			}
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing " + n.What,
				Detail:   detail,
				Subject:  declRange(inst),
			})
		}
		for _, n := range step.Provides {
			key := n.Namespace + "\x00" + n.Value
			if _, ok := provided[key]; !ok {
				provided[key] = instAddress(inst)
			}
		}
	}
	return diags
}

// sensitivity is which of inst's values are hidden: the set properties
// the type marks sensitive or whose value the recipe made sensitive (as
// recorded in Resource.SensitiveProperties), and a function telling, for
// any property, whether its values are hidden (all are for a sensitive
// resource).
func sensitivity(inst *eval.Instance) ([]string, func(*resources.Property) bool) {
	hidden := map[string]bool{}
	for _, name := range inst.SensitiveProps {
		hidden[name] = true
	}
	var props []string
	for _, prop := range inst.Resource.Schema().Properties {
		if inst.Resource.IsSet(prop.Name) && (prop.Sensitive || hidden[prop.Name]) {
			props = append(props, prop.Name)
		}
	}
	return props, func(prop *resources.Property) bool {
		return inst.Sensitive || (prop != nil && (prop.Sensitive || hidden[prop.Name]))
	}
}

// lifecycleDiags words a lifecycle failure of inst as a plan diagnostic:
// one summary per phase, the lifecycle's own message as the detail,
// pointing at the guard that could not run or at the resource's block.
func lifecycleDiags(inst *eval.Instance, rd *plan.Reading, err error) hcl.Diagnostics {
	addr := instAddress(inst)
	subject := declRange(inst)
	summary := "Cannot plan " + addr
	var le *plan.LifecycleError
	if errors.As(err, &le) {
		switch {
		case le.Panicked:
			summary = "Resource type failed while planning " + addr
		case le.Phase == plan.PhaseGuards:
			summary = "Guard cannot run"
			if n := len(rd.Guards); n > 0 && rd.Guards[n-1].Spec != nil && rd.Guards[n-1].Spec.Range.Filename != "" {
				r := rd.Guards[n-1].Spec.Range
				subject = &r
			}
		case le.Phase == plan.PhaseLoad:
			summary = "Cannot read " + addr
		}
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf("%s: %s.", addr, err),
		Subject:  subject,
	}}
}

// skipReason words the verdict of the guard that decided to skip.
func skipReason(results []plan.GuardResult) string {
	for _, g := range results {
		if g.Decided {
			return plan.GuardVerdict(g)
		}
	}
	return "skipped by a guard"
}

// RunReason is the reason of a run step whose guards let it run: the
// guards' verdicts instead of the type's "no guard: runs every time", or
// after the type's own reason ("creates … does not exist").
func RunReason(typeReason string, guards []plan.GuardResult) string {
	vs := make([]string, len(guards))
	for i, g := range guards {
		vs[i] = plan.GuardVerdict(g)
	}
	v := strings.Join(vs, ", ")
	if typeReason == "" || typeReason == resources.NoGuardReason {
		return v
	}
	return typeReason + "; " + v
}

// buildChanges turns a step's changes into their display forms.
func buildChanges(s *resources.Schema, changes []resources.Change, state *resources.State, salt string, hides func(*resources.Property) bool) []plan.Change {
	if len(changes) == 0 {
		return nil
	}
	out := make([]plan.Change, 0, len(changes))
	for _, c := range changes {
		prop := s.Property(c.Property)
		sensitive := hides(prop)
		isContent := prop != nil && prop.Content
		ch := plan.Change{Property: c.Property, Default: c.Default, Sensitive: sensitive}
		hasBefore := c.Before != cty.NilVal
		switch {
		case sensitive:
			if hasBefore {
				ch.Before = plan.Sensitive
			}
			ch.After = plan.Sensitive
			if isContent {
				ch.DiffNote = "sensitive content is not shown"
			}
		default:
			if hasBefore {
				ch.Before = plan.StoreValue(prop, c.Before, salt, false).Display
			}
			ch.After = plan.StoreValue(prop, c.After, salt, false).Display
			if why := state.Private[c.Property]; isContent && why != "" {
				// The type says who may not see the live value: no diff.
				ch.DiffNote = why
			} else if isContent {
				before, bok := stringOf(state.Values[c.Property])
				if !bok {
					before, bok = stringOf(c.Before)
				}
				after, aok := stringOf(c.After)
				if !bok {
					before, bok = "", true
				}
				if aok && bok {
					ch.Diff, ch.DiffNote = ContentDiff(before, after)
				} else {
					ch.DiffNote = "content is not text: no diff shown"
				}
			}
		}
		if c.Note != "" && !sensitive {
			// The type's word to the reviewer about this change.
			ch.DiffNote = strings.TrimPrefix(ch.DiffNote+"; "+c.Note, "; ")
		}
		out = append(out, ch)
	}
	return out
}

// stringOf returns v's string when v is a known, non-null string.
func stringOf(v cty.Value) (string, bool) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return "", false
	}
	return v.AsString(), true
}

// ContentDiff is the unified diff (hunks only, without the ---/+++ header)
// from before to after, or, when either side is binary (a NUL byte or
// invalid UTF-8) or larger than MaxDiffSize, no diff and a note saying why.
func ContentDiff(before, after string) (diff, note string) {
	if isBinary(before) || isBinary(after) {
		return "", "binary content: no diff shown"
	}
	if len(before) > MaxDiffSize || len(after) > MaxDiffSize {
		return "", "content larger than 1 MiB: no diff shown"
	}
	if before == after {
		return "", ""
	}
	u, err := udiff.ToUnified("current", "planned", before, udiff.Lines(before, after), udiff.DefaultContextLines)
	if err != nil {
		return "", "no diff: " + err.Error()
	}
	// Drop the two header lines: the plan names the resource already.
	for range 2 {
		if strings.HasPrefix(u, "--- ") || strings.HasPrefix(u, "+++ ") {
			if i := strings.IndexByte(u, '\n'); i >= 0 {
				u = u[i+1:]
			}
		}
	}
	return u, ""
}

func isBinary(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)
}

// unmanaged lists the desired-state properties the recipe did not set that
// the live reading has, with their display form (already redacted by
// StoreCurrent when sensitive). A property the step changes all the same
// (a type that computes its target: remote_file's downloaded content) is
// not left as it is.
func unmanaged(s *resources.Schema, desired *resources.Resource, cur *plan.Current, changes []resources.Change) []plan.Unmanaged {
	var out []plan.Unmanaged
	for _, prop := range s.Properties {
		if !prop.IsDesiredState() || desired.IsSet(prop.Name) || changed(changes, prop.Name) {
			continue
		}
		sv, ok := cur.Values[prop.Name]
		if !ok {
			continue
		}
		out = append(out, plan.Unmanaged{Property: prop.Name, Current: sv.Display})
	}
	return out
}

func changed(changes []resources.Change, name string) bool {
	for _, c := range changes {
		if c.Property == name {
			return true
		}
	}
	return false
}

// contextValues lists the properties a reviewer needs beside the changes
// (Resource.Context): identity and name properties whose value is not the
// block label, then, for a type with no desired-state property, every other
// property the recipe set. Schema order within each part.
func contextValues(desired *resources.Resource, hides func(*resources.Property) bool) []plan.ContextValue {
	s := desired.Schema()
	acting := true
	for _, prop := range s.Properties {
		if prop.IsDesiredState() {
			acting = false
			break
		}
	}
	var ids, rest []plan.ContextValue
	for _, prop := range s.Properties {
		isID := prop.Identity || prop.NameProperty
		if !isID && !acting {
			continue
		}
		v, ok := desired.Values[prop.Name]
		if !ok || v == cty.NilVal || v.IsNull() || !v.IsKnown() {
			continue
		}
		if isID && v.Type() == cty.String && v.AsString() == desired.Name {
			continue
		}
		shown := plan.DisplayValue(v)
		if hides(prop) {
			shown = plan.Sensitive
		}
		if isID {
			ids = append(ids, plan.ContextValue{Property: prop.Name, Value: shown})
		} else {
			rest = append(rest, plan.ContextValue{Property: prop.Name, Value: shown})
		}
	}
	return append(ids, rest...)
}

// relativeTo is name relative to dir when name lies inside dir, else name.
func relativeTo(dir, name string) string {
	if dir == "" || name == "" || !filepath.IsAbs(name) {
		return name
	}
	rel, err := filepath.Rel(dir, name)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return name
	}
	return rel
}

// redactGuard hides what a sensitive resource's guard ran: its command,
// where, as whom, with what environment, and what it printed. The verdict
// and exit code stay: they are what the reviewer needs.
func redactGuard(g *plan.GuardResult) {
	g.Command = plan.Sensitive
	g.Output = ""
	if g.Cwd != "" {
		g.Cwd = plan.Sensitive
	}
	if g.User != "" {
		g.User = plan.Sensitive
	}
	for k := range g.Environment {
		g.Environment[k] = plan.Sensitive
	}
}

// hostChecks runs the schema's plan-time host checks on the set values (an
// owner that must exist), so a value apply could not use fails the plan
// rather than an apply half-way. The diagnostic points at the attribute
// when the block's body can say where it is.
func hostChecks(inst *eval.Instance, desired *resources.Resource) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, prop := range desired.Schema().Properties {
		if prop.HostCheck == nil || !desired.IsSet(prop.Name) {
			continue
		}
		if err := prop.HostCheck(desired.Values[prop.Name]); err != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid value for property",
				Detail:   fmt.Sprintf("The property %q of %s: %s.", prop.Name, desired.Address(), err),
				Subject:  attributeRange(inst, prop.Name),
			})
		}
	}
	return diags
}

// attributeRange is the range of attribute name in inst's block, or the
// block's range.
func attributeRange(inst *eval.Instance, name string) *hcl.Range {
	if inst.Block == nil {
		return nil
	}
	if inst.Block.Body != nil {
		if attrs, d := inst.Block.Body.JustAttributes(); !d.HasErrors() {
			if a, ok := attrs[name]; ok {
				return a.Expr.Range().Ptr()
			}
		}
	}
	return inst.Block.DeclRange.Ptr()
}
