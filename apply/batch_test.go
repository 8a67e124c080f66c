package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// pkgType ("tpkg") is a package-like type whose target is read from the
// host: in the directory its name names, "installed" holds the installed
// version and "candidate" the version an install would get. It reads in
// batches, and counts its reads.
type pkgType struct {
	schema *resources.Schema
	mu     sync.Mutex
	loads  int
	sizes  []int
}

func newPkgType() *pkgType {
	return &pkgType{schema: &resources.Schema{
		Name: "tpkg",
		Properties: []*resources.Property{
			{Name: "dir", Type: cty.String, NameProperty: true},
			{Name: "version", Type: cty.String},
		},
		Actions: []string{"install"}, DefaultAction: "install",
	}}
}

func (t *pkgType) Schema() *resources.Schema { return t.schema }

func (t *pkgType) read(r *resources.Resource) (*resources.State, error) {
	dir := r.String("dir")
	cand, err := os.ReadFile(filepath.Join(dir, "candidate"))
	if err != nil {
		return nil, err
	}
	st := &resources.State{Values: map[string]cty.Value{}, Extra: map[string]string{"candidate": string(cand)}}
	if inst, err := os.ReadFile(filepath.Join(dir, "installed")); err == nil {
		st.Exists = true
		st.Values["version"] = cty.StringVal(string(inst))
	}
	return st, nil
}

func (t *pkgType) Load(_ context.Context, r *resources.Resource) (*resources.State, error) {
	t.mu.Lock()
	t.loads++
	t.mu.Unlock()
	return t.read(r)
}

func (t *pkgType) LoadAll(_ context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	t.mu.Lock()
	t.sizes = append(t.sizes, len(rs))
	t.mu.Unlock()
	out := make([]*resources.State, len(rs))
	for i, r := range rs {
		st, err := t.read(r)
		if err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

func (t *pkgType) Plan(_ string, d *resources.Resource, cur *resources.State) (*resources.Step, error) {
	if cur.Exists {
		return &resources.Step{Kind: resources.NoOp, Reason: "installed"}, nil
	}
	ch := []resources.Change{{Property: "version", After: cty.StringVal(cur.Extra["candidate"])}}
	return &resources.Step{Kind: resources.Create, Reason: "not installed", Changes: ch, Groups: []string{"version"}}, nil
}

func (t *pkgType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *pkgType) converge(_ context.Context, _ *resources.Env, d *resources.Resource, _ *resources.State, step *resources.Step) error {
	return os.WriteFile(filepath.Join(d.String("dir"), "installed"), []byte(step.Change("version").After.AsString()), 0o644)
}

func tpkg(t *testing.T, candidate string) spec {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "candidate"), candidate)
	return spec{typ: "tpkg", name: dir}
}

func TestApplyPreflightReadsBatches(t *testing.T) {
	pkg := newPkgType()
	reg := resources.NewRegistry(newFileType(), newScriptType(), pkg)
	a, _ := newApplier(t, reg)
	specs := []spec{tpkg(t, "1.0"), tpkg(t, "2.0"), tpkg(t, "3.0")}
	done := specs[2].name
	writeFile(t, filepath.Join(done, "installed"), "3.0")
	p := makePlan(t, reg, specs...)
	pkg.loads = 0

	if _, err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(pkg.sizes) != 2 || pkg.sizes[0] != 3 || pkg.sizes[1] != 3 {
		t.Errorf("LoadAll batches %v, want one of 3 at pre-flight and one of 3 for the end-state check", pkg.sizes)
	}
	if pkg.loads != 2 {
		t.Errorf("%d Loads, want one per resource converged (2), right before it", pkg.loads)
	}
	for i, s := range specs {
		if got := readFile(t, filepath.Join(s.name, "installed")); got != []string{"1.0", "2.0", "3.0"}[i] {
			t.Errorf("%s: installed %q", s.name, got)
		}
	}
}

func TestApplyRefusesAValueThePlanDidNotShow(t *testing.T) {
	pkg := newPkgType()
	reg := resources.NewRegistry(newFileType(), newScriptType(), pkg)
	a, _ := newApplier(t, reg)
	target := tpkg(t, "1.0")
	// An earlier resource of the run moves the candidate after pre-flight
	// (as an apt_update would).
	move := tscript("move", "echo -n 2.0 > "+filepath.Join(target.name, "candidate"))
	p := makePlan(t, reg, move, target)
	// What the planner keeps of a value the type computed (changesOf).
	p.Resources[1].Changes[0].Planned = &plan.Value{Value: cty.StringVal("1.0")}

	_, err := a.Apply(context.Background(), p)
	var re *ResourceError
	if !errors.As(err, &re) || re.Address != "tpkg["+target.name+"]" || !strings.Contains(err.Error(), `version would now become "2.0", but the plan showed "1.0"`) {
		t.Fatalf("error %v", err)
	}
	mustNotExist(t, filepath.Join(target.name, "installed"))
}
