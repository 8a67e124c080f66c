package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/typedvalue"
	"github.com/toquehq/toque/resources"
)

// siteDef is a type written in HCL whose create action runs a script and
// declares a child file.
func siteDef() *resources.TypeDef {
	script := func(code string) *resources.ScriptDef {
		return &resources.ScriptDef{Type: "sh", Values: map[string]typedvalue.Value{"code": {Value: cty.StringVal(code)}}}
	}
	return &resources.TypeDef{
		Name:       "site",
		Properties: []*resources.PropertyDef{{Name: "root", Type: typedvalue.Type{Type: cty.String}, NonState: true}},
		Actions: []*resources.ActionDef{{Name: "create", Steps: []*resources.StepDef{
			{Kind: resources.StepConvergeBy, Description: "publish", Script: script("true")},
			{Kind: resources.StepResource, Resource: "file[page]"},
		}}},
		DefaultAction: "create",
	}
}

// sitePlan is a plan of one site and its child file.
func sitePlan(t *testing.T) *Plan { return sitePlanFor(t) }

func sitePlanFor(t testing.TB) *Plan {
	t.Helper()
	reg, err := (&Plan{Types: []*resources.TypeDef{siteDef()}}).TypeRegistry(builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	siteType, _ := reg.Lookup("site")
	fileType, _ := reg.Lookup("file")
	p := &Plan{FormatVersion: FormatVersion, CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Salt: "00", Host: Host{Hostname: "h", MachineID: "m"}, Types: []*resources.TypeDef{siteDef()}}
	site := resources.NewResource(siteType.Schema(), "blog", "create", map[string]cty.Value{"root": cty.StringVal("/srv")})
	cur := StoreCurrent(siteType.Schema(), &resources.State{Exists: true}, p.Salt, false)
	p.Resources = append(p.Resources, &Resource{Address: "site[blog]", Type: "site", Name: "blog", Action: "create", Kind: resources.Run,
		Desired: DesiredValues(site), Current: cur, Fingerprint: cur.Fingerprint(), Groups: []string{`converge_by "publish"`}})
	page := resources.NewResource(fileType.Schema(), "page", "create", map[string]cty.Value{"path": cty.StringVal("/srv/blog.html"), "content": cty.StringVal("hi")})
	absent := StoreCurrent(fileType.Schema(), resources.Absent(), p.Salt, false)
	p.Resources = append(p.Resources, &Resource{Address: "site[blog].file[page]", Type: "file", Name: "page", Parent: "site[blog]", Action: "create",
		Kind: resources.Create, Desired: DesiredValues(page), Current: absent, Fingerprint: absent.Fingerprint(), Changes: []Change{{Property: "content"}}})
	return p
}

func TestPlanCarriesTypesAndChildren(t *testing.T) {
	p := sitePlan(t)
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := Write(path, p); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path, builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Types) != 1 || got.Types[0].Name != "site" || got.Resources[1].Parent != "site[blog]" {
		t.Fatalf("read back: %+v", got)
	}
	reg, err := got.TypeRegistry(builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Lookup("site"); !ok {
		t.Fatal("the plan's type is not rebuilt")
	}
	tree := got.Tree()
	if c := tree.Children(0, 0); len(c) != 1 || c[0] != 1 || !tree.ChildWork(0) || !tree.StepWork(0, 0) {
		t.Fatalf("tree: %v", c)
	}
	if s := got.Show(reg, got.Resources[0]); len(s.Steps) != 1 || s.Steps[0].Label != `converge_by "publish"` {
		t.Fatalf("shown steps %+v", s.Steps)
	}

	raw := mustEncode(t, p)
	for _, c := range []struct {
		name string
		edit func(p *Plan)
		want string
	}{
		{"a child whose parent is not before it", func(p *Plan) {
			p.Resources[0], p.Resources[1] = p.Resources[1], p.Resources[0]
		}, "its parent site[blog] is not planned before it"},
		{"a child its parent's action does not declare", func(p *Plan) {
			r := p.Resources[1]
			r.Name, r.Address = "other", "site[blog].file[other]"
		}, "the action create of site declares no file[other]"},
		{"a child of a step the parent does not have", func(p *Plan) {
			p.Resources[1].ParentStep = 3
		}, "has no step 3"},
		{"a child address without its parent", func(p *Plan) {
			p.Resources[1].Parent = ""
		}, `but its type and name make "file[page]"`},
		{"a type that replaces a built-in", func(p *Plan) {
			p.Types[0].Name = "file"
		}, `would replace the built-in type`},
		{"a type that is not valid", func(p *Plan) {
			p.Types[0].DefaultAction = "destroy"
		}, `its default action "destroy"`},
		{"a type's script of no script type", func(p *Plan) {
			p.Types[0].Actions[0].Steps[0].Script.Type = "execute"
		}, `which is not one of`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(writeTemp(t, reseal(t, raw, c.edit)), builtin.Registry())
			if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInconsistent with %q", err, c.want)
			}
		})
	}
}

func mustEncode(t *testing.T, p *Plan) []byte {
	t.Helper()
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p")
	if err := WriteEncoded(path, enc); err != nil {
		t.Fatal(err)
	}
	return readFileT(t, path)
}

func readFileT(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
