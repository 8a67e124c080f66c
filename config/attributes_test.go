package config

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

type write struct {
	level string
	path  string // dotted
	v     cty.Value
	line  int
}

func TestAttributesMerge(t *testing.T) {
	obj := func(m map[string]cty.Value) cty.Value { return cty.ObjectVal(m) }
	cases := []struct {
		name   string
		writes []write
		want   cty.Value
		// leaves: dotted path → level@line
		leaves map[string]string
	}{
		{
			name: "nothing written",
			want: cty.EmptyObjectVal,
		},
		{
			name: "objects merge key by key",
			writes: []write{
				{"default", "web.port", cty.NumberIntVal(8080), 1},
				{"default", "web.tls", obj(map[string]cty.Value{"enabled": cty.True}), 2},
				{"default", "web.tls", obj(map[string]cty.Value{"port": cty.NumberIntVal(443)}), 3},
			},
			want: obj(map[string]cty.Value{"web": obj(map[string]cty.Value{
				"port": cty.NumberIntVal(8080),
				"tls":  obj(map[string]cty.Value{"enabled": cty.True, "port": cty.NumberIntVal(443)}),
			})}),
			leaves: map[string]string{"web.port": "default@1", "web.tls.enabled": "default@2", "web.tls.port": "default@3"},
		},
		{
			name: "override beats default whatever the order",
			writes: []write{
				{"override", "web.port", cty.NumberIntVal(9090), 1},
				{"default", "web.port", cty.NumberIntVal(8080), 2},
				{"default", "web.root", cty.StringVal("/srv"), 3},
			},
			want:   obj(map[string]cty.Value{"web": obj(map[string]cty.Value{"port": cty.NumberIntVal(9090), "root": cty.StringVal("/srv")})}),
			leaves: map[string]string{"web.port": "override@1", "web.root": "default@3"},
		},
		{
			name: "last writer wins within a level",
			writes: []write{
				{"default", "web.port", cty.NumberIntVal(1), 1},
				{"default", "web.port", cty.NumberIntVal(2), 2},
			},
			want:   obj(map[string]cty.Value{"web": obj(map[string]cty.Value{"port": cty.NumberIntVal(2)})}),
			leaves: map[string]string{"web.port": "default@2"},
		},
		{
			name: "lists are leaves",
			writes: []write{
				{"default", "web.hosts", cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), 1},
				{"default", "web.hosts", cty.TupleVal([]cty.Value{cty.StringVal("c")}), 2},
			},
			want:   obj(map[string]cty.Value{"web": obj(map[string]cty.Value{"hosts": cty.TupleVal([]cty.Value{cty.StringVal("c")})})}),
			leaves: map[string]string{"web.hosts": "default@2"},
		},
		{
			name: "scalar replaces map within a level",
			writes: []write{
				{"default", "web.tls", obj(map[string]cty.Value{"enabled": cty.True}), 1},
				{"default", "web.tls", cty.StringVal("off"), 2},
			},
			want:   obj(map[string]cty.Value{"web": obj(map[string]cty.Value{"tls": cty.StringVal("off")})}),
			leaves: map[string]string{"web.tls": "default@2"},
		},
		{
			name: "map replaces scalar within a level",
			writes: []write{
				{"default", "web.tls", cty.StringVal("off"), 1},
				{"default", "web.tls.enabled", cty.True, 2},
			},
			want:   obj(map[string]cty.Value{"web": obj(map[string]cty.Value{"tls": obj(map[string]cty.Value{"enabled": cty.True})})}),
			leaves: map[string]string{"web.tls.enabled": "default@2"},
		},
		{
			name: "override leaf replaces a default subtree",
			writes: []write{
				{"default", "web.tls", obj(map[string]cty.Value{"enabled": cty.True, "port": cty.NumberIntVal(443)}), 1},
				{"override", "web.tls", cty.False, 2},
			},
			want:   obj(map[string]cty.Value{"web": obj(map[string]cty.Value{"tls": cty.False})}),
			leaves: map[string]string{"web.tls": "override@2"},
		},
		{
			name: "override subtree merges into default subtree",
			writes: []write{
				{"override", "web.tls", obj(map[string]cty.Value{"port": cty.NumberIntVal(8443)}), 1},
				{"default", "web.tls", obj(map[string]cty.Value{"enabled": cty.True, "port": cty.NumberIntVal(443)}), 2},
			},
			want:   obj(map[string]cty.Value{"web": obj(map[string]cty.Value{"tls": obj(map[string]cty.Value{"enabled": cty.True, "port": cty.NumberIntVal(8443)})})}),
			leaves: map[string]string{"web.tls.enabled": "default@2", "web.tls.port": "override@1"},
		},
		{
			name: "override map replaces a default scalar",
			writes: []write{
				{"default", "web.tls", cty.False, 1},
				{"override", "web.tls.enabled", cty.True, 2},
			},
			want:   obj(map[string]cty.Value{"web": obj(map[string]cty.Value{"tls": obj(map[string]cty.Value{"enabled": cty.True})})}),
			leaves: map[string]string{"web.tls.enabled": "override@2"},
		},
		{
			name:   "empty object creates the key",
			writes: []write{{"default", "web", cty.EmptyObjectVal, 1}},
			want:   obj(map[string]cty.Value{"web": cty.EmptyObjectVal}),
		},
		{
			name: "normal beats default and yields to override, whatever the order",
			writes: []write{
				{"override", "web.port", cty.NumberIntVal(9090), 1},
				{"normal", "web.port", cty.NumberIntVal(8080), 2},
				{"normal", "web.root", cty.StringVal("/cli"), 3},
				{"default", "web.root", cty.StringVal("/srv"), 4},
				{"default", "web.user", cty.StringVal("www"), 5},
			},
			want: obj(map[string]cty.Value{"web": obj(map[string]cty.Value{
				"port": cty.NumberIntVal(9090), "root": cty.StringVal("/cli"), "user": cty.StringVal("www"),
			})}),
			leaves: map[string]string{"web.port": "override@1", "web.root": "normal@3", "web.user": "default@5"},
		},
		{
			name:   "unknown level ignored",
			writes: []write{{"automatic", "web.port", cty.NumberIntVal(1), 1}},
			want:   cty.EmptyObjectVal,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAttributes()
			for _, w := range tc.writes {
				a.Write(w.level, strings.Split(w.path, "."), w.v, hcl.Range{Filename: "r.hcl", Start: hcl.Pos{Line: w.line}})
			}
			if got := a.Node(); !got.RawEquals(tc.want) {
				t.Errorf("Node() = %#v\nwant %#v", got, tc.want)
			}
			leaves := a.Leaves()
			if len(leaves) != len(tc.leaves) {
				t.Fatalf("got %d leaves, want %d: %v", len(leaves), len(tc.leaves), leaves)
			}
			prev := ""
			for _, l := range leaves {
				p := strings.Join(l.Path, ".")
				if p < prev {
					t.Errorf("leaves not sorted: %s after %s", p, prev)
				}
				prev = p
				want, ok := tc.leaves[p]
				got := l.Level + "@" + strconv.Itoa(l.Range.Start.Line)
				if !ok || got != want {
					t.Errorf("leaf %s = %s, want %s", p, got, want)
				}
			}
		})
	}
}

