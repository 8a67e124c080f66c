package files

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

func TestFileSystemStepsNeedTheirParent(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such")
	cases := []struct {
		name     string
		typ      resources.Type
		vals     map[string]cty.Value
		needs    []string
		provides []string
	}{
		{"file in a missing directory", FileType(), map[string]cty.Value{"path": cty.StringVal(missing + "/f"), "content": cty.StringVal("x")}, []string{missing}, nil},
		{"file in an existing directory", FileType(), map[string]cty.Value{"path": cty.StringVal(dir + "/f"), "content": cty.StringVal("x")}, nil, nil},
		{"directory", DirectoryType(), map[string]cty.Value{"path": cty.StringVal(missing + "/d")}, []string{missing}, []string{missing + "/d"}},
		{"recursive directory", DirectoryType(), map[string]cty.Value{"path": cty.StringVal(missing + "/d"), "recursive": cty.True}, nil, []string{missing + "/d", missing, dir + "/no"}},
		{"link", LinkType(), map[string]cty.Value{"target_file": cty.StringVal(missing + "/l"), "to": cty.StringVal("/tmp")}, []string{missing}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := resources.NewResource(c.typ.Schema(), "x", c.typ.Schema().DefaultAction, c.vals)
			st, err := c.typ.Load(context.Background(), r.LoadView())
			if err != nil {
				t.Fatal(err)
			}
			step, err := resources.PlanStep(c.typ, r, st)
			if err != nil {
				t.Fatal(err)
			}
			values := func(ns []resources.Need) []string {
				var out []string
				for _, n := range ns {
					out = append(out, n.Value)
				}
				return out
			}
			if got := values(step.Needs); !equalStrings(got, c.needs) {
				t.Errorf("needs %q, want %q", got, c.needs)
			}
			if got := values(step.Provides); len(c.provides) > 0 && !equalStrings(got[:len(c.provides)], c.provides) || len(c.provides) == 0 && len(got) > 0 {
				t.Errorf("provides %q, want %q first", got, c.provides)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
