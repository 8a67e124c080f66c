package planner_test

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/builtin"
)

// shipperType installs a package: its step provides, with a prediction,
// each path of "ships" ("/etc/a/" a directory, "/etc/a/b" a file whose
// content is "shipped PATH"), as the package type does from its .debs.
type shipperType struct{ s *resources.Schema }

func newShipper() *shipperType {
	return &shipperType{s: &resources.Schema{
		Name: "shipper",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true},
			{Name: "ships", Type: cty.List(cty.String), NonState: true},
			{Name: "replaces", Type: cty.String, NonState: true},
			{Name: "diverts", Type: cty.Bool, NonState: true},
		},
		Actions: []string{"install"}, DefaultAction: "install",
	}}
}

func (t *shipperType) Schema() *resources.Schema { return t.s }
func (t *shipperType) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return resources.Absent(), nil
}
func (t *shipperType) Steps() resources.Steps { return resources.Same(nopConverge) }
func (t *shipperType) Plan(_ string, d *resources.Resource, _ *resources.State) (*resources.Step, error) {
	step := &resources.Step{Kind: resources.Create, Reason: "not installed"}
	for _, e := range d.Get("ships").AsValueSlice() {
		p := e.AsString()
		facts := map[string]string{"kind": "file", "mode": "0644", "owner": "root", "group": "root", "package": d.Name}
		var content []byte
		if strings.HasSuffix(p, "/") {
			p, facts["kind"] = strings.TrimSuffix(p, "/"), "directory"
		} else {
			content = []byte("shipped " + p + "\n")
		}
		if r := d.String("replaces"); r != "" {
			facts["replaces"] = r
		}
		if d.Bool("diverts") {
			facts["diverts"] = "yes"
		}
		step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespacePath, Value: p, What: facts["kind"],
			Prediction: &resources.Prediction{By: "shipper[" + d.Name + "] (" + d.Name + " 1.0)", Facts: facts, Content: content}})
	}
	return step, nil
}

func nopConverge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return nil
}

// readerType manages a file's content, and reads, where the host lacks it
// (it always does here), what an earlier step predicts (a Foreseer).
type readerType struct{ s *resources.Schema }

func newReader() *readerType {
	return &readerType{s: &resources.Schema{
		Name: "reader",
		Properties: []*resources.Property{
			{Name: "path", Type: cty.String, NameProperty: true, Identity: true, Namespace: resources.NamespacePath},
			{Name: "content", Type: cty.String},
		},
		Actions: []string{"create"}, DefaultAction: "create",
	}}
}

func (t *readerType) Schema() *resources.Schema { return t.s }
func (t *readerType) Foresees(d *resources.Resource) []resources.Need {
	return []resources.Need{{Namespace: resources.NamespacePath, Value: d.String("path")}}
}
func (t *readerType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	p := resources.ForesightOf(ctx).Lookup(resources.NamespacePath, r.String("path"))
	if p == nil {
		return resources.Absent(), nil
	}
	return &resources.State{Exists: true, Values: map[string]cty.Value{"content": cty.StringVal(string(p.Content))}, Extra: map[string]string{"by": p.By}}, nil
}
func (t *readerType) Plan(_ string, d *resources.Resource, cur *resources.State) (*resources.Step, error) {
	step := resources.ConvergeIfChanged(d, cur)
	if !cur.Exists {
		step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespacePath, Value: path.Dir(d.String("path")), What: "directory"})
	}
	return step, nil
}
func (t *readerType) Steps() resources.Steps { return resources.Same(nopConverge) }

func foreseeInst(typ resources.Type, name string, line int, vals map[string]cty.Value) *eval.Instance {
	s := typ.Schema()
	rng := hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: line, Column: 1}}
	if np := s.NameProperty(); np != nil {
		vals[np.Name] = cty.StringVal(name)
	}
	return &eval.Instance{Block: &config.ResourceBlock{Type: s.Name, Name: name, DeclRange: rng}, Type: typ, Resource: resources.NewResource(s, name, s.DefaultAction, vals)}
}

