package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/resources"
)

// computedFake plans its content from the host, as remote_file plans the
// bytes it downloads and package the version apt would install: the
// change's value is not the recipe's, and it comes with a note.
type computedFake struct{ *plantest.FakeType }

func (c *computedFake) Plan(_ string, d *resources.Resource, cur *resources.State) (*resources.Step, error) {
	ch := []resources.Change{
		{Property: "content", Before: cur.Values["content"], After: cty.StringVal("downloaded\n"), Note: "from https://example.com/x"},
	}
	if d.IsSet("mode") {
		ch = append(ch, resources.Change{Property: "mode", Before: cur.Values["mode"], After: d.Values["mode"]})
	}
	return &resources.Step{Kind: resources.Update, Reason: "content differs", Changes: ch, Groups: []string{"content", "mode"}}, nil
}

// TestPlanKeepsComputedValuesAndNotes: a value the type computed is kept
// as the change's Planned value and shown as the change's after; a value
// from the recipe is not; the note is shown, never for a sensitive
// resource; and a property the step changes is not "left as it is".
func TestPlanKeepsComputedValuesAndNotes(t *testing.T) {
	f := plantest.NewFakeType()
	c := &computedFake{f}
	f.Set("/x", map[string]cty.Value{"content": cty.StringVal("old\n"), "mode": cty.StringVal("0600")})
	f.Set("/s", map[string]cty.Value{"content": cty.StringVal("old\n"), "mode": cty.StringVal("0600")})
	p := plantest.FixedPlanner(f, 1)
	p.Registry = resources.NewRegistry(c)
	x := f.Inst("/x", "create", 1, map[string]cty.Value{"mode": cty.StringVal("0644")})
	x.Type = c
	s := f.Inst("/s", "create", 2, nil)
	s.Type, s.Sensitive = c, true
	pl, diags := p.PlanInstances(context.Background(), []*eval.Instance{x, s})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := pl.Resources[0]
	if len(r.Changes) != 2 || r.Changes[0].Planned == nil || !r.Changes[0].Planned.Value.RawEquals(cty.StringVal("downloaded\n")) || r.Changes[1].Planned != nil {
		t.Fatalf("changes %+v: the computed content is kept, the recipe's mode is not", r.Changes)
	}
	shown := pl.Show(p.Registry, r)
	content := shown.Changes[0]
	if !strings.Contains(content.Diff, "+downloaded") || !strings.HasSuffix(content.DiffNote, "from https://example.com/x") {
		t.Errorf("content shown %+v", content)
	}
	for _, u := range shown.Unmanaged {
		if u.Property == "content" {
			t.Errorf("content changes, yet is shown as left as it is")
		}
	}
	for _, ch := range pl.Show(p.Registry, pl.Resources[1]).Changes {
		if strings.Contains(ch.DiffNote, "example.com") {
			t.Errorf("a sensitive resource's note was shown: %q", ch.DiffNote)
		}
	}
}

// instOf is a needy instance at line of a.hcl that needs and provides
// what is given.
func instOf(typ *needyType, name string, line int, needs, provides []string) *eval.Instance {
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
