package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// How the data blocks are read (data "TYPE" "NAME" { … }):
//
// Each block is read once the blocks its arguments read have answered,
// Parallelism at a time, in goroutines of their own. Meanwhile the
// resources that read no data are evaluated and read too: when no
// resource reads data, the whole plan is made while the data blocks are
// read; otherwise the blocks that read none are evaluated apart and their
// top-level resources planned (prefetch), then, once every data block has
// answered, the whole configuration is evaluated with the answers and the
// resources planned already are not planned again. A data block that
// cannot be read fails the plan before any resource that reads data is
// evaluated: its error is the one to fix.

// dataPhase is what reading the data blocks gave.
type dataPhase struct {
	// scope is the scope with the data blocks' answers (the one given,
	// when the answers are still being read: pending).
	scope *eval.Scope
	// reads are the plan's data reads, in declaration order.
	reads []*plan.DataRead
	// prefetched is what was planned of the top-level resources that read
	// no data while the data blocks were read, by address.
	prefetched map[string]prefetch
	// pending is set when no resource reads data: the reads go on while
	// the plan is made, and finish waits for them.
	pending *dataReader
}

// prefetch is a resource planned while the data blocks were read.
type prefetch struct {
	out  outcome
	decl hcl.Range
}

// readData checks cfg's data blocks and reads them (see above).
func (p *Planner) readData(ctx context.Context, cfg *config.Config, reg *resources.Registry, scope *eval.Scope, salt string) (*dataPhase, hcl.Diagnostics) {
	dp := &dataPhase{scope: scope}
	if len(cfg.Data) == 0 {
		return dp, nil
	}
	blocks, diags := eval.DataBlocks(cfg, reg)
	if diags.HasErrors() {
		return dp, diags
	}
	logger := p.logger().Named("data")
	own := *scope // (the caller sets the scope's fields while the reads go on)
	r := &dataReader{p: p, cfg: cfg, scope: &own, salt: salt, logger: logger, blocks: blocks}
	r.start(ctx, p.parallelism())
	readsData := false
	for _, b := range cfg.Resources {
		if eval.ReadsData(b) {
			readsData = true
			break
		}
	}
	if !readsData {
		dp.pending = r
		return dp, diags
	}
	dp.prefetched = p.prefetch(ctx, logger, cfg, reg, scope, salt)
	reads, answers, d := r.wait()
	diags = append(diags, d...)
	if diags.HasErrors() {
		return dp, diags
	}
	dp.reads = reads
	dp.scope = scope.WithData(cfg.Data, answers)
	return dp, diags
}

// finish waits for reads still going on (pending), and returns them.
func (dp *dataPhase) finish() ([]*plan.DataRead, hcl.Diagnostics) {
	if dp.pending == nil {
		return dp.reads, nil
	}
	reads, _, diags := dp.pending.wait()
	return reads, diags
}

