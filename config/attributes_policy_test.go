package config

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// TestPolicyComponentMerge: at one level, the policy's writes are merged
// onto the cookbooks' as Chef's deep_merge! merges role_default onto
// default: lists into their union (cookbook's elements first, each value
// once), anything else replaced by the policy's. Across levels lists are
// never merged.
func TestPolicyComponentMerge(t *testing.T) {
	tup := func(vs ...cty.Value) cty.Value { return cty.TupleVal(vs) }
	s := cty.StringVal
	n := func(i int64) cty.Value { return cty.NumberIntVal(i) }
	obj := func(m map[string]cty.Value) cty.Value { return cty.ObjectVal(m) }
	type pw struct {
		policy bool
		write
	}
	cb := func(level, path string, v cty.Value, line int) pw { return pw{false, write{level, path, v, line}} }
	pol := func(level, path string, v cty.Value, line int) pw { return pw{true, write{level, path, v, line}} }
	cases := []struct {
		name   string
		writes []pw
		want   cty.Value
		// leaves: dotted path → level@file:line[+merged file:line]
		leaves map[string]string
	}{
		{
			name:   "default lists merge, cookbook's first, each value once",
			writes: []pw{cb("default", "app.hosts", tup(s("a"), s("b"), s("a")), 1), pol("default", "app.hosts", tup(s("b"), s("c")), 2)},
			want:   obj(map[string]cty.Value{"app": obj(map[string]cty.Value{"hosts": tup(s("a"), s("b"), s("c"))})}),
			leaves: map[string]string{"app.hosts": "default@policy.hcl:2+cookbook.hcl:1"},
		},
		{
			name:   "the order of the writes does not matter",
			writes: []pw{pol("default", "app.hosts", tup(s("p")), 2), cb("default", "app.hosts", tup(s("c")), 1)},
			want:   obj(map[string]cty.Value{"app": obj(map[string]cty.Value{"hosts": tup(s("c"), s("p"))})}),
			leaves: map[string]string{"app.hosts": "default@policy.hcl:2+cookbook.hcl:1"},
		},
		{
			name:   "override lists merge too",
			writes: []pw{cb("override", "app.hosts", tup(s("c")), 1), pol("override", "app.hosts", tup(s("p")), 2)},
			want:   obj(map[string]cty.Value{"app": obj(map[string]cty.Value{"hosts": tup(s("c"), s("p"))})}),
			leaves: map[string]string{"app.hosts": "override@policy.hcl:2+cookbook.hcl:1"},
		},
		{
			name:   "a string and a number are two values",
			writes: []pw{cb("default", "l", tup(s("1"), n(2)), 1), pol("default", "l", tup(n(1), n(2)), 2)},
			want:   obj(map[string]cty.Value{"l": tup(s("1"), n(2), n(1))}),
			leaves: map[string]string{"l": "default@policy.hcl:2+cookbook.hcl:1"},
		},
		{
			name: "lists of one type stay a list",
			writes: []pw{cb("default", "l", cty.ListVal([]cty.Value{s("a")}), 1),
				pol("default", "l", cty.ListVal([]cty.Value{s("b")}), 2)},
			want:   obj(map[string]cty.Value{"l": cty.ListVal([]cty.Value{s("a"), s("b")})}),
			leaves: map[string]string{"l": "default@policy.hcl:2+cookbook.hcl:1"},
		},
		{
			name:   "two empty lists",
			writes: []pw{cb("default", "l", cty.EmptyTupleVal, 1), pol("default", "l", cty.EmptyTupleVal, 2)},
			want:   obj(map[string]cty.Value{"l": cty.EmptyTupleVal}),
			leaves: map[string]string{"l": "default@policy.hcl:2+cookbook.hcl:1"},
		},
		{
			name: "inside maps, key by key",
			writes: []pw{cb("default", "app", obj(map[string]cty.Value{"l": tup(n(1)), "k": s("cookbook")}), 1),
				pol("default", "app", obj(map[string]cty.Value{"l": tup(n(2)), "m": s("policy")}), 2)},
			want: obj(map[string]cty.Value{"app": obj(map[string]cty.Value{"l": tup(n(1), n(2)), "k": s("cookbook"), "m": s("policy")})}),
			leaves: map[string]string{"app.l": "default@policy.hcl:2+cookbook.hcl:1", "app.k": "default@cookbook.hcl:1",
				"app.m": "default@policy.hcl:2"},
		},
		{
			name:   "a scalar replaces a list",
			writes: []pw{cb("default", "l", tup(n(1)), 1), pol("default", "l", s("none"), 2)},
			want:   obj(map[string]cty.Value{"l": s("none")}),
			leaves: map[string]string{"l": "default@policy.hcl:2"},
		},
		{
			name:   "a list replaces a map",
			writes: []pw{cb("default", "l.a", n(1), 1), pol("default", "l", tup(n(2)), 2)},
			want:   obj(map[string]cty.Value{"l": tup(n(2))}),
			leaves: map[string]string{"l": "default@policy.hcl:2"},
		},
		{
			name:   "a set is not a list",
			writes: []pw{cb("default", "l", cty.SetVal([]cty.Value{n(1)}), 1), pol("default", "l", cty.SetVal([]cty.Value{n(2)}), 2)},
			want:   obj(map[string]cty.Value{"l": cty.SetVal([]cty.Value{n(2)})}),
			leaves: map[string]string{"l": "default@policy.hcl:2"},
		},
		{
			name:   "no merge across levels: a cookbook override beats a policy default",
			writes: []pw{cb("override", "l", tup(n(1)), 1), pol("default", "l", tup(n(2)), 2)},
			want:   obj(map[string]cty.Value{"l": tup(n(1))}),
			leaves: map[string]string{"l": "override@cookbook.hcl:1"},
		},
		{
			name:   "no merge across levels: a policy override beats a cookbook default",
			writes: []pw{cb("default", "l", tup(n(1)), 1), pol("override", "l", tup(n(2)), 2)},
			want:   obj(map[string]cty.Value{"l": tup(n(2))}),
			leaves: map[string]string{"l": "override@policy.hcl:2"},
		},
		{
			name:   "within the cookbooks, the last writer wins",
			writes: []pw{cb("default", "l", tup(n(1)), 1), cb("default", "l", tup(n(2)), 3)},
			want:   obj(map[string]cty.Value{"l": tup(n(2))}),
			leaves: map[string]string{"l": "default@cookbook.hcl:3"},
		},
		{
			name:   "an unknown list gives an unknown union",
			writes: []pw{cb("default", "l", cty.UnknownVal(cty.List(cty.String)), 1), pol("default", "l", tup(s("p")), 2)},
			want:   obj(map[string]cty.Value{"l": cty.DynamicVal}),
			leaves: map[string]string{"l": "default@policy.hcl:2+cookbook.hcl:1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAttributes()
			for _, w := range tc.writes {
				file := "/p/cookbooks/app/attributes/cookbook.hcl"
				if w.policy {
					file = "/p/policy.hcl"
				}
				rng := hcl.Range{Filename: file, Start: hcl.Pos{Line: w.line}}
				if w.policy {
					a.WritePolicy(w.level, strings.Split(w.path, "."), w.v, rng, "")
				} else {
					a.Write(w.level, strings.Split(w.path, "."), w.v, rng)
				}
			}
			if got := a.Node(); !got.RawEquals(tc.want) {
				t.Errorf("Node() = %#v\nwant %#v", got, tc.want)
			}
			leaves := a.Leaves()
			if len(leaves) != len(tc.leaves) {
				t.Fatalf("got %d leaves, want %d: %v", len(leaves), len(tc.leaves), leaves)
			}
			for _, l := range leaves {
				p := strings.Join(l.Path, ".")
				got := l.Level + "@" + filepath.Base(l.Range.Filename) + ":" + strconv.Itoa(l.Range.Start.Line)
				for _, m := range l.MergedFrom {
					got += "+" + filepath.Base(m.Filename) + ":" + strconv.Itoa(m.Start.Line)
				}
				if got != tc.leaves[p] {
					t.Errorf("leaf %s = %s, want %s", p, got, tc.leaves[p])
				}
				if len(l.MergedFrom) > 0 && l.Origin != "list merged from cookbooks/app/attributes/cookbook.hcl:1 and the policy's list" {
					t.Errorf("leaf %s origin %q", p, l.Origin)
				}
			}
		})
	}

	t.Run("an included policy's list names the include", func(t *testing.T) {
		a := NewAttributes()
		a.Write("default", []string{"l"}, tup(n(1)), hcl.Range{Filename: "/elsewhere/a.hcl", Start: hcl.Pos{Line: 4}})
		a.WritePolicy("default", []string{"l"}, tup(n(2)), hcl.Range{Filename: "/p/policy.hcl", Start: hcl.Pos{Line: 9}}, `include_policy "base" (revision 0123456789)`)
		l := a.Leaves()[0]
		if want := `list merged from /elsewhere/a.hcl:4 and the list of include_policy "base" (revision 0123456789)`; l.Origin != want {
			t.Errorf("origin %q, want %q", l.Origin, want)
		}
	})
}
