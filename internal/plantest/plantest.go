// Package plantest holds what the planner's and the views' tests share: a
// fake file-like resource type whose host is a map, a planner with a fixed
// host, time and salt (reproducible plans and digests), and a table of guard
// results.
package plantest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/internal/typedvalue"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/plan/planner"
	"github.com/toquehq/toque/resources"
)

// FakeType is a file-like resource type whose "host" is a map of states,
// so the planner can be tested without touching the machine.
type FakeType struct {
	schema *resources.Schema

	Mu      sync.Mutex
	States  map[string]*resources.State
	LoadErr map[string]error
	PlanErr map[string]error
	Delay   map[string]time.Duration
	Panics  map[string]bool

	Running, MaxRunning atomic.Int32
	Loads               atomic.Int32
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

func NewFakeType() *FakeType {
	return &FakeType{
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
		States:  map[string]*resources.State{},
		LoadErr: map[string]error{},
		PlanErr: map[string]error{},
		Delay:   map[string]time.Duration{},
		Panics:  map[string]bool{},
	}
}

func (f *FakeType) Schema() *resources.Schema { return f.schema }

func (f *FakeType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	n := f.Running.Add(1)
	defer f.Running.Add(-1)
	for {
		m := f.MaxRunning.Load()
		if n <= m || f.MaxRunning.CompareAndSwap(m, n) {
			break
		}
	}
	f.Loads.Add(1)
	for k := range r.Values {
		if p := f.schema.Property(k); p.IsDesiredState() {
			return nil, errors.New("Load was given desired-state property " + k)
		}
	}
	f.Mu.Lock()
	d, err, st, boom := f.Delay[r.Name], f.LoadErr[r.Name], f.States[r.Name], f.Panics[r.Name]
	f.Mu.Unlock()
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

func (f *FakeType) Plan(_ string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	f.Mu.Lock()
	err := f.PlanErr[desired.Name]
	f.Mu.Unlock()
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

func (f *FakeType) Steps() resources.Steps { return resources.Same(f.converge) }

func (f *FakeType) converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return errors.New("the fake type never converges")
}

// inst makes an instance of t named name at line line of a fake recipe.
func (f *FakeType) Inst(name, action string, line int, values map[string]cty.Value) *eval.Instance {
	vals := map[string]cty.Value{"path": cty.StringVal(name)}
	for k, v := range values {
		vals[k] = v
	}
	rng := hcl.Range{Filename: "recipes/default.hcl", Start: hcl.Pos{Line: line, Column: 1, Byte: 0}, End: hcl.Pos{Line: line, Column: 20}}
	return &eval.Instance{
		Block: &config.ResourceBlock{
			Type:      f.schema.Name,
			Name:      name,
			DeclRange: rng,
		},
		Type:     f,
		Resource: resources.NewResource(f.schema, name, action, vals),
	}
}

func (f *FakeType) Set(name string, values map[string]cty.Value) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.States[name] = &resources.State{Exists: true, Values: values}
}

// FixedPlanner plans for host web-01 at a fixed time with a fixed salt, so
// plans (and their digests) are reproducible.
func FixedPlanner(f *FakeType, par int) *planner.Planner {
	return &planner.Planner{
		Registry:    resources.NewRegistry(f),
		Parallelism: par,
		Host:        &host.Facts{Identity: host.Identity{Hostname: "web-01", MachineID: "0123456789abcdef"}},
		Version:     "0.1.0-test",
		Now:         func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600)) },
		Rand:        bytes.NewReader(bytes.Repeat([]byte{0xab}, 16)),
	}
}

func Str(s string) cty.Value { return cty.StringVal(s) }

