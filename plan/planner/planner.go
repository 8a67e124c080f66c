package planner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// DefaultParallelism is how many resources are read at once when
// Planner.Parallelism is not set (Terraform's default).
const DefaultParallelism = 10

// GuardResults records the outcomes of evaluated guards; decidedBy is the
// index of the guard that decided to skip, -1 for none. Result i is the
// outcome of guard i: what ran is the guard's spec, which the plan keeps
// beside it (Resource.GuardSpecs). The output of a sensitive guard is not
// kept.
//
// A guard decided at apply records what it says now, deciding nothing; one
// that could not run now records why (GuardResult.Error).
func GuardResults(outs []guard.Outcome, decidedBy int) []plan.GuardResult {
	var out []plan.GuardResult
	for i, o := range outs {
		if o.Spec == nil {
			continue
		}
		if o.Deferred {
			g := plan.GuardResult{ExitCode: o.ExitCode, DurationMS: o.Duration.Milliseconds(), Output: o.Output, Passed: o.Condition, Warning: o.Warning}
			if o.Err != nil {
				msg := o.Err.Error()
				for _, head := range []string{o.Spec.Describe() + " cannot run: ", o.Spec.Describe() + ": "} {
					msg = strings.TrimPrefix(msg, head)
				}
				g = plan.GuardResult{Error: msg, DurationMS: o.Duration.Milliseconds()}
			}
			if o.Spec.Sensitive {
				g.Output = ""
				if g.Error != "" {
					g.Error = "it cannot run now (its error is hidden: the resource is sensitive)"
				}
			}
			out = append(out, g)
			continue
		}
		if o.Err != nil {
			continue
		}
		g := plan.GuardResult{
			ExitCode:   o.ExitCode,
			DurationMS: o.Duration.Milliseconds(),
			Output:     o.Output,
			Passed:     o.Condition,
			Decided:    i == decidedBy,
			Warning:    o.Warning,
		}
		if o.Spec.Sensitive {
			g.Output = ""
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
	// Unhosted, when set, is the recipes' scope the command wrote
	// without the host facts: Plan reuses its attributes when none reads
	// host (eval.WithHost).
	Unhosted *eval.Unhosted
	// Now returns the creation time; nil means time.Now.
	Now func() time.Time
	// Guards evaluates only_if / not_if; nil means guard.EvaluateAll on
	// the resource's decoded guards (Instance.Guards).
	Guards plan.GuardFunc
	// Rand is the source of the plan's salt; nil means crypto/rand.
	Rand io.Reader
	// ReleaseSyntax has Plan let go of the configuration's syntax trees
	// once its resources are evaluated (config.Config.ReleaseSyntax): the
	// caller reads nothing of them afterwards but ranges and bytes.
	ReleaseSyntax bool
	// PrintOnly says the plan will only be printed as text: not saved,
	// encoded, shown as JSON or Markdown, nor applied. A resource of one
	// action planned unchanged then keeps no desired values and no live
	// reading (Current, Fingerprint), which the text never shows: they
	// were most of a no-op plan's memory and a tenth of its time.
	PrintOnly bool
	// Resolver evaluates the values known only at apply that the plan can
	// know already, and the guards decided at apply for what they say now;
	// nil means eval.Resolver.
	Resolver plan.Resolver
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
	// The resource types the recipes declare (resource_type), then the
	// attribute blocks, which may read host.…: written again with the
	// facts.
	reg, evalDiags := eval.Types(cfg, p.Registry)
	if evalDiags.HasErrors() {
		return nil, append(diags, evalDiags...)
	}
	scope, attrs, d := eval.WithHost(cfg, p.Unhosted, p.Host.Value())
	evalDiags = append(evalDiags, d...)
	if p.ReleaseSyntax {
		cfg.ReleaseFiles()
	}
	// The files of a directory are read through one descriptor of it
	// (resources.Reads), by the data blocks and the resources alike:
	// nothing changes the host while a plan reads.
	reads := resources.NewReads()
	defer reads.Close()
	ctx = resources.WithReads(ctx, reads)
	salt, err := p.salt()
	if err != nil {
		return nil, diags.Append(saltDiag(err))
	}
	// The data blocks are read (data.go) while the resources that do not
	// read them are read too; those that do are evaluated once they have.
	dp, d := p.readData(ctx, cfg, reg, scope, salt)
	if d.HasErrors() {
		return nil, append(append(diags, evalDiags...), d...)
	}
	evalDiags = append(evalDiags, d...)
	scope = dp.scope
	scope.ReleaseSyntax = p.ReleaseSyntax
	insts, d := eval.Resources(cfg, reg, scope)
	evalDiags = append(evalDiags, d...)
	diags = append(diags, evalDiags...)
	// Attributes a sensitive resource (or its children) reads are as
	// secret as it is.
	readBySensitive := &eval.Scope{}
	for _, inst := range eval.Flatten(insts) {
		if inst.Sensitive {
			readBySensitive.Sensitive = append(readBySensitive.Sensitive, inst.NodePathsRead()...)
		}
	}
	if p.ReleaseSyntax {
		cfg.ReleaseSyntax()
	}

	pl, planDiags := p.planInstances(ctx, insts, salt, dp.prefetched)
	dataReads, d := dp.finish()
	evalDiags = append(evalDiags, d...)
	diags = append(append(diags, d...), planDiags...)
	if pl == nil {
		return nil, diags
	}
	pl.Data = dataReads
	pl.InputsDigest = cfg.InputsDigest()
	// Sources are recorded relative to the recipe (or policy) directory:
	// the plan is read on reviewers' machines and in pull requests, where
	// this host's absolute paths are noise.
	for _, d := range pl.Data {
		d.Source.Filename = cfg.DisplayPath(d.Source.Filename)
	}
	for _, r := range pl.Resources {
		r.Source.Filename = cfg.DisplayPath(r.Source.Filename)
		for _, e := range r.Lazy {
			e.Range.Filename = cfg.DisplayPath(e.Range.Filename)
		}
		for _, g := range r.GuardSpecs {
			if g != nil && g.Lazy != nil {
				g.Lazy.Range.Filename = cfg.DisplayPath(g.Lazy.Range.Filename)
			}
		}
	}
	for _, nr := range pl.NotifiedRuns {
		for _, g := range nr.GuardSpecs {
			if g != nil && g.Lazy != nil {
				g.Lazy.Range.Filename = cfg.DisplayPath(g.Lazy.Range.Filename)
			}
		}
	}
	{
		recorded, err := attributesOf(attrs.Leaves(), cfg, readBySensitive)
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
func attributesOf(leaves []config.Leaf, cfg *config.Config, readBySensitive *eval.Scope) ([]plan.Attribute, error) {
	out := make([]plan.Attribute, 0, len(leaves))
	var firstErr error
	for _, l := range leaves {
		a := plan.Attribute{
			Path:      strings.Join(l.Path, "."),
			Level:     l.Level,
			Source:    l.Source(cfg.DisplayPath),
			Sensitive: l.Sensitive || readBySensitive.Covers(l.Path),
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
	// The files of a directory are read through one descriptor of it
	// (resources.Reads): nothing changes the host while a plan reads.
	reads := resources.NewReads()
	defer reads.Close()
	ctx = resources.WithReads(ctx, reads)
	salt, err := p.salt()
	if err != nil {
		return nil, diags.Append(saltDiag(err))
	}
	return p.planInstances(ctx, insts, salt, nil)
}

func saltDiag(err error) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Cannot make the plan's salt",
		Detail:   fmt.Sprintf("Reading random bytes failed: %s.", err),
	}
}

// planInstances is PlanInstances with the plan's salt, in a batch of reads
// ctx carries; prefetched holds what was planned of top-level resources
// already (while the data blocks were read), by address: those are not
// planned again.
func (p *Planner) planInstances(ctx context.Context, insts []*eval.Instance, salt string, prefetched map[string]prefetch) (*plan.Plan, hcl.Diagnostics) {
	var diags hcl.Diagnostics
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
	// Resources are planned level by level: the top-level ones, then the
	// child resources of those that will take their actions (not the
	// children of one skipped by a guard, or whose action is nothing),
	// then theirs. Each level is read in parallel.
	results := make(map[*eval.Instance]outcome, len(insts))
	start := time.Now()
	for level := insts; len(level) > 0; {
		toPlan := level
		if len(prefetched) > 0 && level[0].Parent == nil {
			toPlan = usePrefetched(level, prefetched, results)
		}
		p.planLevel(ctx, logger, toPlan, salt, par, results)
		var next []*eval.Instance
		for _, inst := range level {
			if res := results[inst].res; res != nil && res.Kind != resources.Skip && res.Action != "nothing" {
				next = append(next, inst.Children...)
			}
		}
		level = next
	}

	order := eval.Flatten(insts)
	// What is deferred to apply waits only for earlier resources with
	// work that could change what it reads: in order, each resource's
	// values and guards no earlier one could change are settled now, and
	// the resource planned again with them (settled holds the instance
	// planned again, by the one evaluated).
	settled := map[*eval.Instance]*eval.Instance{}
	{
		cur := make([]*eval.Instance, len(order))
		rs := make([]*plan.Resource, len(order))
		for i, inst := range order {
			cur[i], rs[i] = inst, results[inst].res
		}
		for i, inst := range order {
			if ctx.Err() != nil || rs[i] == nil {
				continue
			}
			ni, res, steps, d, changed := p.settle(ctx, logger, cur, rs, i, salt)
			if !changed {
				continue
			}
			cur[i], rs[i], settled[inst] = ni, res, ni
			results[inst] = outcome{res, steps, append(results[inst].diags, d...)}
		}
	}
	current := func(inst *eval.Instance) *eval.Instance {
		if ni := settled[inst]; ni != nil {
			return ni
		}
		return inst
	}
	// What earlier steps bring (a package's files and units): the
	// resources that read it are planned again from it (foresight.go).
	nctx := ctx
	if ctx.Err() == nil {
		fs, d := p.foresee(ctx, logger, order, results, current, salt)
		diags = append(diags, d...)
		if fs != nil {
			nctx = resources.WithForesight(ctx, fs)
		}
	}

	var planned []*eval.Instance
	var ress []*plan.Resource
	types := map[string]bool{}
	// What each need's first provider is, for a need met too late.
	provided, providers := map[string]bool{}, map[string]*eval.Instance{}
	// The needs an earlier step meets only at apply, checked once the
	// notified runs, which may meet them, are planned.
	var awaiting []awaited
	for i := len(order) - 1; i >= 0; i-- {
		for _, st := range results[order[i]].steps {
			if st.Kind.IsWork() {
				for _, n := range st.Provides {
					providers[needKey(n)] = order[i]
				}
			}
		}
	}
	for _, inst := range order {
		o, ok := results[inst]
		if !ok {
			continue // a child of a resource that takes no action
		}
		diags = append(diags, o.diags...)
		if o.res != nil {
			if inst.Parent != nil {
				o.res.Parent, o.res.ParentStep = inst.Parent.Address(), inst.ParentStep
			}
			pl.Resources = append(pl.Resources, o.res)
			planned, ress = append(planned, current(inst)), append(ress, o.res)
			if d, ok := inst.Type.(resources.Definer); ok && !types[o.res.Type] {
				types[o.res.Type] = true
				pl.Types = append(pl.Types, d.Def())
			}
		}
		for _, st := range o.steps {
			diags = append(diags, unmetNeeds(current(inst), st, provided, providers)...)
			if o.res != nil && st.Kind.IsWork() {
				for _, n := range st.AwaitedNeeds() {
					awaiting = append(awaiting, awaited{current(inst), o.res, n})
				}
			}
		}
	}
	if ctx.Err() == nil {
		diags = append(diags, p.planNotifications(nctx, logger, planned, ress, pl, salt)...)
		diags = append(diags, p.checkAwaited(pl, awaiting)...)
	}
	markErrored(pl, diags)
	logger.Debug("planned resources", "count", len(pl.Resources), "parallelism", par, "errored", pl.Errored, "duration", time.Since(start))
	return pl, diags
}

// outcome is what planning one resource gave.
type outcome struct {
	res   *plan.Resource
	steps []*resources.Step
	diags hcl.Diagnostics
}

// planLevel plans insts in parallel (par at a time), after one batch read
// per type that reads in batches, into results.
func (p *Planner) planLevel(ctx context.Context, logger hclog.Logger, insts []*eval.Instance, salt string, par int, results map[*eval.Instance]outcome) {
	out := make([]outcome, len(insts))
	pre := p.preload(ctx, logger, insts)
	parallel.For(len(insts), par, func(i int) {
		inst := insts[i]
		if err := ctx.Err(); err != nil {
			out[i].diags = interrupted(inst, err)
			return
		}
		res, steps, d := p.planOne(ctx, logger, inst, salt, pre[inst])
		out[i] = outcome{res, steps, d}
	})
	for i, inst := range insts {
		results[inst] = out[i]
	}
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
	case inst.Block != nil:
		return inst.Block.Address()
	case inst.Resource != nil:
		return inst.Resource.Address()
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
	return &plan.Lifecycle{Registry: p.Registry, Logger: logger, Guards: p.Guards, Resolver: p.resolver()}
}

func (p *Planner) resolver() plan.Resolver {
	if p.Resolver != nil {
		return p.Resolver
	}
	return eval.Resolver{}
}

// planOne plans one resource. It never panics: a panicking type becomes an
// error diagnostic.
func (p *Planner) planOne(ctx context.Context, logger hclog.Logger, inst *eval.Instance, salt string, pre *resources.State) (*plan.Resource, []*resources.Step, hcl.Diagnostics) {
	res, steps, diags := p.planResource(ctx, logger, inst, salt, pre)
	if res == nil {
		steps = nil
	}
	return res, steps, diags
}

// planResource plans one resource; steps are what its actions would do,
// in order (none when it is not read: skipped, or action nothing).
func (p *Planner) planResource(ctx context.Context, logger hclog.Logger, inst *eval.Instance, salt string, pre *resources.State) (res *plan.Resource, steps []*resources.Step, diags hcl.Diagnostics) {
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
	log := logger
	if log.IsDebug() {
		log = logger.With("resource", addr)
	}
	// A plan only printed as text keeps nothing of a resource of one
	// action planned unchanged but what the text shows (no desired values,
	// no live reading): they were most of a no-op plan's memory. (A
	// resource with values known at apply, or with or of child resources,
	// keeps all: the text reads its parts.) Its desired values are made
	// once its step says they are needed.
	printOnly := p.PrintOnly && len(inst.Actions) <= 1 && len(inst.Lazy) == 0 && inst.Parent == nil && len(inst.Children) == 0
	forget := false // set once its step is read and changes nothing
	defer func() {
		if res != nil && res.Desired == nil && !forget {
			res.Desired = plan.DesiredValues(desired)
		}
	}()

	res = &plan.Resource{
		Address:       addr,
		Type:          desired.Type,
		Name:          desired.Name,
		Index:         desired.Key,
		Action:        desired.Action,
		Sensitive:     inst.Sensitive,
		IgnoreFailure: inst.IgnoreFailure,
		Lazy:          inst.Lazy,
	}
	if res.Action == "" {
		res.Action = schema.DefaultAction
	}
	res.SensitiveProperties = sensitivity(inst)
	if inst.Block != nil {
		r := inst.Block.DeclRange
		res.Source = plan.Range{Filename: r.Filename, Line: r.Start.Line, Column: r.Start.Column}
	}

	if res.Action == "nothing" {
		res.Kind = resources.NoOp
		res.Reason = plan.ReasonNothing
		log.Debug("planned resource", "kind", res.Kind, "reason", res.Reason)
		return res, nil, nil
	}

	if d := unknownValues(inst, desired); d.HasErrors() {
		return nil, nil, d
	}
	hostNeeds, d := hostChecks(inst, desired)
	if d.HasErrors() {
		return nil, nil, append(diags, d...)
	}

	res.GuardSpecs = inst.Guards
	readings, err := p.lifecycle(logger).EvaluateActions(ctx, &plan.Subject{
		Address: addr, Type: inst.Type, Desired: desired, Guards: inst.Guards,
		Sensitive: inst.Sensitive, SensitiveProps: res.SensitiveProperties, Salt: salt,
		State: pre, ForgetNoOp: printOnly, Lazy: inst.Lazy, Deferred: plan.DeferredShow,
	}, inst.Actions)
	rd := readings[0]
	if err != nil {
		return nil, nil, lifecycleDiags(inst, readings[len(readings)-1], err)
	}
	res.Guards = GuardResults(rd.Guards, rd.DecidedBy)
	if rd.Skip {
		res.Kind = resources.Skip
		res.Reason = plan.ComposeReason(res.Kind, "", res.Guards, res.GuardSpecs, res.Sensitive)
		log.Debug("planned resource", "kind", res.Kind, "reason", res.Reason)
		return res, nil, nil
	}
	step := rd.Step
	res.Kind = step.Kind
	res.StepReason = step.Reason
	res.Reason = plan.ComposeReason(res.Kind, step.Reason, res.Guards, res.GuardSpecs, res.Sensitive)
	res.Groups = step.Groups
	res.Current = rd.Current
	res.Fingerprint = rd.Fingerprint()
	res.Changes = changesOf(desired, step.Changes)
	forget = printOnly && step.Kind == resources.NoOp
	steps = append(steps, step)
	for i, later := range readings[1:] {
		st := later.Step
		res.Then = append(res.Then, &plan.ActionStep{
			Action: inst.Actions[i+1], Kind: st.Kind, StepReason: st.Reason, Reason: st.Reason,
			Changes: changesOf(desired, st.Changes), Groups: st.Groups, Current: later.Current,
		})
		steps = append(steps, st)
	}
	for _, st := range steps {
		if st.Kind.IsWork() {
			st.Needs = append(st.Needs, hostNeeds...)
		}
	}
	log.Debug("planned resource", "kind", res.Kind, "reason", res.Reason, "changes", len(res.Changes), "actions", len(steps))
	return res, steps, nil
}

// unmetNeeds checks step's needs against what earlier steps provide (and
// records what step provides): a need nothing provides would fail at
// apply, after earlier resources changed the host, so it fails the plan.
// providers are the first resource of the plan that provides each need,
// to name one that comes too late.
func unmetNeeds(inst *eval.Instance, step *resources.Step, provided map[string]bool, providers map[string]*eval.Instance) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if step.Kind.IsWork() {
		for _, n := range step.Needs {
			if n.AtApply && n.Property != "" {
				continue // met at apply, or not: checkAwaited
			}
			if provided[needKey(n)] {
				continue
			}
			if n.Missing != "" {
				diags = diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing " + n.What, Detail: n.Missing, Subject: needRange(inst, n)})
				continue
			}
			detail := fmt.Sprintf("%s needs the %s %s, which does not exist, and no earlier resource of the plan creates it: apply would fail there, after earlier resources changed the host. ",
				instAddress(inst), n.What, n.Value)
			if p := providers[needKey(n)]; p != nil && p != inst {
				detail += fmt.Sprintf("%s creates it, but later: resources converge in the order they are declared, so declare %s before %s.",
					instAddress(p), instAddress(p), instAddress(inst))
			} else if n.Missing != "" {
				detail = n.Missing
			} else {
				hint := ""
				if n.Namespace == resources.NamespacePath {
					hint = " (with recursive = true it creates missing parents too)"
				}
				detail += fmt.Sprintf("Declare a %s resource for %s before %s%s.", n.What, n.Value, instAddress(inst), hint)
			}
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing " + n.What,
				Detail:   detail,
				Subject:  needRange(inst, n),
			})
		}
		for _, n := range step.Provides {
			provided[needKey(n)] = true
		}
	}
	return diags
}

// awaited is a need of a resource's step that an earlier step meets only
// at apply (resources.Need.AtApply).
type awaited struct {
	inst *eval.Instance
	res  *plan.Resource
	need resources.Need
}

// checkAwaited records, for each need met at apply, the value its
// resource's type knows only then (plan.Resource.Awaits), when an
// earlier resource or notified run of pl with work meets it
// (resources.NeedMeeter). One nothing earlier meets is the need's
// Missing error, naming what meets it too late, or has no work; a
// resource of several actions cannot wait (its later actions are
// planned from what the first leaves, which is not known).
func (p *Planner) checkAwaited(pl *plan.Plan, awaiting []awaited) hcl.Diagnostics {
	if len(awaiting) == 0 {
		return nil
	}
	// The registry of the plan's own types, as the plan's reader checks
	// the same rule with (plan.Plan.check).
	reg, err := pl.TypeRegistry(p.Registry)
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot check what waits for apply",
			Detail: fmt.Sprintf("The plan's resource types could not be read back: %s. This is a bug in toque.", err)}}
	}
	var diags hcl.Diagnostics
	type key struct {
		res  *plan.Resource
		prop string
	}
	seen := map[key]bool{} // one verdict per property, whatever its steps
	for _, w := range awaiting {
		a := plan.AwaitOf(w.need)
		if seen[key{w.res, a.Property}] {
			continue
		}
		seen[key{w.res, a.Property}] = true
		addr := w.res.Address
		if len(w.res.Then) > 0 {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing " + w.need.What,
				Detail: fmt.Sprintf("%s\n\n%s takes several actions, and its %s would be known only at apply, from which its later actions could not be planned: give it one action.",
					w.need.Missing, addr, a.Property),
				Subject: needRange(w.inst, w.need),
			})
			continue
		}
		if len(pl.MeetersOf(reg, w.res, a)) > 0 {
			w.res.Awaits = append(w.res.Awaits, a)
			continue
		}
		// One error per missing thing, however many values wait for it
		// (an editor's content and checksum wait for one file).
		missing := key{w.res, "\x00" + needKey(w.need)}
		if seen[missing] {
			continue
		}
		seen[missing] = true
		detail := w.need.Missing
		if detail == "" {
			detail = fmt.Sprintf("%s needs %s, and no earlier resource of the plan provides it.", addr, w.need.What)
		}
		for _, m := range pl.LaterMeetersOf(reg, w.res, a) {
			if m.Notified {
				detail += fmt.Sprintf("\n\n%s would meet it, but runs after %s: a notified run runs in its notifier's turn (immediately, before) or at the end (delayed), so notify it immediately from a resource declared before %s.", m, addr, addr)
			} else {
				detail += fmt.Sprintf("\n\n%s would meet it, but converges after %s: resources converge in the order they are declared, so declare it before %s.", m, addr, addr)
			}
		}
		for _, m := range pl.IdleMeetersOf(reg, w.res, a) {
			detail += fmt.Sprintf("\n\n%s would meet it, but it has nothing to do in this plan (%s).", m, m.Reason)
		}
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing " + w.need.What,
			Detail:   detail,
			Subject:  needRange(w.inst, w.need),
		})
	}
	return diags
}