func ships(paths ...string) cty.Value {
	var vs []cty.Value
	for _, p := range paths {
		vs = append(vs, cty.StringVal(p))
	}
	return cty.ListVal(vs)
}

func foreseePlan(t *testing.T, insts ...*eval.Instance) (*plan.Plan, hcl.Diagnostics) {
	t.Helper()
	p := plantest.FixedPlanner(plantest.NewFakeType(), 4)
	p.Registry = resources.NewRegistry(newShipper(), newReader())
	return p.PlanInstances(context.Background(), insts)
}

// A resource over a file an earlier step ships is planned from the
// shipped file (its diff is against it); one in a directory an earlier
// step creates says where the directory comes from; the same resource
// declared before the step that ships it is an error naming both.
func TestPlanFromWhatEarlierStepsBring(t *testing.T) {
	sh, rd := newShipper(), newReader()
	pl, diags := foreseePlan(t,
		foreseeInst(sh, "web", 1, map[string]cty.Value{"ships": ships("/etc/web/", "/etc/web/web.conf")}),
		foreseeInst(rd, "/etc/web/web.conf", 2, map[string]cty.Value{"content": cty.StringVal("mine\n")}),
		foreseeInst(rd, "/etc/web/site.conf", 3, map[string]cty.Value{"content": cty.StringVal("site\n")}),
	)
	if len(diags) != 0 {
		t.Fatalf("diagnostics %v", diags)
	}
	conf, site := pl.Resources[1], pl.Resources[2]
	if conf.Kind != resources.Update || conf.Current == nil || !conf.Current.Exists || conf.Current.Extra["by"] != "shipper[web] (web 1.0)" {
		t.Errorf("the shipped file: %s, read %+v; want an update from the file shipper[web] ships", conf.Kind, conf.Current)
	}
	if len(conf.Provided) == 0 || conf.Provided[0] != "/etc/web/web.conf: shipped by shipper[web] (web 1.0)" {
		t.Errorf("the shipped file's provenance: %q", conf.Provided)
	}
	if before, _ := conf.Current.Values["content"].Text(); before != "shipped /etc/web/web.conf\n" {
		t.Errorf("the shipped file was read as %q", before)
	}
	if site.Kind != resources.Create || len(site.Provided) != 1 || site.Provided[0] != "/etc/web: created by shipper[web] (web 1.0)" {
		t.Errorf("the new file: %s, provided %q", site.Kind, site.Provided)
	}

	_, diags = foreseePlan(t,
		foreseeInst(rd, "/etc/web/web.conf", 1, map[string]cty.Value{"content": cty.StringVal("mine\n")}),
		foreseeInst(sh, "web", 2, map[string]cty.Value{"ships": ships("/etc/web/", "/etc/web/web.conf")}),
	)
	if len(diags) == 0 || diags[0].Summary != "A later package overwrites a managed path" ||
		!strings.Contains(diags[0].Detail, "reader[/etc/web/web.conf] manages /etc/web/web.conf, and shipper[web] (web 1.0), declared after it") {
		t.Errorf("a file a later package ships: %v", diags)
	}
}

// Two packages that ship one file (not a directory) are refused, naming
// both, unless one replaces the other.
func TestTwoPackagesShipOnePath(t *testing.T) {
	sh := newShipper()
	_, diags := foreseePlan(t,
		foreseeInst(sh, "a", 1, map[string]cty.Value{"ships": ships("/usr/", "/usr/bin/tool")}),
		foreseeInst(sh, "b", 2, map[string]cty.Value{"ships": ships("/usr/", "/usr/bin/tool")}),
	)
	if len(diags) != 1 || diags[0].Summary != "Two packages ship one path" || diags[0].Subject.Start.Line != 2 ||
		!strings.Contains(diags[0].Detail, "shipper[a] (a 1.0) ships /usr/bin/tool, and so does shipper[b] (b 1.0)") {
		t.Errorf("diagnostics %v", diags)
	}
	_, diags = foreseePlan(t,
		foreseeInst(sh, "a", 1, map[string]cty.Value{"ships": ships("/usr/bin/tool")}),
		foreseeInst(sh, "b", 2, map[string]cty.Value{"ships": ships("/usr/bin/tool"), "replaces": cty.StringVal("a")}),
	)
	if len(diags) != 0 {
		t.Errorf("b replaces a: %v", diags)
	}
	_, diags = foreseePlan(t,
		foreseeInst(sh, "a", 1, map[string]cty.Value{"ships": ships("/usr/bin/tool"), "diverts": cty.True}),
		foreseeInst(sh, "b", 2, map[string]cty.Value{"ships": ships("/usr/bin/tool")}),
	)
	if len(diags) != 0 {
		t.Errorf("a diverts the path: %v", diags)
	}
}

