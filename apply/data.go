package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// maxDataDifferences is how many differing paths a stale data read lists.
const maxDataDifferences = 10

// preflightData reads every data block of the plan again (plan.DataRead:
// its data source, with the arguments the plan carries), in the
// background, PreflightParallelism at a time, beside pre-flight's
// resource checks. The function it returns waits for them: a read whose
// answer's digest is not the plan's makes the plan stale (the paths that
// differ are listed, or the digests of a sensitive answer), as a resource
// that moved does; a read that fails is an error. Nothing is compared
// when an earlier apply of the plan started: what it converged may be what
// the data blocks read (data.users after the users' ageing changed), and
// the resources it finished are not checked again either.
func (r *run) preflightData(ctx context.Context) func() ([]StaleResource, []error) {
	if len(r.p.Data) == 0 {
		return func() ([]StaleResource, []error) { return nil, nil }
	}
	if r.j.past.applies > 0 {
		r.logger.Debug("data blocks not read again: an earlier apply of the plan started", "data", len(r.p.Data))
		return func() ([]StaleResource, []error) { return nil, nil }
	}
	stale := make([]*StaleResource, len(r.p.Data))
	errs := make([]error, len(r.p.Data))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		reads := resources.NewReads()
		defer reads.Close()
		rctx := resources.WithReads(ctx, reads)
		parallel.For(len(r.p.Data), PreflightParallelism, func(i int) {
			if ctx.Err() == nil {
				stale[i], errs[i] = r.checkData(rctx, r.p.Data[i])
			}
		})
	}()
	return func() ([]StaleResource, []error) {
		wg.Wait()
		var ss []StaleResource
		var es []error
		for i := range r.p.Data {
			if stale[i] != nil {
				ss = append(ss, *stale[i])
			}
			if errs[i] != nil {
				es = append(es, errs[i])
			}
		}
		return ss, es
	}
}

// checkData reads d again and compares its answer's digest with the
// plan's.
func (r *run) checkData(ctx context.Context, d *plan.DataRead) (*StaleResource, error) {
	src, ok := r.reg.DataSource(d.Type)
	if !ok {
		return nil, &ResourceError{Address: d.Address, Err: fmt.Errorf("data source %q is not known to this build of toque", d.Type)}
	}
	v, err := readData(ctx, src, &resources.DataRequest{Name: d.Name, Args: d.Args(), Sensitive: d.Sensitive, Logger: r.logger.With("data", d.Address)})
	if err != nil {
		return nil, &ResourceError{Address: d.Address, Err: fmt.Errorf("cannot read it again: %w", err)}
	}
	digest, err := plan.DataDigest(v, d.Sensitive, r.p.Salt)
	if err != nil {
		return nil, &ResourceError{Address: d.Address, Err: err}
	}
	if digest == d.Digest {
		return nil, nil
	}
	return &StaleResource{Address: d.Address, Differences: plan.DataDifferences(d, v, digest, maxDataDifferences)}, nil
}

// readData reads a data source, turning a panic into an error.
func readData(ctx context.Context, src resources.DataSource, req *resources.DataRequest) (v cty.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = cty.NilVal, fmt.Errorf("internal error in the data source %q: %v", src.Schema().Name, p)
		}
	}()
	v, err = src.Read(ctx, req)
	if err == nil && (v == cty.NilVal || !v.IsWhollyKnown()) {
		err = errors.New("the data source gave no answer (a bug in it)")
	}
	return v, err
}

// What words what a stale error counts: "2 resources", "1 data block",
// "1 resource and 1 data block" (a data block's address starts data.).
func (e *StaleError) What() string {
	res, data := 0, 0
	for _, r := range e.Resources {
		if strings.HasPrefix(r.Address, "data.") {
			data++
		} else {
			res++
		}
	}
	var parts []string
	if res > 0 || data == 0 {
		parts = append(parts, fmt.Sprintf("%d resource%s", res, plural(res)))
	}
	if data > 0 {
		parts = append(parts, fmt.Sprintf("%d data block%s", data, plural(data)))
	}
	return strings.Join(parts, " and ")
}