// needRange is where inst asks for n: the attribute whose host check
// found it missing (an owner), or the block.
func needRange(inst *eval.Instance, n resources.Need) *hcl.Range {
	if inst != nil && inst.Resource != nil {
		for _, prop := range inst.Resource.Schema().Properties {
			if prop.HostCheck == nil || !inst.Resource.IsSet(prop.Name) {
				continue
			}
			var missing *resources.MissingError
			if err := prop.HostCheck(inst.Resource.Values[prop.Name]); errors.As(err, &missing) && needKey(missing.Need) == needKey(n) {
				return attributeRange(inst, prop.Name)
			}
		}
	}
	return declRange(inst)
}

// needKey is n's identity: its namespace and value.
func needKey(n resources.Need) string { return n.Namespace + "\x00" + n.Value }

// sensitivity names which of inst's set properties have hidden values
// (Resource.SensitiveProperties): those the type marks sensitive, and those
// whose value the recipe made sensitive. Renderings hide them, and every
// value of a sensitive resource.
func sensitivity(inst *eval.Instance) []string {
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
	return props
}

// preload reads, one batch per type that reads in batches
// (resources.BatchLoader), every resource the plan will read.
func (p *Planner) preload(ctx context.Context, logger hclog.Logger, insts []*eval.Instance) map[*eval.Instance]*resources.State {
	var subjects []*plan.Subject
	of := map[*plan.Subject]*eval.Instance{}
	for _, inst := range insts {
		if inst == nil || inst.Resource == nil || inst.Type == nil || inst.Resource.Action == "nothing" {
			continue
		}
		if _, ok := inst.Type.(resources.BatchLoader); !ok {
			continue
		}
		if _, ok := inst.Type.(resources.BatchSharer); ok && !guard.PassAtPlan(inst.Guards) {
			// What the others of its batch are planned on must not
			// depend on a guard: it is read on its own, unless its
			// guards are expressions that let it run, decided now for
			// good (a resource_group's only_if = node.…).
			continue
		}
		desired := inst.Resource
		if len(inst.Actions) > 1 {
			desired = desired.WithLater(inst.Actions[1:])
		}
		s := &plan.Subject{Address: instAddress(inst), Type: inst.Type, Desired: desired}
		subjects = append(subjects, s)
		of[s] = inst
	}
	if len(subjects) == 0 {
		return nil
	}
	out := map[*eval.Instance]*resources.State{}
	for s, st := range p.lifecycle(logger).Preload(ctx, subjects) {
		out[of[s]] = st
	}
	return out
}