// prefetch evaluates the resource blocks of cfg that read no data, and
// plans their top-level resources, while the data blocks are read: what
// PlanInstances then need not plan again. A type whose batch holds
// resources of others (the file editors, resources.BatchSharer) is left
// to be planned with them.
func (p *Planner) prefetch(ctx context.Context, logger hclog.Logger, cfg *config.Config, reg *resources.Registry, scope *eval.Scope, salt string) map[string]prefetch {
	var blocks []*config.ResourceBlock
	for _, b := range cfg.Resources {
		if !eval.ReadsData(b) {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		return nil
	}
	sub := *cfg
	sub.Resources = blocks
	sc := *scope
	sc.ReleaseSyntax = false // evaluated again with the data
	// Its diagnostics are the whole's to report: references to the
	// resources left out are errors here, and an instance returned
	// evaluated without error whatever they say.
	insts, _ := eval.Resources(&sub, reg, &sc)
	var top []*eval.Instance
	for _, inst := range insts {
		if _, shares := inst.Type.(resources.BatchSharer); !shares && inst.Block != nil {
			top = append(top, inst)
		}
	}
	results := make(map[*eval.Instance]outcome, len(top))
	p.planLevel(ctx, logger, top, salt, p.parallelism(), results)
	out := make(map[string]prefetch, len(results))
	for inst, o := range results {
		out[instAddress(inst)] = prefetch{out: o, decl: inst.Block.DeclRange}
	}
	return out
}

// usePrefetched records in results what was planned already of level's
// resources, and returns the others.
func usePrefetched(level []*eval.Instance, pre map[string]prefetch, results map[*eval.Instance]outcome) []*eval.Instance {
	rest := make([]*eval.Instance, 0, len(level))
	for _, inst := range level {
		if f, ok := pre[instAddress(inst)]; ok && inst.Block != nil && inst.Block.DeclRange == f.decl {
			results[inst] = f.out
			continue
		}
		rest = append(rest, inst)
	}
	return rest
}

func (p *Planner) parallelism() int {
	if p.Parallelism <= 0 {
		return DefaultParallelism
	}
	return p.Parallelism
}

// dataReader reads data blocks, each in a goroutine that waits for the
// blocks it reads, par at a time.
type dataReader struct {
	p      *Planner
	cfg    *config.Config
	scope  *eval.Scope
	salt   string
	logger hclog.Logger
	blocks []*eval.DataBlock

	sem  chan struct{}
	done map[string]chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	answers map[string]eval.DataAnswer
	reads   map[string]*plan.DataRead
	failed  map[string]bool
	diags   map[string]hcl.Diagnostics
}

func (r *dataReader) start(ctx context.Context, par int) {
	r.sem = make(chan struct{}, par)
	r.done = make(map[string]chan struct{}, len(r.blocks))
	r.answers = map[string]eval.DataAnswer{}
	r.reads = map[string]*plan.DataRead{}
	r.failed = map[string]bool{}
	r.diags = map[string]hcl.Diagnostics{}
	for _, b := range r.blocks {
		r.done[b.Key()] = make(chan struct{})
	}
	for _, b := range r.blocks {
		r.wg.Add(1)
		go r.read(ctx, b)
	}
}

// wait waits for every read, and returns the reads in declaration order,
// the answers by TYPE.NAME, and the errors, in declaration order.
func (r *dataReader) wait() ([]*plan.DataRead, map[string]eval.DataAnswer, hcl.Diagnostics) {
	r.wg.Wait()
	var reads []*plan.DataRead
	var diags hcl.Diagnostics
	for _, b := range r.cfg.Data {
		k := b.Type + "." + b.Name
		if d := r.reads[k]; d != nil {
			reads = append(reads, d)
		}
		diags = append(diags, r.diags[k]...)
	}
	return reads, r.answers, diags
}

// read reads one block, once the blocks it reads have answered.
func (r *dataReader) read(ctx context.Context, b *eval.DataBlock) {
	defer r.wg.Done()
	key := b.Key()
	defer close(r.done[key])
	for _, dep := range b.Deps {
		if ch := r.done[dep]; ch != nil {
			<-ch
		}
	}
	r.mu.Lock()
	known := make(map[string]eval.DataAnswer, len(b.Deps))
	for _, dep := range b.Deps {
		a, ok := r.answers[dep]
		if !ok || r.failed[dep] {
			// Not read: its own error says why.
			r.failed[key] = true
			r.mu.Unlock()
			return
		}
		known[dep] = a
	}
	r.mu.Unlock()
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-ctx.Done():
		r.fail(key, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Planning interrupted", Detail: fmt.Sprintf("%s was not read: %s.", b.Block.Address(), ctx.Err()), Subject: b.Block.DeclRange.Ptr()}})
		return
	}
	args, sensitive, diags := b.Arguments(r.scope.WithData(r.cfg.Data, known))
	if diags.HasErrors() {
		r.fail(key, diags)
		return
	}
	log := r.logger.With("data", b.Block.Address())
	t0 := time.Now()
	v, err := safeRead(ctx, b.Source, &resources.DataRequest{Name: b.Block.Name, Args: args, Sensitive: sensitive, Logger: log})
	took := time.Since(t0)
	if err == nil {
		err = checkAnswer(v)
	}
	if err != nil {
		detail := fmt.Sprintf("%s: %s", b.Block.Address(), err)
		if !strings.Contains(detail, "\n") {
			detail += "."
		}
		if errors.Is(err, context.Canceled) {
			detail = fmt.Sprintf("%s was not read: %s.", b.Block.Address(), err)
		}
		r.fail(key, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read " + b.Block.Address(), Detail: detail, Subject: b.Block.DeclRange.Ptr()}))
		return
	}
	digest, err := plan.DataDigest(v, sensitive, r.salt)
	if err != nil {
		r.fail(key, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot record " + b.Block.Address(), Detail: fmt.Sprintf("Its answer cannot be stored in the plan: %s.", err), Subject: b.Block.DeclRange.Ptr()}))
		return
	}
	rd := &plan.DataRead{
		Address: b.Block.Address(), Type: b.Block.Type, Name: b.Block.Name,
		Source:    plan.Range{Filename: b.Block.DeclRange.Filename, Line: b.Block.DeclRange.Start.Line, Column: b.Block.DeclRange.Start.Column},
		Sensitive: sensitive, Digest: digest, DurationMS: took.Milliseconds(),
	}
	if len(args) > 0 {
		rd.Arguments = make(map[string]plan.Value, len(args))
		for k, a := range args {
			rd.Arguments[k] = plan.Value{Value: a}
		}
	}
	if !sensitive {
		rd.Answer = &plan.Value{Value: v}
	}
	log.Debug("data read", "duration", took, "digest", digest)
	r.mu.Lock()
	r.answers[key] = eval.DataAnswer{Value: v, Sensitive: sensitive}
	r.reads[key] = rd
	r.diags[key] = diags
	r.mu.Unlock()
}

func (r *dataReader) fail(key string, diags hcl.Diagnostics) {
	r.mu.Lock()
	r.failed[key] = true
	r.diags[key] = diags
	r.mu.Unlock()
}

// safeRead reads a data source, turning a panic into an error: a broken
// data source must not take toque down.
func safeRead(ctx context.Context, src resources.DataSource, req *resources.DataRequest) (v cty.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = cty.NilVal, fmt.Errorf("internal error in the data source %q: %v", src.Schema().Name, p)
		}
	}()
	return src.Read(ctx, req)
}

// checkAnswer refuses an answer a plan cannot carry: unknown, marked, or
// larger than resources.MaxDataAnswer as JSON.
func checkAnswer(v cty.Value) error {
	switch {
	case v == cty.NilVal:
		return errors.New("the data source gave no answer (a bug in it)")
	case !v.IsWhollyKnown() || v.ContainsMarked():
		return errors.New("the data source gave an answer that is not wholly known (a bug in it)")
	}
	b, err := (plan.Value{Value: v}).MarshalJSON()
	if err != nil {
		return fmt.Errorf("its answer cannot be stored in the plan: %w", err)
	}
	if len(b) > resources.MaxDataAnswer {
		return fmt.Errorf("it answered %d bytes, more than a plan carries of one data block (%d MiB): read less (narrow its arguments)", len(b), resources.MaxDataAnswer>>20)
	}
	return nil
}
