package planner_test

import (
	"context"
	"errors"
	"os/user"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/resources"
)

// needyType creates things; its steps need and provide what its
// properties say.
type needyType struct {
	s               *resources.Schema
	namespace, what string
}

// checkUser is a HostCheck as the built-in owner properties': a user the
// host lacks is a need an earlier resource may meet.
func checkUser(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	if _, err := user.Lookup(v.AsString()); err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return &resources.MissingError{Need: resources.Need{Namespace: resources.NamespaceUser, Value: v.AsString(), What: "user"}}
		}
		return err
	}
	return nil
}

func newNeedy() *needyType {
	return &needyType{namespace: resources.NamespacePath, what: "directory", s: &resources.Schema{
		Name: "needy",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true},
			{Name: "needs", Type: cty.List(cty.String), NonState: true},
			{Name: "provides", Type: cty.List(cty.String), NonState: true},
			{Name: "blame", Type: cty.String},
			{Name: "owner", Type: cty.String, NonState: true, HostCheck: checkUser},
		},
		Actions: []string{"create"}, DefaultAction: "create",
	}}
}

func (t *needyType) Schema() *resources.Schema { return t.s }
func (t *needyType) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return resources.Absent(), nil
}
func (t *needyType) Plan(_ string, d *resources.Resource, _ *resources.State) (*resources.Step, error) {
	if d.IsSet("blame") {
		return nil, &resources.PropertyError{Property: "blame", Err: errors.New(d.String("blame"))}
	}
	step := &resources.Step{Kind: resources.Create, Reason: "does not exist"}
	list := func(name string) []resources.Need {
		var out []resources.Need
		if v := d.Get(name); !v.IsNull() {
			for _, e := range v.AsValueSlice() {
				out = append(out, resources.Need{Namespace: t.namespace, Value: e.AsString(), What: t.what})
			}
		}
		return out
	}
	step.Needs, step.Provides = list("needs"), list("provides")
	return step, nil
}
func (t *needyType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *needyType) converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return nil
}

func TestPlanRefusesUnmetNeeds(t *testing.T) {
	typ := newNeedy()
	inst := func(name string, line int, needs, provides []string) *eval.Instance {
		vals := map[string]cty.Value{"name": cty.StringVal(name)}
		for k, l := range map[string][]string{"needs": needs, "provides": provides} {
			if l != nil {
				var vs []cty.Value
				for _, x := range l {
					vs = append(vs, cty.StringVal(x))
				}
				vals[k] = cty.ListVal(vs)
			}
		}
		rng := hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: line, Column: 1}}
		return &eval.Instance{Block: &config.ResourceBlock{Type: "needy", Name: name, DeclRange: rng}, Type: typ, Resource: resources.NewResource(typ.s, name, "create", vals)}
	}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 4)
	p.Registry = resources.NewRegistry(typ)
	pl, diags := p.PlanInstances(context.Background(), []*eval.Instance{
		inst("late", 1, []string{"/srv"}, nil),       // needs /srv before anything made it
		inst("maker", 2, nil, []string{"/srv", "/"}), // makes it
		inst("early", 3, []string{"/srv"}, nil),      // fine now
		inst("other", 4, []string{"/opt"}, nil),      // nothing makes /opt
	})
	if len(diags) != 2 || diags[0].Summary != "Missing directory" || diags[0].Subject.Start.Line != 1 || diags[1].Subject.Start.Line != 4 || !pl.Errored {
		t.Fatalf("diagnostics %v", diags)
	}
}