// lifecycleDiags words a lifecycle failure of inst as a plan diagnostic:
// one summary per phase, the lifecycle's own message as the detail,
// pointing at the guard that could not run or at the resource's block.
func lifecycleDiags(inst *eval.Instance, rd *plan.Reading, err error) hcl.Diagnostics {
	addr := instAddress(inst)
	subject := declRange(inst)
	if d := needsRoot(addr, subject, err); d != nil {
		return hcl.Diagnostics{d}
	}
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
	// A type that blames one property's value has it pointed at.
	if pe := (*resources.PropertyError)(nil); errors.As(err, &pe) && inst.Resource != nil && inst.Resource.IsSet(pe.Property) {
		subject = attributeRange(inst, pe.Property)
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf("%s: %s.", addr, err),
		Subject:  subject,
	}}
}

// needsRoot is the diagnostic of what only root may do (a
// *resources.NeedsRootError in err's chain), nil for any other error: one
// line, "ADDRESS: REASON", with the error kept as its cause, so that views
// list it as such and still show the rest of the plan.
func needsRoot(addr string, subject *hcl.Range, err error) *hcl.Diagnostic {
	var nr *resources.NeedsRootError
	if !errors.As(err, &nr) {
		return nil
	}
	return diag.WithCause(&hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Needs root",
		Detail:   fmt.Sprintf("%s: %s.", addr, nr.Reason),
		Subject:  subject,
	}, nr)
}