func TestCompactIntegersKeepsValues(t *testing.T) {
	lit := func(src string) cty.Value {
		e, d := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.InitialPos)
		if d.HasErrors() {
			t.Fatal(d)
		}
		v, d := e.Value(nil)
		if d.HasErrors() {
			t.Fatal(d)
		}
		return v
	}
	for _, src := range []string{`42`, `-7`, `1.5`, `1e300`, `{ a = 8080, b = [1, 2.25], c = "x" }`, `null`} {
		v := lit(src)
		got := compactIntegers(v)
		if !got.Type().Equals(v.Type()) || got.Equals(v).False() {
			t.Errorf("%s: compacted to %#v", src, got)
		}
	}
	if got := compactIntegers(lit(`42`)); got.AsBigFloat().Prec() > 64 {
		t.Errorf("42 kept precision %d", got.AsBigFloat().Prec())
	}
}

// Writes lists what every level says about a path, in precedence order:
// what the console shows for :source.
func TestAttributesWrites(t *testing.T) {
	a := NewAttributes()
	at := func(line int) hcl.Range { return hcl.Range{Filename: "r.hcl", Start: hcl.Pos{Line: line}} }
	a.Write(LevelOverride, []string{"web", "port"}, cty.NumberIntVal(9090), at(1))
	a.Write(LevelDefault, []string{"web"}, cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(80), "root": cty.StringVal("/srv")}), at(2))
	a.WriteFrom(LevelNormal, []string{"web", "port"}, cty.NumberIntVal(8080), hcl.Range{Filename: "prod.json", Start: hcl.Pos{Line: 3}}, OriginAttrFile)
	a.WritePolicy(LevelDefault, []string{"web", "port"}, cty.NumberIntVal(81), at(4), "")
	a.Write(LevelDefault, []string{"db", "host"}, cty.StringVal("x"), at(5))

	cases := []struct {
		path string
		want []string // level source value
	}{
		{"web.port", []string{"default r.hcl:2 80", "default r.hcl:4 81", "normal -attr-file prod.json:3 8080", "override r.hcl:1 9090"}},
		{"web", []string{"default r.hcl:2 80", "default r.hcl:2 /srv", "default r.hcl:4 81", "normal -attr-file prod.json:3 8080", "override r.hcl:1 9090"}},
		{"web.port.x", nil},
		{"nope", nil},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			var got []string
			for _, l := range a.Writes(strings.Split(tc.path, ".")) {
				v := l.Value.GoString()
				if l.Value.Type() == cty.String {
					v = l.Value.AsString()
				} else if l.Value.Type() == cty.Number {
					v = l.Value.AsBigFloat().String()
				}
				got = append(got, l.Level+" "+l.Source(nil)+" "+v)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Writes(%s):\n%s\nwant:\n%s", tc.path, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Source is the one way toque says where a value came from.
func TestLeafSource(t *testing.T) {
	rng := func(file string, line int) hcl.Range { return hcl.Range{Filename: file, Start: hcl.Pos{Line: line}} }
	cfg := &Config{Dir: "/r"}
	cases := []struct {
		leaf Leaf
		want string
	}{
		{Leaf{Range: rng("/r/default.hcl", 7)}, "default.hcl:7"},
		{Leaf{Range: rng("/elsewhere/default.hcl", 7)}, "/elsewhere/default.hcl:7"},
		{Leaf{Range: rng("/r/policy.hcl", 12), Origin: `include_policy "base" (revision 1a2b3c4d5e)`}, `include_policy "base" (revision 1a2b3c4d5e) at policy.hcl:12`},
		{Leaf{Range: rng("prod.json", 3), Origin: OriginAttrFile}, "-attr-file prod.json:3"},
		{Leaf{Range: rng("../envs/prod.attrs", 2), Origin: OriginAttrFile}, "-attr-file ../envs/prod.attrs:2"},
		{Leaf{Range: rng("-attr web.port", 1), Origin: OriginAttr}, "-attr web.port"},
	}
	for _, tc := range cases {
		if got := tc.leaf.Source(cfg.DisplayPath); got != tc.want {
			t.Errorf("Source = %q, want %q", got, tc.want)
		}
	}
}
