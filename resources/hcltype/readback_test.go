package hcltype

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/typedvalue"
	"github.com/toquehq/toque/resources"
)

// typedDef is a custom type with a property of each kind of type, whose
// load_current_value prints answer.
func typedDef(answer string, batch bool) *resources.TypeDef {
	def := kvDef("printf '%s' '"+answer+"'", batch)
	ty := func(t cty.Type) typedvalue.Type { return typedvalue.Type{Type: t} }
	def.Properties = append(def.Properties,
		&resources.PropertyDef{Name: "enabled", Type: ty(cty.Bool)},
		&resources.PropertyDef{Name: "tags", Type: ty(cty.List(cty.String))},
		&resources.PropertyDef{Name: "ports", Type: ty(cty.Set(cty.Number))},
		&resources.PropertyDef{Name: "labels", Type: ty(cty.Map(cty.String))},
		&resources.PropertyDef{Name: "limits", Type: ty(cty.Object(map[string]cty.Type{"cpu": cty.Number, "name": cty.String}))},
		&resources.PropertyDef{Name: "pair", Type: ty(cty.Tuple([]cty.Type{cty.String, cty.Number}))},
		&resources.PropertyDef{Name: "extra", Type: ty(cty.DynamicPseudoType)},
	)
	return def
}

// What load_current_value reads back is held to the property types
// exactly, as docs/resource-authors.md says ("a value of the wrong type"
// fails the plan): JSON's own types, no conversion of a number to a
// string or of "true" to a bool, at any depth; and an object naming one
// key twice is an error, at any depth, rather than the last value
// winning.
func TestCustomLoadReadBackIsStrict(t *testing.T) {
	cases := []struct {
		name, answer string
		want         string // in the error; "" none
	}{
		{"every type right", `{"value": "v", "count": 3, "enabled": true, "tags": ["a", "b"], "ports": [80, 443], "labels": {"a": "1"}, "limits": {"cpu": 1.5, "name": "x"}, "pair": ["a", 1], "extra": {"any": [1, "x"]}}`, ""},
		{"null values", `{"value": null, "tags": ["a", null], "labels": {"a": null}}`, ""},
		{"empty collections", `{"tags": [], "ports": [], "labels": {}}`, ""},

		{"a number for a string", `{"value": 42}`, `printed "value": 42, which is not a string: it is a number`},
		{"a bool for a string", `{"value": true}`, `printed "value": true, which is not a string: it is a bool`},
		{"a string for a number", `{"count": "3"}`, `printed "count": "3", which is not a number: it is a string`},
		{"a string for a bool", `{"enabled": "true"}`, `printed "enabled": "true", which is not a bool: it is a string`},
		{"a number for a bool", `{"enabled": 1}`, `which is not a bool: it is a number`},
		{"an object for a list", `{"tags": {"a": "b"}}`, `which is not a list of string: it is an object`},
		{"a number in a list of strings", `{"tags": ["a", 2]}`, `which is not a list of string: element 1 is a number, not a string`},
		{"a string in a set of numbers", `{"ports": [80, "443"]}`, `which is not a set of number: element 1 is a string, not a number`},
		{"a number in a map of strings", `{"labels": {"a": 1}}`, `which is not a map of string: "a" is a number, not a string`},
		{"an array for a map", `{"labels": ["a"]}`, `which is not a map of string: it is an array`},
		{"a string for an object's number", `{"limits": {"cpu": "2", "name": "x"}}`, `"cpu" is a string, not a number`},
		{"an attribute the object lacks", `{"limits": {"cpu": 2, "name": "x", "mem": 3}}`, `has no attribute "mem"`},
		{"a tuple of the wrong length", `{"pair": ["a"]}`, `has 1 element, not 2`},
		{"a tuple's element", `{"pair": [1, 1]}`, `element 0 is a number, not a string`},

		{"a key twice", `{"value": "a", "value": "b"}`, `printed the key "value" twice`},
		{"exists twice", `{"exists": true, "exists": false}`, `printed the key "exists" twice`},
		{"a key twice in a map", `{"labels": {"a": "1", "b": "2", "a": "3"}}`, `printed the key "a" twice (in "labels")`},
		{"a key twice deeper", `{"extra": [{"k": {"x": 1, "x": 2}}]}`, `printed the key "x" twice (in "extra"[0]."k")`},
		{"a key twice in an ignored name", `{"name": "port", "name": "other"}`, `printed the key "name" twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, batch := range []bool{false, true} {
				answer := c.answer
				if batch {
					answer = "[" + answer + "]"
				}
				typ, err := New(typedDef(answer, batch), nil, scriptTypes())
				if err != nil {
					t.Fatal(err)
				}
				st, err := typ.Load(context.Background(), kvResource(typ, t.TempDir(), "port", nil).LoadView())
				if c.want == "" {
					if err != nil || !st.Exists {
						t.Fatalf("batch %v: %v, %+v", batch, err, st)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("batch %v: want an error with %q, got %v (%+v)", batch, c.want, err, st)
				}
			}
		})
	}
}

// scanJSON on its own: where a duplicate key is, what is not one, input
// no stack can follow, input that is not JSON after all, and the
// children it returns.
func TestScanJSON(t *testing.T) {
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	deepObj := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	cases := []struct{ in, want string }{
		{`{}`, ""},
		{`[]`, ""},
		{`"x"`, ""},
		{`{"a": 1, "b": {"a": 2}, "c": [{"a": 1}, {"a": 2}]}`, ""},
		{`{"a": 1, "a": 1}`, `printed the key "a" twice: a JSON object`},
		{`{"a": {"b": [1, 2, {"c": 1, "c": 2}]}}`, `printed the key "c" twice (in "a"."b"[2])`},
		{`[{"x": 1}, [], {"y": 1, "y": 2}]`, `printed the key "y" twice (in [2])`},
		{`{"a": [[], [], {"k": 0, "k": 0}]}`, `(in "a"[2])`},
		{`{"\u0061": 1, "a": 2}`, `printed the key "a" twice`},
		{deep, "nested too deeply"},
		{deepObj, "nested too deeply"},
		{`{"a": 1,}`, "invalid character '}' at byte 8"},
		{`{"a"`, "unexpected end"},
		{`{"a": "x`, "unexpected end"},
		{`{"a": "x\"}`, "unexpected end"},
		{`[1, 2`, "unexpected end"},
		{`{"a": 1} x`, "invalid character 'x' at byte 9"},
		{`{"a" 1}`, "invalid character '1'"},
		{`{"a": }`, "invalid character '}'"},
		{`]`, "invalid character ']'"},
		{``, "unexpected end"},
	}
	for _, c := range cases {
		name := c.in
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			_, err := scanJSON([]byte(c.in), true)
			if c.want == "" {
				if err != nil {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
}

func TestScanJSONChildren(t *testing.T) {
	in := ` { "a" : "x\"y" , "b":[1,{"c":2}], "\u0063": {}, "d": null, "e": -1.5e3 } `
	got, err := scanJSON([]byte(in), true)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, c := range got {
		s = append(s, c.key+"="+string(c.value))
	}
	want := `a="x\"y"|b=[1,{"c":2}]|c={}|d=null|e=-1.5e3`
	if strings.Join(s, "|") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(s, "|"), want)
	}
	got, err = scanJSON([]byte(`[{"a": 1, "a": 2}, 3, "x"]`), false)
	if err != nil || len(got) != 3 || string(got[0].value) != `{"a": 1, "a": 2}` || string(got[2].value) != `"x"` {
		t.Errorf("array without the key check: %v, %q", err, got)
	}
}

// FuzzScanJSON holds scanJSON to encoding/json: it never panics, and on
// any JSON value encoding/json accepts it finds no error (duplicates
// aside) and returns the top-level children encoding/json sees.
func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a": [1, {"b": "c\"d"}], "e": null}`, `{"a": 1, "a": 2}`, `[{"x": {"y": 1, "y": 2}}]`, `"\u0061"`, `{"\\": 1}`, `[[[[]]]]`, `{"a":1}{`, "{\"\x9c\":0, \"\x9d\":1}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		children, err := scanJSON(raw, true)
		if !json.Valid(raw) {
			return
		}
		var dk *duplicateKeyError
		if errors.As(err, &dk) {
			children, err = scanJSON(raw, false)
		}
		if err != nil {
			t.Fatalf("valid JSON %q: %v", raw, err)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case map[string]any:
			keys := map[string]bool{}
			for _, c := range children {
				keys[c.key] = true
				if !json.Valid(c.value) {
					t.Fatalf("member %q of %q: %q is not JSON", c.key, raw, c.value)
				}
			}
			if len(keys) != len(v) {
				t.Fatalf("%q: %d keys, encoding/json has %d", raw, len(keys), len(v))
			}
			for k := range v {
				if !keys[k] {
					t.Fatalf("%q: key %q missing", raw, k)
				}
			}
		case []any:
			if len(children) != len(v) {
				t.Fatalf("%q: %d elements, encoding/json has %d", raw, len(children), len(v))
			}
		default:
			if len(children) != 0 {
				t.Fatalf("%q: children of a scalar", raw)
			}
		}
	})
}