// changesOf names the properties a step changes. Their values are the
// plan's desired values and live reading, from which renderings show them
// — except a value the type computed from the host rather than took from
// the recipe (the version apt would install, the sha256 of what a URL
// serves), which is kept as the change's Planned value: apply refuses a
// step whose value is not it. A type's note on a change is kept with it.
func changesOf(desired *resources.Resource, changes []resources.Change) []plan.Change {
	if len(changes) == 0 {
		return nil
	}
	out := make([]plan.Change, len(changes))
	for i, c := range changes {
		out[i] = plan.Change{Property: c.Property, Note: c.Note}
		if c.After != cty.NilVal && !c.After.IsWhollyKnown() {
			continue // known only at apply (Resource.Lazy, Resource.Awaits)
		}
		if planned(desired, c) {
			v := plan.Value{Value: c.After}
			out[i].Planned = &v
		}
	}
	return out
}

// planned reports whether c's value is the type's, not the recipe's (set
// or default).
func planned(desired *resources.Resource, c resources.Change) bool {
	if c.After == cty.NilVal || c.Default {
		return false
	}
	prop := desired.Schema().Property(c.Property)
	if prop == nil {
		return true
	}
	if desired.IsSet(c.Property) {
		return !prop.Equals(desired.Values[c.Property], c.After)
	}
	return true
}

