package guard

import (
	"context"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
)

// fakeScript is a Runner like the script family: code runs under /bin/sh
// (or the interpreter property), with the process settings as properties.
type fakeScript struct {
	name   string
	schema *resources.Schema
}

func newFakeScript(name string) *fakeScript {
	props := []*resources.Property{
		{Name: "code", Type: cty.String},
		{Name: "interpreter", Type: cty.String},
		{Name: "cwd", Type: cty.String, NonState: true},
		{Name: "environment", Type: cty.Map(cty.String), NonState: true},
		{Name: "user", Type: cty.String, NonState: true},
		{Name: "group", Type: cty.String, NonState: true},
		{Name: "umask", Type: cty.String, NonState: true},
		{Name: "path", Type: cty.List(cty.String), NonState: true},
		{Name: "timeout", Type: cty.Number, NonState: true},
		{Name: "returns", Type: cty.List(cty.Number), NonState: true},
		{Name: "flags", Type: cty.List(cty.String), NonState: true},
	}
	if name == "script" {
		props[1].Required = true
	}
	if name == "powershell_script" {
		props = append(props,
			&resources.Property{Name: "architecture", Type: cty.String, NonState: true},
			&resources.Property{Name: "convert_boolean_return", Type: cty.Bool, NonState: true})
	}
	return &fakeScript{name: name, schema: &resources.Schema{Name: name, Properties: props, Actions: []string{"run"}, DefaultAction: "run"}}
}

func (f *fakeScript) Schema() *resources.Schema { return f.schema }
func (f *fakeScript) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return resources.Absent(), nil
}
func (f *fakeScript) Plan(string, *resources.Resource, *resources.State) (*resources.Step, error) {
	return &resources.Step{Kind: resources.Run, Reason: "no guard: runs every time"}, nil
}
func (f *fakeScript) Steps() resources.Steps { return resources.Same(f.converge) }

func (f *fakeScript) converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return nil
}

func (f *fakeScript) CommandSpec(r *resources.Resource) (shellexec.Spec, error) {
	interp := "/bin/sh"
	if r.IsSet("interpreter") {
		interp = r.String("interpreter")
	}
	s := shellexec.Spec{Interpreter: []string{interp}, Script: r.String("code"), Dir: r.String("cwd"), User: r.String("user"), Group: r.String("group")}
	if r.IsSet("environment") {
		s.Env = map[string]string{}
		for k, v := range r.Get("environment").AsValueMap() {
			s.Env[k] = v.AsString()
		}
	}
	if r.IsSet("convert_boolean_return") && r.Bool("convert_boolean_return") {
		// Stands in for the PowerShell wrapper: a marker the test can see.
		s.Env = mergeEnv(s.Env, "CONVERT_BOOLEAN_RETURN", "1")
	}
	if r.IsSet("architecture") {
		s.Env = mergeEnv(s.Env, "ARCH", r.String("architecture"))
	}
	return s, nil
}

func mergeEnv(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// plainType is a type that runs nothing (like file).
type plainType struct{ schema *resources.Schema }

func newPlainType() *plainType {
	return &plainType{schema: &resources.Schema{Name: "file", Properties: []*resources.Property{
		{Name: "path", Type: cty.String, NameProperty: true},
		{Name: "group", Type: cty.String},
		{Name: "content", Type: cty.String},
	}, Actions: []string{"create"}, DefaultAction: "create"}}
}

func (p *plainType) Schema() *resources.Schema { return p.schema }
func (p *plainType) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return resources.Absent(), nil
}
func (p *plainType) Plan(string, *resources.Resource, *resources.State) (*resources.Step, error) {
	return &resources.Step{Kind: resources.NoOp}, nil
}
func (p *plainType) Steps() resources.Steps { return resources.Same(p.converge) }

func (p *plainType) converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return nil
}

func testRegistry() *resources.Registry {
	return resources.NewRegistry(newFakeScript("bash"), newFakeScript("script"), newFakeScript("powershell_script"), newPlainType())
}

// decodeSrc parses a resource body holding only_if / not_if /
// guard_interpreter (and the parent's settings, given separately) and
// decodes its guards.
func decodeSrc(t *testing.T, reg *resources.Registry, parent *resources.Resource, src string, vars map[string]cty.Value) ([]*Spec, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	body := f.Body.(*hclsyntax.Body)
	in := Input{Parent: parent, Registry: reg, Ctx: &hcl.EvalContext{Variables: vars}}
	in.Source = func(r hcl.Range) string { return string(r.SliceBytes(f.Bytes)) }
	for name, a := range body.Attributes {
		switch name {
		case "only_if":
			in.OnlyIf = a.Expr
		case "not_if":
			in.NotIf = a.Expr
		case "guard_interpreter":
			in.GuardInterpreter = a.Expr
		default:
			t.Fatalf("unexpected attribute %s", name)
		}
	}
	return Decode(in)
}

func parentOf(reg *resources.Registry, typ, action string, values map[string]cty.Value) *resources.Resource {
	t, _ := reg.Lookup(typ)
	return resources.NewResource(t.Schema(), "parent", action, values)
}