// FakeGuard is one guard of a FakeGuards table: the guard (what runs) and
// how it turns out.
type FakeGuard struct {
	Kind, Form, Command, Interpreter string
	// Cwd, Environment and User are the guard's parameters (inherited or
	// given); Inherited names those taken from the resource.
	Cwd         string
	Environment map[string]string
	User        string
	Inherited   []string
	Sensitive   bool

	ExitCode   *int
	DurationMS int64
	Output     string
	Warning    string
	Passed     bool
	Decided    bool
	// AtApply makes it a guard decided at apply; Error is then what it
	// could not do now.
	AtApply bool
	Error   string
}

// Spec is the guard as the plan keeps it.
func (g FakeGuard) Spec() *guard.Spec {
	s := &guard.Spec{Kind: guard.Kind(g.Kind), Form: guard.Form(g.Form), Source: g.Command, Interpreter: g.Interpreter, Inherited: g.Inherited, Sensitive: g.Sensitive, AtApply: g.AtApply}
	if s.Form == guard.Script {
		s.Values = map[string]guard.Value{"command": {Value: cty.StringVal(g.Command)}}
		if g.Cwd != "" {
			s.Values["cwd"] = guard.Value{Value: cty.StringVal(g.Cwd)}
		}
		if g.User != "" {
			s.Values["user"] = guard.Value{Value: cty.StringVal(g.User)}
		}
		if len(g.Environment) > 0 {
			env := map[string]cty.Value{}
			for k, v := range g.Environment {
				env[k] = cty.StringVal(v)
			}
			s.Values["environment"] = guard.Value{Value: cty.MapVal(env)}
		}
	} else {
		v := g.Passed
		s.ExprValue = &v
	}
	return s
}

// FakeGuards decides guards from a table, keyed by resource name: the
// guards and their outcomes, and whether they skip. Its Evaluate is a
// GuardFunc; Guard gives an instance the table's guards.
type FakeGuards struct {
	Results map[string][]FakeGuard
	Skip    map[string]bool
	Fail    map[string]bool
}

// Guard gives i the guards the table lists for it (one that always passes
// when it lists none), as evaluation would have decoded them.
func (g *FakeGuards) Guard(i *eval.Instance) *eval.Instance {
	i.Block.Meta.OnlyIf = hcl.StaticExpr(cty.True, i.Block.DeclRange)
	i.Guards = nil
	for _, r := range g.Results[i.Resource.Name] {
		i.Guards = append(i.Guards, r.Spec())
	}
	if len(i.Guards) == 0 {
		t := true
		i.Guards = []*guard.Spec{{Kind: guard.OnlyIf, Form: guard.Expression, Source: "true", ExprValue: &t}}
	}
	return i
}

func (g *FakeGuards) Evaluate(_ context.Context, s *plan.Subject) ([]guard.Outcome, bool, int, error) {
	name := s.Desired.Name
	if g.Fail[name] {
		return []guard.Outcome{{Spec: &guard.Spec{Kind: guard.OnlyIf}, Err: errors.New("cannot run")}}, false, -1, errors.New("cannot run")
	}
	var outs []guard.Outcome
	decided := -1
	for i, r := range g.Results[name] {
		spec := r.Spec()
		if i < len(s.Guards) {
			spec = s.Guards[i]
		}
		o := guard.Outcome{
			Spec:        spec,
			Condition:   r.Passed,
			ExitCode:    r.ExitCode,
			Duration:    time.Duration(r.DurationMS) * time.Millisecond,
			Output:      r.Output,
			Warning:     r.Warning,
			Cwd:         r.Cwd,
			Environment: r.Environment,
			User:        r.User,
			Deferred:    r.AtApply,
		}
		if r.Error != "" {
			o.Err = errors.New(r.Error)
		}
		outs = append(outs, o)
		if r.Decided {
			decided = i
		}
	}
	return outs, g.Skip[name], decided, nil
}

// lazyInst makes i's content known only at apply, as eval records
// lazy(file("/etc/key-${node.web.port}")) at line 30.
func lazyInst(i *eval.Instance) *eval.Instance {
	node := cty.ObjectVal(map[string]cty.Value{"web": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(9090)})})
	return Lazy(i, "content", `file("/etc/key-${node.web.port}")`, 30, node)
}