// A need outside the file system is worded for what it is: no hint about
// recursive directories.
func TestUnmetNeedOfAGroup(t *testing.T) {
	typ := newNeedy()
	typ.namespace, typ.what = resources.NamespaceGroup, "group"
	vals := map[string]cty.Value{"name": cty.StringVal("u"), "needs": cty.ListVal([]cty.Value{cty.StringVal("staff")})}
	inst := &eval.Instance{Block: &config.ResourceBlock{Type: "needy", Name: "u", DeclRange: hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: 1, Column: 1}}}, Type: typ, Resource: resources.NewResource(typ.s, "u", "create", vals)}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 1)
	p.Registry = resources.NewRegistry(typ)
	_, diags := p.PlanInstances(context.Background(), []*eval.Instance{inst})
	if len(diags) != 1 || diags[0].Summary != "Missing group" || !strings.Contains(diags[0].Detail, "Declare a group resource for staff before needy[u].") || strings.Contains(diags[0].Detail, "recursive") {
		t.Fatalf("diagnostics %v", diags)
	}
}

// A Plan error that names a property (resources.PropertyError) points at
// that property's attribute.
func TestPropertyErrorPointsAtAttribute(t *testing.T) {
	typ := newNeedy()
	src := "needy \"u\" {\n  needs = []\n  blame = \"taken\"\n}\n"
	f, d := hclsyntax.ParseConfig([]byte(src), "a.hcl", hcl.Pos{Line: 1, Column: 1})
	if d.HasErrors() {
		t.Fatal(d)
	}
	body := f.Body.(*hclsyntax.Body).Blocks[0].Body
	vals := map[string]cty.Value{"name": cty.StringVal("u"), "blame": cty.StringVal("uid 5 is taken")}
	inst := &eval.Instance{Block: &config.ResourceBlock{Type: "needy", Name: "u", Body: body, DeclRange: hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: 1, Column: 1}}}, Type: typ, Resource: resources.NewResource(typ.s, "u", "create", vals)}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 1)
	p.Registry = resources.NewRegistry(typ)
	_, diags := p.PlanInstances(context.Background(), []*eval.Instance{inst})
	if len(diags) != 1 || diags[0].Subject == nil || diags[0].Subject.Start.Line != 3 || !strings.Contains(diags[0].Detail, "uid 5 is taken") {
		t.Fatalf("diagnostics %v", diags)
	}
}

// An owner the host lacks is a need, not an error: an earlier resource
// that creates the user meets it; one declared later is named, with the
// order to write; none at all asks for one.
func TestMissingOwnerIsANeed(t *testing.T) {
	typ := newNeedy()
	typ.namespace, typ.what = resources.NamespaceUser, "user"
	const ghost = "toque-test-no-such-user"
	inst := func(name string, line int, vals map[string]cty.Value) *eval.Instance {
		vals["name"] = cty.StringVal(name)
		return &eval.Instance{Block: &config.ResourceBlock{Type: "needy", Name: name, DeclRange: hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: line, Column: 1}}}, Type: typ, Resource: resources.NewResource(typ.s, name, "create", vals)}
	}
	owned := func(name string, line int, owner string) *eval.Instance {
		return inst(name, line, map[string]cty.Value{"owner": cty.StringVal(owner)})
	}
	p := plantest.FixedPlanner(plantest.NewFakeType(), 4)
	p.Registry = resources.NewRegistry(typ)
	pl, diags := p.PlanInstances(context.Background(), []*eval.Instance{
		owned("early", 1, ghost),
		inst("maker", 2, map[string]cty.Value{"provides": cty.ListVal([]cty.Value{cty.StringVal(ghost)})}),
		owned("after", 3, ghost),
		owned("orphan", 4, ghost+"-2"),
	})
	if len(diags) != 2 || !pl.Errored {
		t.Fatalf("diagnostics %v", diags)
	}
	if d := diags[0]; d.Summary != "Missing user" || d.Subject.Start.Line != 1 ||
		!strings.Contains(d.Detail, "needy[maker] creates it, but later") || !strings.Contains(d.Detail, "declare needy[maker] before needy[early]") {
		t.Errorf("a user created later: %v", d)
	}
	if d := diags[1]; d.Summary != "Missing user" || d.Subject.Start.Line != 4 || !strings.Contains(d.Detail, "Declare a user resource for "+ghost+"-2 before needy[orphan].") {
		t.Errorf("a user nothing creates: %v", d)
	}
}
