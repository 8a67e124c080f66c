package eval

import (
	"errors"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// joinType derives "line" from "a" and "b", as cron_d derives its file.
type joinType struct{ *resourcetest.Type }

func (j *joinType) Derive(values map[string]cty.Value) (map[string]cty.Value, error) {
	a, b := values["a"], values["b"]
	if !a.IsKnown() || !b.IsKnown() {
		return map[string]cty.Value{"line": cty.UnknownVal(cty.String)}, nil
	}
	if a.AsString() == "bad" {
		return nil, errors.New("a must not be bad")
	}
	return map[string]cty.Value{"line": cty.StringVal(a.AsString() + " " + b.AsString())}, nil
}

func newJoinType() *joinType {
	return &joinType{resourcetest.New(&resources.Schema{
		Name: "joined",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true},
			{Name: "a", Type: cty.String, NonState: true},
			{Name: "b", Type: cty.String, NonState: true},
			{Name: "line", Type: cty.String, Validate: func(cty.Value) error { return errors.New("line is made from a and b") }},
		},
		Actions: []string{"create"}, DefaultAction: "create",
	})}
}

func TestDerivedValues(t *testing.T) {
	cases := []struct {
		name, src string
		line      string
		sensitive bool
		errs      []string
	}{
		{"derived", `joined "x" {
  a = "one"
  b = "two"
}`, "one two", false, nil},
		{"sensitive input makes it sensitive", `joined "x" {
  a = "one"
  b = sensitive("two")
}`, "one two", true, nil},
		{"refused", `joined "x" {
  a = "bad"
  b = "two"
}`, "", false, []string{"Invalid resource"}},
		{"not settable", `joined "x" {
  a = "one"
  b = "two"
  line = "mine"
}`, "", false, []string{"Invalid value for property"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := resources.NewRegistry(newJoinType())
			dir := writeDir(t, map[string]string{"a.hcl": c.src})
			cfg, diags := config.LoadDir(dir, reg)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			scope, _, _ := NewScope(cfg, testHost())
			insts, diags := Resources(cfg, reg, scope)
			if got := summaries(diags); strings.Join(got, "|") != strings.Join(c.errs, "|") {
				t.Fatalf("errors %q, want %q: %v", got, c.errs, diags)
			}
			if c.errs != nil {
				return
			}
			if got := insts[0].Resource.String("line"); got != c.line {
				t.Errorf("line %q, want %q", got, c.line)
			}
			sens := strings.Join(insts[0].SensitiveProps, ",")
			if c.sensitive != strings.Contains(sens, "line") {
				t.Errorf("sensitive properties %q", sens)
			}
		})
	}
}
