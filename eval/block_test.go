package eval

import (
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestBlockProperties holds the first steps of evaluateBlock alone: each
// attribute decoded in source order, the name property's default, and the
// required properties, with no meta-argument or guard evaluated.
func TestBlockProperties(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		attrs   []string          // the attributes, in source order
		values  map[string]string // property → its value (as Go string), "?" for unknown
		lazy    []string
		errored []string
		diags   []string // summaries of the errors
	}{
		{
			name:   "values in source order, name from the label",
			src:    "file \"/x\" {\n  mode = \"644\"\n  content = \"y\"\n}",
			attrs:  []string{"mode", "content"},
			values: map[string]string{"path": "/x", "mode": "0644", "content": "y"},
		},
		{
			name:   "a set name property is kept",
			src:    `file "x" { path = "/y" }`,
			attrs:  []string{"path"},
			values: map[string]string{"path": "/y"},
		},
		{
			name:   "a lazy property is unknown until apply",
			src:    `file "/x" { content = lazy("y") }`,
			attrs:  []string{"content"},
			values: map[string]string{"path": "/x", "content": "?"},
			lazy:   []string{"content"},
		},
		{
			name:    "a name property may not be lazy",
			src:     `file "/x" { path = lazy("/y") }`,
			attrs:   []string{"path"},
			values:  map[string]string{}, // (not the label either: the error says enough)
			errored: []string{"path"},
			diags:   []string{"lazy is not allowed on a property that names the resource"},
		},
		{
			name:   "an unknown property",
			src:    `file "/x" { contents = "y" }`,
			attrs:  []string{"contents"},
			values: map[string]string{"path": "/x"},
			diags:  []string{"Unknown property"},
		},
		{
			name:   "a missing required property",
			src:    `account "bob" {}`,
			values: map[string]string{"username": "bob"},
			diags:  []string{"Missing required property"},
		},
		{
			name:    "a required property that failed is not also missing",
			src:     `account "bob" { uid = "abc" }`,
			attrs:   []string{"uid"},
			values:  map[string]string{"username": "bob"},
			errored: []string{"uid"},
			diags:   []string{"Wrong type for property"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustLoad(t, writeDir(t, map[string]string{"a.hcl": c.src + "\n"}))
			b := cfg.Resources[0]
			typ, _ := testRegistry().Lookup(b.Type)
			scope := &Scope{Node: cty.EmptyObjectVal, Host: testHost()}
			be := newBlockEval(b, typ, scope, scope.EvalContext(b.Dir), nil)

			var attrs []string
			for _, a := range be.attributes() {
				attrs = append(attrs, a.Name)
				be.property(a)
			}
			be.defaultName()
			be.required()

			if !reflect.DeepEqual(attrs, c.attrs) {
				t.Errorf("attributes %q, want %q", attrs, c.attrs)
			}
			values := map[string]string{}
			for k, v := range be.values {
				switch {
				case !v.IsKnown():
					values[k] = "?"
				case v.Type() == cty.String:
					values[k] = v.AsString()
				default:
					values[k] = v.GoString()
				}
			}
			if !reflect.DeepEqual(values, c.values) {
				t.Errorf("values %q, want %q", values, c.values)
			}
			if got := sortedNames(be.lazies); !reflect.DeepEqual(got, orEmpty(c.lazy)) {
				t.Errorf("lazy %q, want %q", got, c.lazy)
			}
			var errored []string
			for _, k := range sortedNames(be.errored) {
				if be.errored[k] {
					errored = append(errored, k)
				}
			}
			if !reflect.DeepEqual(errored, c.errored) {
				t.Errorf("errored %q, want %q", errored, c.errored)
			}
			if got := summaries(be.diags); !reflect.DeepEqual(got, c.diags) {
				t.Errorf("diagnostics %q, want %q", got, c.diags)
			}
		})
	}
}

func orEmpty(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
