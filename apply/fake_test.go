package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// Test-only resource types backed by real files and real processes. They
// stand in for the built-in types, which live in package resources.

// fileType ("tfile") manages a regular file's content and mode.
type fileType struct{ schema *resources.Schema }

func normalizeMode(v cty.Value) (cty.Value, error) {
	if v.IsNull() || !v.IsKnown() {
		return v, nil
	}
	n, err := strconv.ParseUint(v.AsString(), 8, 32)
	if err != nil {
		return v, fmt.Errorf("mode %q is not an octal number", v.AsString())
	}
	return cty.StringVal(fmt.Sprintf("%04o", n)), nil
}

func newFileType() *fileType {
	return &fileType{schema: &resources.Schema{
		Name: "tfile",
		Properties: []*resources.Property{
			{Name: "path", Type: cty.String, NameProperty: true, Identity: true, Namespace: resources.NamespacePath},
			{Name: "content", Type: cty.String, Content: true},
			{Name: "mode", Type: cty.String, Default: cty.StringVal("0644"), Normalize: normalizeMode},
		},
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
	}}
}

func (t *fileType) Schema() *resources.Schema { return t.schema }

func (t *fileType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if r.IsSet("content") || r.IsSet("mode") {
		return nil, errors.New("Load was given desired-state properties")
	}
	path := r.String("path")
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return resources.Absent(), nil
	}
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &resources.State{Exists: true, Values: map[string]cty.Value{
		"content": cty.StringVal(string(b)),
		"mode":    cty.StringVal(fmt.Sprintf("%04o", fi.Mode().Perm())),
	}}, nil
}

func (t *fileType) Plan(_ string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	switch desired.Action {
	case "create":
		return resources.ConvergeIfChanged(desired, current), nil
	case "delete":
		if current.Exists {
			return &resources.Step{Kind: resources.Delete, Reason: "exists"}, nil
		}
		return &resources.Step{Kind: resources.NoOp, Reason: "does not exist"}, nil
	}
	return &resources.Step{Kind: resources.NoOp, Reason: "action nothing"}, nil
}

func (t *fileType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *fileType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	path := desired.String("path")
	switch step.Kind {
	case resources.Delete:
		return os.Remove(path)
	case resources.Create, resources.Update:
		mode := desired.Get("mode")
		if !desired.IsSet("mode") && current.Exists {
			mode = current.Values["mode"]
		}
		m, err := strconv.ParseUint(mode.AsString(), 8, 32)
		if err != nil {
			return err
		}
		if step.Kind == resources.Create || step.HasGroup("content") {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte(desired.String("content")), os.FileMode(m)); err != nil {
				return err
			}
			if err := os.Rename(tmp, path); err != nil {
				return err
			}
		}
		return os.Chmod(path, os.FileMode(m))
	}
	return fmt.Errorf("tfile cannot %s", step.Kind)
}

// scriptType ("tscript") runs a shell command every time.
type scriptType struct{ schema *resources.Schema }

func newScriptType() *scriptType {
	return &scriptType{schema: &resources.Schema{
		Name: "tscript",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true},
			{Name: "command", Type: cty.String, NonState: true},
			{Name: "writes", Type: cty.List(cty.String), NonState: true, Shares: resources.NamespacePath},
		},
		Actions:       []string{"run"},
		DefaultAction: "run",
	}}
}

func (t *scriptType) Schema() *resources.Schema { return t.schema }

func (t *scriptType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	return &resources.State{Exists: true, Values: map[string]cty.Value{}}, nil
}

func (t *scriptType) Plan(_ string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	return &resources.Step{Kind: resources.Run, Reason: "no guard: runs every time"}, nil
}

func (t *scriptType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *scriptType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", desired.String("command"))
	cmd.Stdout, cmd.Stderr = &out, &out
	// A killed sh may leave children holding the output pipe; a loaded
	// machine (-race, two cores) may take a while to drain a pipe whose
	// writer exited: long enough for that, short enough for the first.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// panicType ("tpanic") panics in the method its "in" property names.
type panicType struct{ schema *resources.Schema }

func newPanicType() *panicType {
	return &panicType{schema: &resources.Schema{
		Name: "tpanic",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true},
			{Name: "in", Type: cty.String, NonState: true},
		},
		Actions:       []string{"run"},
		DefaultAction: "run",
	}}
}

func (t *panicType) Schema() *resources.Schema { return t.schema }

func (t *panicType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if r.String("in") == "Load" {
		var m map[string]int
		m["boom"]++ // a real runtime panic: assignment to a nil map
	}
	return &resources.State{Exists: true}, nil
}

func (t *panicType) Plan(_ string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	return &resources.Step{Kind: resources.Run, Reason: "runs every time"}, nil
}

func (t *panicType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *panicType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	panic("converge exploded")
}

func testRegistry() *resources.Registry {
	return resources.NewRegistry(newFileType(), newScriptType(), newPanicType())
}

// spec is one resource for makePlan.
type spec struct {
	typ, name, action string
	values            map[string]cty.Value
	ignoreFailure     bool
	sensitive         bool
	skip              bool // planned as skipped by a guard (not loaded)
}

