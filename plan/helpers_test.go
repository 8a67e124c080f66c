package plan

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/resources"
)

// fakeType is a file-like resource type whose "host" is a map of states,
// so the planner can be tested without touching the machine.
type fakeType struct {
	schema *resources.Schema

	mu      sync.Mutex
	states  map[string]*resources.State
	loadErr map[string]error
	planErr map[string]error
	delay   map[string]time.Duration
	panics  map[string]bool

	running, maxRunning atomic.Int32
	loads               atomic.Int32
}

func normMode(v cty.Value) (cty.Value, error) {
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return v, nil
	}
	s := v.AsString()
	for len(s) < 4 {
		s = "0" + s
	}
	return cty.StringVal(s), nil
}

func newFakeType() *fakeType {
	return &fakeType{
		schema: &resources.Schema{
			Name: "fake_file",
			Properties: []*resources.Property{
				{Name: "path", Type: cty.String, NameProperty: true},
				{Name: "content", Type: cty.String, Content: true},
				{Name: "mode", Type: cty.String, Default: cty.StringVal("0644"), Normalize: normMode},
				{Name: "secret", Type: cty.String, Sensitive: true},
				{Name: "backup", Type: cty.Bool, NonState: true},
			},
			Actions:       []string{"create", "delete", "run"},
			DefaultAction: "create",
		},
		states:  map[string]*resources.State{},
		loadErr: map[string]error{},
		planErr: map[string]error{},
		delay:   map[string]time.Duration{},
		panics:  map[string]bool{},
	}
}

func (f *fakeType) Schema() *resources.Schema { return f.schema }

func (f *fakeType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		m := f.maxRunning.Load()
		if n <= m || f.maxRunning.CompareAndSwap(m, n) {
			break
		}
	}
	f.loads.Add(1)
	for k := range r.Values {
		if p := f.schema.Property(k); p.IsDesiredState() {
			return nil, errors.New("Load was given desired-state property " + k)
		}
	}
	f.mu.Lock()
	d, err, st, boom := f.delay[r.Name], f.loadErr[r.Name], f.states[r.Name], f.panics[r.Name]
	f.mu.Unlock()
	if boom {
		panic("fake type exploded")
	}
	if d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	if st == nil {
		return resources.Absent(), nil
	}
	cp := &resources.State{Exists: st.Exists, Values: map[string]cty.Value{}, Extra: st.Extra}
	for k, v := range st.Values {
		cp.Values[k] = v
	}
	return cp, nil
}

func (f *fakeType) Plan(desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	f.mu.Lock()
	err := f.planErr[desired.Name]
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	switch desired.Action {
	case "delete":
		if !current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: "does not exist"}, nil
		}
		return &resources.Step{Kind: resources.Delete, Reason: "exists"}, nil
	case "run":
		return &resources.Step{Kind: resources.Run, Reason: resources.NoGuardReason}, nil
	}
	return resources.ConvergeIfChanged(desired, current), nil
}

func (f *fakeType) Converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return errors.New("the fake type never converges")
}

// inst makes an instance of t named name at line line of a fake recipe.
func (f *fakeType) inst(name, action string, line int, values map[string]cty.Value) *config.Instance {
	vals := map[string]cty.Value{"path": cty.StringVal(name)}
	for k, v := range values {
		vals[k] = v
	}
	rng := hcl.Range{Filename: "recipes/default.hcl", Start: hcl.Pos{Line: line, Column: 1, Byte: 0}, End: hcl.Pos{Line: line, Column: 20}}
	return &config.Instance{
		Block: &config.ResourceBlock{
			Type:      f.schema.Name,
			Name:      name,
			DeclRange: rng,
		},
		Type:     f,
		Resource: resources.NewResource(f.schema, name, action, vals),
	}
}

func (f *fakeType) set(name string, values map[string]cty.Value) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[name] = &resources.State{Exists: true, Values: values}
}

// fixedPlanner plans for host web-01 at a fixed time with a fixed salt, so
// plans (and their digests) are reproducible.
func fixedPlanner(f *fakeType, par int) *Planner {
	return &Planner{
		Registry:    resources.NewRegistry(f),
		Parallelism: par,
		Host:        &host.Facts{Identity: host.Identity{Hostname: "web-01", MachineID: "0123456789abcdef"}},
		Version:     "0.1.0-test",
		Now:         func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600)) },
		Rand:        bytes.NewReader(bytes.Repeat([]byte{0xab}, 16)),
	}
}

func str(s string) cty.Value { return cty.StringVal(s) }

// fakeGuards decides guards from a table, keyed by resource name: the
// results to record and whether they skip. Its Evaluate is a GuardFunc.
type fakeGuards struct {
	results map[string][]GuardResult
	skip    map[string]bool
	fail    map[string]bool
}

func (g *fakeGuards) Evaluate(_ context.Context, s *Subject) ([]guard.Outcome, bool, int, error) {
	name := s.Desired.Name
	if g.fail[name] {
		return []guard.Outcome{{Spec: &guard.Spec{Kind: guard.OnlyIf}, Err: errors.New("cannot run")}}, false, -1, errors.New("cannot run")
	}
	var outs []guard.Outcome
	decided := -1
	for i, r := range g.results[name] {
		outs = append(outs, guard.Outcome{
			Spec:        &guard.Spec{Kind: guard.Kind(r.Kind), Form: guard.Form(r.Form), Source: r.Command, Interpreter: r.Interpreter, Inherited: r.Inherited},
			Condition:   r.Passed,
			ExitCode:    r.ExitCode,
			Duration:    time.Duration(r.DurationMS) * time.Millisecond,
			Output:      r.Output,
			Warning:     r.Warning,
			Cwd:         r.Cwd,
			Environment: r.Environment,
			User:        r.User,
		})
		if r.Decided {
			decided = i
		}
	}
	return outs, g.skip[name], decided, nil
}

// guarded gives i one guard, which the planner's fakeGuards decides.
func guarded(i *config.Instance) *config.Instance {
	i.Block.Meta.OnlyIf = hcl.StaticExpr(cty.True, i.Block.DeclRange)
	return i
}