// Lazy makes i's property prop known only at apply: the expression src, as
// eval records lazy(src) at line (column 18) of recipes/default.hcl, reading
// node (cty.NilVal: nothing of node).
func Lazy(i *eval.Instance, prop, src string, line int, node cty.Value) *eval.Instance {
	e := &lazy.Expr{
		Source: src,
		Range:  hcl.Range{Filename: "recipes/default.hcl", Start: hcl.Pos{Line: line, Column: 18}, End: hcl.Pos{Line: line, Column: 18 + len(src)}},
		Scope:  lazy.Scope{Dir: "/recipes"},
	}
	if node != cty.NilVal {
		e.Scope.Node = &typedvalue.Value{Value: node}
	}
	if i.Lazy == nil {
		i.Lazy = map[string]*lazy.Expr{}
	}
	i.Lazy[prop] = e
	i.Resource.Values[prop] = i.Resource.Schema().Property(prop).Unknown()
	return i
}

// SamplePlan is a plan with every kind of resource, made by the planner.
func SamplePlan(t testing.TB) *plan.Plan {
	t.Helper()
	f := NewFakeType()
	f.Set("/etc/old", map[string]cty.Value{"content": Str("<h1>old</h1>\n"), "mode": Str("0600")})
	f.Set("/etc/gone", map[string]cty.Value{"content": Str("x")})
	f.Set("/etc/key", map[string]cty.Value{"content": Str("k\n"), "secret": Str("hunter1")})
	exit1 := 1
	p := FixedPlanner(f, 4)
	guards := &FakeGuards{
		Results: map[string][]FakeGuard{
			"/etc/skip": {{Kind: "only_if", Form: "script", Command: "test -d /opt", ExitCode: &exit1, Decided: true}},
			"/etc/lazy": {{Kind: "only_if", Form: "script", Command: "test -f /etc/key", ExitCode: &exit1, AtApply: true}},
		},
		Skip: map[string]bool{"/etc/skip": true},
	}
	p.Guards = guards.Evaluate
	pl, diags := p.PlanInstances(context.Background(), []*eval.Instance{
		f.Inst("/etc/new", "create", 1, map[string]cty.Value{"content": Str("hello <world> & \"friends\"\n"), "backup": cty.True}),
		f.Inst("/etc/old", "create", 5, map[string]cty.Value{"content": Str("<h1>web-01</h1>\n")}),
		f.Inst("/etc/gone", "delete", 9, nil),
		f.Inst("/etc/cmd", "run", 13, nil),
		f.Inst("/etc/key", "create", 17, map[string]cty.Value{"secret": Str("hunter2")}),
		guards.Guard(f.Inst("/etc/skip", "create", 21, map[string]cty.Value{"mode": cty.StringVal("0755")})),
		f.Inst("/etc/later", "nothing", 25, nil),
		guards.Guard(lazyInst(f.Inst("/etc/lazy", "create", 29, map[string]cty.Value{"content": cty.UnknownVal(cty.String)}))),
	})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl.Attributes = []plan.Attribute{{Path: "web.port", Value: []byte(`{"value":9090,"type":"number"}`), Level: "override", Source: "recipes/default.hcl:7"}}
	pl.InputsDigest = "sha256:" + strings.Repeat("0", 64)
	sites := cty.ObjectVal(map[string]cty.Value{"a.com": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(443)})})
	digest, err := plan.DataDigest(sites, false, pl.Salt)
	if err != nil {
		t.Fatal(err)
	}
	pl.Data = []*plan.DataRead{{
		Address: "data.exec.sites", Type: "exec", Name: "sites",
		Source:    plan.Range{Filename: "recipes/default.hcl", Line: 33, Column: 1},
		Arguments: map[string]plan.Value{"command": {Value: cty.StringVal("cat /etc/sites.json")}},
		Answer:    &plan.Value{Value: sites}, Digest: digest, DurationMS: 3,
	}}
	return pl
}