func tfile(path, content string) spec {
	return spec{typ: "tfile", name: path, values: map[string]cty.Value{"content": cty.StringVal(content)}}
}

func tscript(name, command string) spec {
	return spec{typ: "tscript", name: name, values: map[string]cty.Value{"command": cty.StringVal(command)}}
}

const testSalt = "test-salt"

// makePlan does what the planner does for each spec: Load, Plan, and fill a
// plan.Resource with the desired values, the stored reading and its
// fingerprint.
func makePlan(t *testing.T, reg *resources.Registry, specs ...spec) *plan.Plan {
	t.Helper()
	p := &plan.Plan{FormatVersion: plan.FormatVersion, CreatedAt: time.Now(), Host: plan.Host{Hostname: "test-host"}, Salt: testSalt}
	for _, s := range specs {
		typ, ok := reg.Lookup(s.typ)
		if !ok {
			t.Fatalf("unknown test type %q", s.typ)
		}
		sch := typ.Schema()
		action := s.action
		if action == "" {
			action = sch.DefaultAction
		}
		vals := map[string]cty.Value{}
		for k, v := range s.values {
			if p := sch.Property(k); p != nil && p.Normalize != nil {
				nv, err := p.Normalize(v)
				if err != nil {
					t.Fatal(err)
				}
				v = nv
			}
			vals[k] = v
		}
		if np := sch.NameProperty(); np != nil {
			if _, ok := vals[np.Name]; !ok {
				vals[np.Name] = cty.StringVal(s.name)
			}
		}
		d := resources.NewResource(sch, s.name, action, vals)
		pr := &plan.Resource{
			Address:       d.Address(),
			Type:          s.typ,
			Name:          s.name,
			Action:        action,
			Sensitive:     s.sensitive,
			IgnoreFailure: s.ignoreFailure,
			Desired:       plan.DesiredValues(d),
		}
		if s.skip {
			pr.Kind, pr.Reason = resources.Skip, "only_if false"
			p.Resources = append(p.Resources, pr)
			continue
		}
		st, err := typ.Load(context.Background(), d.LoadView())
		if err != nil {
			t.Fatalf("load %s: %v", pr.Address, err)
		}
		step, err := resources.PlanStep(typ, d, st)
		if err != nil {
			t.Fatalf("plan %s: %v", pr.Address, err)
		}
		pr.Kind, pr.Reason, pr.Groups = step.Kind, step.Reason, step.Groups
		pr.Current = plan.StoreCurrent(sch, st, p.Salt, s.sensitive)
		pr.Fingerprint = pr.Current.Fingerprint()
		for _, c := range step.Changes {
			pr.Changes = append(pr.Changes, plan.Change{Property: c.Property})
		}
		p.Resources = append(p.Resources, pr)
	}
	return p
}

// recorder is a Hooks that records every call.
type recorder struct {
	mu     sync.Mutex
	events []string
	beats  []time.Duration
	// beatsOf are the heartbeats by resource address.
	beatsOf map[string][]time.Duration
	onPre   func(r *plan.Resource)
}

func (h *recorder) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, s)
}

func (h *recorder) PreApply(r *plan.Resource) {
	h.add("pre " + r.Address)
	if h.onPre != nil {
		h.onPre(r)
	}
}

func (h *recorder) PostApply(r *plan.Resource, rr ResourceReport) {
	h.add("post " + r.Address + " " + rr.Outcome)
}

func (h *recorder) Heartbeat(r *plan.Resource, elapsed time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.beats = append(h.beats, elapsed)
	if h.beatsOf == nil {
		h.beatsOf = map[string][]time.Duration{}
	}
	h.beatsOf[r.Address] = append(h.beatsOf[r.Address], elapsed)
}

func (h *recorder) AlreadyDone(r *plan.Resource) { h.add("done " + r.Address) }

func (h *recorder) Output(r *plan.Resource, stream, line string) {
	h.add("output " + r.Address + " " + stream + " " + line)
}

func (h *recorder) Resumed(r *plan.Resource, rr ResourceReport) {
	h.add("earlier " + r.Address + " " + rr.Outcome)
}

func (h *recorder) Warning(err error) { h.add("warning " + err.Error()) }

func (h *recorder) Events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

func newApplier(t *testing.T, reg *resources.Registry) (*Applier, *recorder) {
	t.Helper()
	h := &recorder{}
	return &Applier{
		Registry: reg,
		StateDir: filepath.Join(t.TempDir(), "state"),
		Logger:   hclog.NewNullLogger(),
		Hooks:    h,
	}, h
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists (or cannot be checked: %v); it should not", path, err)
	}
}

// outcomes maps address → outcome.
func outcomes(rep *Report) map[string]string {
	out := map[string]string{}
	for _, rr := range rep.Resources {
		out[rr.Address] = rr.Outcome
	}
	return out
}

func resourceReport(t *testing.T, rep *Report, addr string) ResourceReport {
	t.Helper()
	for _, rr := range rep.Resources {
		if rr.Address == addr {
			return rr
		}
	}
	t.Fatalf("no report for %s", addr)
	return ResourceReport{}
}