// unknownValues refuses a value not known at plan that the plan has no
// expression for: one computed from a value known only at apply (a child
// resource's value read from its parent's lazy property). The plan would
// drop it, and apply converge without it; only what is written lazy(…) is
// carried to apply.
func unknownValues(inst *eval.Instance, desired *resources.Resource) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, prop := range desired.Schema().Properties {
		v, ok := desired.Values[prop.Name]
		if !ok || v == cty.NilVal || v.IsWhollyKnown() || inst.Lazy[prop.Name] != nil {
			continue
		}
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Value not known at plan",
			Detail:   fmt.Sprintf("The property %q of %s is not known when the plan is made: it is computed from a value known only at apply (a parent's lazy(…) property, read by its child resource). A value known only at apply belongs to its own resource and is not passed on: make what this is computed from known at plan.", prop.Name, desired.Address()),
			Subject:  attributeRange(inst, prop.Name),
		})
	}
	return diags
}

// hostChecks runs the schema's plan-time host checks on the set values (an
// owner that must exist), so a value apply could not use fails the plan
// rather than an apply half-way. The diagnostic points at the attribute
// when the block's body can say where it is. What the host lacks but an
// earlier resource may create (a *resources.MissingError: an owner a user
// resource creates) is returned as needs for the resource's steps instead.
func hostChecks(inst *eval.Instance, desired *resources.Resource) ([]resources.Need, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var needs []resources.Need
	for _, prop := range desired.Schema().Properties {
		if prop.HostCheck == nil || !desired.IsSet(prop.Name) || !desired.Values[prop.Name].IsWhollyKnown() {
			continue // unset, or known only at apply (checked then)
		}
		if err := prop.HostCheck(desired.Values[prop.Name]); err != nil {
			var missing *resources.MissingError
			if errors.As(err, &missing) {
				needs = append(needs, missing.Need)
				continue
			}
			if d := needsRoot(desired.Address(), attributeRange(inst, prop.Name), err); d != nil {
				diags = diags.Append(d)
				continue
			}
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid value for property",
				Detail:   fmt.Sprintf("The property %q of %s: %s.", prop.Name, desired.Address(), err),
				Subject:  attributeRange(inst, prop.Name),
			})
		}
	}
	return needs, diags
}

// attributeRange is the range of attribute name in inst's block, or the
// block's range.
func attributeRange(inst *eval.Instance, name string) *hcl.Range {
	if inst.Block == nil {
		return nil
	}
	if r, ok := inst.Block.AttributeRange(name); ok {
		return r.Ptr()
	}
	return inst.Block.DeclRange.Ptr()
}