// The editors of a file an earlier step ships are planned, together and
// each on what those before it leave, from the shipped file: the plan
// shows each edit as a diff of it, not an edit "known at apply" of a
// file that does not exist yet.
func TestEditorsOfAShippedFile(t *testing.T) {
	dir := t.TempDir()
	conf := dir + "/app/app.conf"
	reg := builtin.Registry().With(newShipper())
	lookup := func(name string) resources.Type { typ, _ := reg.Lookup(name); return typ }
	sh := newShipper()
	p := plantest.FixedPlanner(plantest.NewFakeType(), 4)
	p.Registry = reg
	pl, diags := p.PlanInstances(context.Background(), []*eval.Instance{
		foreseeInst(sh, "app", 1, map[string]cty.Value{"ships": ships(dir+"/app/", conf)}),
		foreseeInst(lookup("file_line"), "one", 2, map[string]cty.Value{"path": cty.StringVal(conf), "line": cty.StringVal("one = 1")}),
		foreseeInst(lookup("file_line"), "two", 3, map[string]cty.Value{"path": cty.StringVal(conf), "line": cty.StringVal("two = 2")}),
	})
	if len(diags) != 0 {
		t.Fatalf("diagnostics %v", diags)
	}
	// An editor declared before the package that ships its file would
	// have its edit overwritten: refused, as a file resource is.
	p2 := plantest.FixedPlanner(plantest.NewFakeType(), 4)
	p2.Registry = reg
	_, diags = p2.PlanInstances(context.Background(), []*eval.Instance{
		foreseeInst(lookup("file_line"), "early", 1, map[string]cty.Value{"path": cty.StringVal(conf), "line": cty.StringVal("one = 1")}),
		foreseeInst(sh, "app", 2, map[string]cty.Value{"ships": ships(dir+"/app/", conf)}),
	})
	if len(diags) == 0 || diags[0].Summary != "A later package overwrites a managed path" {
		t.Errorf("an editor before the package that ships its file: %v", diags)
	}
	shipped := "shipped " + conf + "\n"
	for i, want := range []struct{ before, after string }{
		{shipped, shipped + "one = 1\n"},
		{shipped + "one = 1\n", shipped + "one = 1\ntwo = 2\n"},
	} {
		r := pl.Resources[i+1]
		if r.Kind != resources.Update || len(r.Changes) != 1 || r.Changes[0].Property != "content" {
			t.Fatalf("%s: %s %v", r.Address, r.Kind, r.Changes)
		}
		before, _ := r.Current.Values["content"].Text()
		var after string
		if pv := r.Changes[0].Planned; pv != nil && pv.Value.Type() == cty.String {
			after = pv.Value.AsString()
		}
		if before != want.before || after != want.after {
			t.Errorf("%s: %q -> %q, want %q -> %q", r.Address, before, after, want.before, want.after)
		}
		if _, ok := r.Current.Values["mode"]; ok {
			t.Errorf("%s: an editor's reading holds the shipped file's mode, which a reading of the installed file does not", r.Address)
		}
		if !strings.Contains(r.StepReason, "shipped by shipper[app] (app 1.0)") {
			t.Errorf("%s: reason %q", r.Address, r.StepReason)
		}
	}
}
