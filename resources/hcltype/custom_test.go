package hcltype

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/internal/typedvalue"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/commands"
)

// kvDef is a custom type over a directory of files, one per key: the
// file's content is the value. Its scripts are sh.
func kvDef(load string, batch bool) *resources.TypeDef {
	sh := func(code string) *resources.ScriptDef {
		return &resources.ScriptDef{Type: "sh", Values: map[string]typedvalue.Value{"code": {Value: cty.StringVal(code)}}, Source: resources.SourcePos{Filename: "types.hcl", Line: 7, Column: 3}}
	}
	def := &resources.TypeDef{
		Name:   "kv",
		Source: resources.SourcePos{Filename: "types.hcl", Line: 1, Column: 1},
		Properties: []*resources.PropertyDef{
			{Name: "dir", Type: typedvalue.Type{Type: cty.String}, Identity: true},
			{Name: "key", Type: typedvalue.Type{Type: cty.String}, NameProperty: true},
			{Name: "value", Type: typedvalue.Type{Type: cty.String}},
			{Name: "mode", Type: typedvalue.Type{Type: cty.String}, Default: &typedvalue.Value{Value: cty.StringVal("0644")}},
			{Name: "count", Type: typedvalue.Type{Type: cty.Number}},
			{Name: "note", Type: typedvalue.Type{Type: cty.String}, NonState: true},
		},
		Batch: batch,
		Actions: []*resources.ActionDef{{Name: "create", Steps: []*resources.StepDef{
			{Kind: resources.StepConvergeIfChanged, Properties: []string{"value"}, Script: sh(`printf '%s' "$PROP_VALUE" > "$PROP_DIR/$PROP_KEY"; cat > "$PROP_DIR/$PROP_KEY.input"`)},
			{Kind: resources.StepConvergeIfChanged, Properties: []string{"mode"}, Script: sh(`echo "$PROP_MODE $CHANGED_PROPERTIES" > "$PROP_DIR/$PROP_KEY.mode"`)},
		}}, {Name: "delete", Steps: []*resources.StepDef{
			{Kind: resources.StepConvergeBy, Description: "remove the key", When: resources.WhenExists, Script: sh(`rm "$PROP_DIR/$PROP_KEY"`)},
		}}},
		DefaultAction: "create",
	}
	if load != "" {
		def.Load = sh(load)
	}
	return def
}

const kvLoad = `cat > "$PROP_DIR/.load-input-$PROP_KEY"
f="$PROP_DIR/$PROP_KEY"
if [ ! -f "$f" ]; then echo '{"exists": false}'; exit 0; fi
printf '{"value": "%s"}' "$(cat "$f")"`

func newKV(t *testing.T, load string, batch bool) resources.Type {
	t.Helper()
	typ, err := New(kvDef(load, batch), nil, scriptTypes())
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func kvResource(typ resources.Type, dir, key string, values map[string]cty.Value) *resources.Resource {
	vals := map[string]cty.Value{"dir": cty.StringVal(dir), "key": cty.StringVal(key)}
	for k, v := range values {
		vals[k] = v
	}
	return resources.NewResource(typ.Schema(), key, "create", vals)
}

func TestCustomLoadGetsTheFreshResource(t *testing.T) {
	dir := t.TempDir()
	typ := newKV(t, kvLoad, false)
	r := kvResource(typ, dir, "port", map[string]cty.Value{"value": cty.StringVal("80"), "note": cty.StringVal("n")})
	st, err := typ.Load(context.Background(), r.LoadView())
	if err != nil {
		t.Fatal(err)
	}
	if st.Exists {
		t.Fatal("a missing key exists")
	}
	in, err := os.ReadFile(filepath.Join(dir, ".load-input-port"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(in, &got); err != nil {
		t.Fatalf("load input %q: %v", in, err)
	}
	// The seed's fresh resource: identity and non-state properties (and
	// name), never the desired-state ones.
	for _, k := range []string{"dir", "key", "note", "name"} {
		if _, ok := got[k]; !ok {
			t.Errorf("load input lacks %q: %s", k, in)
		}
	}
	for _, k := range []string{"value", "mode", "count"} {
		if _, ok := got[k]; ok {
			t.Errorf("load input holds the desired-state property %q: %s", k, in)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "port"), []byte("8080"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err = typ.Load(context.Background(), r.LoadView())
	if err != nil || !st.Exists || st.Values["value"].AsString() != "8080" {
		t.Fatalf("load: %v %+v", err, st)
	}
}

func TestCustomLoadAnswers(t *testing.T) {
	cases := []struct {
		name, script string
		want         string // error substring; "" for none
		check        func(*resources.State) bool
	}{
		{"exists false", `echo '{"exists": false}'`, "", func(s *resources.State) bool { return !s.Exists }},
		{"values", `echo '{"value": "x", "count": 3}'`, "", func(s *resources.State) bool {
			return s.Exists && s.Values["value"].AsString() == "x" && s.Values["count"].Equals(cty.NumberIntVal(3)).True()
		}},
		{"a number for a string", `echo '{"value": 42}'`, `printed "value": 42, which is not a string: it is a number`, nil},
		{"null is not read", `echo '{"value": null}'`, "", func(s *resources.State) bool { _, ok := s.Values["value"]; return s.Exists && !ok }},
		{"identity echoed back", `echo "{\"key\": \"$PROP_KEY\", \"value\": \"v\"}"`, "", func(s *resources.State) bool { return s.Values["value"].AsString() == "v" }},
		{"not JSON", `echo 'value=x'`, `load_current_value of kv (types.hcl:7:3) printed "value=x", which is not a JSON object`, nil},
		{"nothing", `true`, "printed nothing", nil},
		{"two objects", `echo '{} {}'`, "more than one JSON value", nil},
		{"undeclared property", `echo '{"valeu": "x"}'`, `printed the property "valeu", which kv does not declare. Did you mean "value"?`, nil},
		{"wrong type", `echo '{"count": "many"}'`, `printed "count": "many", which is not a number`, nil},
		{"list for a string", `echo '{"value": ["a"]}'`, `which is not a string`, nil},
		{"another identity", `echo '{"key": "other"}'`, "an identity or desired_state = false property, with another value", nil},
		{"bad exists", `echo '{"exists": "no"}'`, `printed "exists"`, nil},
		{"exit non-zero", `echo 'cannot read' >&2; exit 3`, "load_current_value of kv (types.hcl:7:3) failed: exited with code 3", nil},
		{"missing interpreter command", `no-such-command-toque`, "failed: exited with code 127", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := newKV(t, c.script, false)
			st, err := typ.Load(context.Background(), kvResource(typ, t.TempDir(), "port", nil).LoadView())
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("want an error with %q, got %v", c.want, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(st) {
				t.Fatalf("state %+v", st)
			}
		})
	}
}

func TestCustomLoadTimesOut(t *testing.T) {
	def := kvDef(`sleep 30`, false)
	def.Load.Values["timeout"] = typedvalue.Value{Value: cty.NumberFloatVal(0.3)}
	typ, err := New(def, nil, scriptTypes())
	if err != nil {
		t.Fatal(err)
	}
	_, err = typ.Load(context.Background(), kvResource(typ, t.TempDir(), "k", nil).LoadView())
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") {
		t.Fatalf("want a timeout, got %v", err)
	}
}

func TestCustomBatchLoad(t *testing.T) {
	testenv.MustHave(t, testenv.Python3)
	dir := t.TempDir()
	for _, k := range []string{"a", "c"} {
		if err := os.WriteFile(filepath.Join(dir, k), []byte("v-"+k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One run for every resource: a JSON array in, one out.
	script := `echo run >> "` + dir + `/runs"
python3 -c '
import json, os, sys
out = []
for r in json.load(sys.stdin):
    p = os.path.join(r["dir"], r["key"])
    out.append({"value": open(p).read()} if os.path.exists(p) else {"exists": False})
print(json.dumps(out))'`
	typ := newKV(t, script, true)
	bl, ok := typ.(resources.BatchLoader)
	if !ok {
		t.Fatal("a batch type is not a BatchLoader")
	}
	var rs []*resources.Resource
	for _, k := range []string{"a", "b", "c"} {
		rs = append(rs, kvResource(typ, dir, k, nil).LoadView())
	}
	states, err := bl.LoadAll(context.Background(), rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 3 || !states[0].Exists || states[1].Exists || states[2].Values["value"].AsString() != "v-c" {
		t.Fatalf("states %+v %+v %+v", states[0], states[1], states[2])
	}
	runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if strings.Count(string(runs), "run") != 1 {
		t.Fatalf("the batch ran %d times", strings.Count(string(runs), "run"))
	}
	// Load of one resource is a batch of one.
	st, err := typ.Load(context.Background(), rs[0])
	if err != nil || st.Values["value"].AsString() != "v-a" {
		t.Fatalf("load of one: %v %+v", err, st)
	}

	for name, c := range map[string]struct{ script, want string }{
		"too few answers": {`echo '[{}]'`, "printed 1 answers for 3 resources"},
		"not an array":    {`echo '{}'`, "which is not a JSON array"},
		"bad answer":      {`echo '[{}, 3, {}]'`, "answer 2 (for kv[b]) is \"3\", not a JSON object"},
	} {
		t.Run(name, func(t *testing.T) {
			typ := newKV(t, c.script, true)
			_, err := typ.(resources.BatchLoader).LoadAll(context.Background(), rs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
}

func TestCustomPlan(t *testing.T) {
	typ := newKV(t, kvLoad, false)
	absent := resources.Absent()
	live := &resources.State{Exists: true, Values: map[string]cty.Value{"value": cty.StringVal("old"), "mode": cty.StringVal("0600")}}
	cases := []struct {
		name    string
		action  string
		set     map[string]cty.Value
		current *resources.State
		kind    resources.Kind
		changes string
		groups  string
	}{
		{"create uses defaults", "create", map[string]cty.Value{"value": cty.StringVal("new")}, absent, resources.Create, "value mode", "converge_if_changed (value)|converge_if_changed (mode)"},
		{"update only what is set", "create", map[string]cty.Value{"value": cty.StringVal("new")}, live, resources.Update, "value", "converge_if_changed (value)"},
		{"unset mode is left alone", "create", map[string]cty.Value{"value": cty.StringVal("old")}, live, resources.NoOp, "", ""},
		{"set mode converges", "create", map[string]cty.Value{"mode": cty.StringVal("0644")}, live, resources.Update, "mode", "converge_if_changed (mode)"},
		{"uncovered property is not converged", "create", map[string]cty.Value{"count": cty.NumberIntVal(1)}, live, resources.NoOp, "", ""},
		{"converge_by when exists", "delete", nil, live, resources.Run, "", `converge_by "remove the key"`},
		{"converge_by when exists, absent", "delete", nil, absent, resources.NoOp, "", ""},
		{"nothing", "nothing", nil, live, resources.NoOp, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := kvResource(typ, "/d", "k", c.set).WithAction(c.action)
			st, err := resources.PlanStep(typ, r, c.current)
			if err != nil {
				t.Fatal(err)
			}
			var ch []string
			for _, x := range st.Changes {
				ch = append(ch, x.Property)
			}
			if st.Kind != c.kind || strings.Join(ch, " ") != c.changes || strings.Join(st.Groups, "|") != c.groups {
				t.Fatalf("got %s %q %q (%s), want %s %q %q", st.Kind, ch, st.Groups, st.Reason, c.kind, c.changes, c.groups)
			}
		})
	}
}

func TestCustomConvergeInput(t *testing.T) {
	dir := t.TempDir()
	typ := newKV(t, kvLoad, false)
	r := kvResource(typ, dir, "port", map[string]cty.Value{"value": cty.StringVal("8080")})
	live := &resources.State{Exists: true, Values: map[string]cty.Value{"value": cty.StringVal("80"), "mode": cty.StringVal("0600")}}
	step, err := resources.PlanStep(typ, r, live)
	if err != nil {
		t.Fatal(err)
	}
	if err := resources.ConvergeStep(context.Background(), typ, &resources.Env{}, r, live, step); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "port")); string(b) != "8080" {
		t.Fatalf("value %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "port.mode")); err == nil {
		t.Fatal("the mode step ran though mode did not change")
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "port.input"))
	var in struct {
		Name    string
		Action  string
		Exists  bool
		Desired map[string]any
		Current map[string]any
		Changed []string
		Values  map[string]any
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatalf("input %q: %v", raw, err)
	}
	if in.Name != "port" || in.Action != "create" || !in.Exists || in.Desired["value"] != "8080" || in.Current["value"] != "80" ||
		strings.Join(in.Changed, ",") != "value" {
		t.Fatalf("input %s", raw)
	}
	// desired = actual: an unset property's value is the live one, not the default.
	if in.Values["mode"] != "0600" || in.Values["value"] != "8080" {
		t.Fatalf("effective values %v", in.Values)
	}

	// Created: the default is used, every step runs.
	r2 := kvResource(typ, dir, "host", map[string]cty.Value{"value": cty.StringVal("h")})
	step, _ = resources.PlanStep(typ, r2, resources.Absent())
	if err := resources.ConvergeStep(context.Background(), typ, &resources.Env{}, r2, resources.Absent(), step); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "host.mode")); strings.TrimSpace(string(b)) != "0644 mode" {
		t.Fatalf("mode step saw %q", b)
	}

	// A failing script names the type, its file and line, and shows its output.
	def := kvDef(kvLoad, false)
	def.Actions[0].Steps[0].Script.Values["code"] = typedvalue.Value{Value: cty.StringVal("echo oops >&2; exit 4")}
	bad, _ := New(def, nil, scriptTypes())
	r3 := kvResource(bad, dir, "x", map[string]cty.Value{"value": cty.StringVal("v")})
	step, _ = resources.PlanStep(bad, r3, resources.Absent())
	err = resources.ConvergeStep(context.Background(), bad, &resources.Env{}, r3, resources.Absent(), step)
	if err == nil || !strings.Contains(err.Error(), "converge_if_changed (value) of kv (types.hcl:7:3) failed: exited with code 4") || !strings.Contains(err.Error(), "oops") {
		t.Fatalf("error %v", err)
	}
}

func TestCustomTypeDefCheck(t *testing.T) {
	for name, mutate := range map[string]func(*resources.TypeDef){
		"no actions":       func(d *resources.TypeDef) { d.Actions = nil },
		"bad default":      func(d *resources.TypeDef) { d.DefaultAction = "nope" },
		"unknown runner":   func(d *resources.TypeDef) { d.Actions[0].Steps[0].Script.Type = "ruby" },
		"no code":          func(d *resources.TypeDef) { delete(d.Actions[0].Steps[0].Script.Values, "code") },
		"bad covered prop": func(d *resources.TypeDef) { d.Actions[0].Steps[0].Properties = []string{"key"} },
		"bad step kind":    func(d *resources.TypeDef) { d.Actions[0].Steps[0].Kind = "converge_sometimes" },
		"duplicate prop":   func(d *resources.TypeDef) { d.Properties = append(d.Properties, d.Properties[0]) },
		"bad regex":        func(d *resources.TypeDef) { d.Properties[0].Regex = "(" },
	} {
		t.Run(name, func(t *testing.T) {
			d := kvDef(kvLoad, false)
			mutate(d)
			if _, err := New(d, nil, scriptTypes()); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// A batch that runs out of time is not run again once per resource (the
// lifecycle reads each alone after a failed batch).
func TestCustomBatchTimeoutIsNotRepeated(t *testing.T) {
	def := kvDef(`sleep 30`, true)
	def.Load.Values["timeout"] = typedvalue.Value{Value: cty.NumberFloatVal(0.3)}
	typ, err := New(def, nil, scriptTypes())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rs := []*resources.Resource{kvResource(typ, dir, "a", nil).LoadView(), kvResource(typ, dir, "b", nil).LoadView()}
	if _, err := typ.(resources.BatchLoader).LoadAll(context.Background(), rs); err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") {
		t.Fatalf("batch: %v", err)
	}
	start := time.Now()
	_, err = typ.Load(context.Background(), rs[0])
	if err == nil || !strings.Contains(err.Error(), "reading every kv resource at once") || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("the single read after a timed-out batch: %v after %s", err, time.Since(start))
	}
}

// A value that carries a secret — any value of a sensitive resource, or
// one the recipe made sensitive — reaches load_current_value on standard
// input only, never in its environment (which ps e and /proc show).
func TestCustomLoadKeepsSecretsOutOfTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	typ := newKV(t, `env > "`+out+`"; cat > "`+out+`.stdin"; echo '{"exists": false}'`, false)
	for _, c := range []struct {
		name   string
		r      func(*resources.Resource) *resources.Resource
		hidden []string
		shown  []string
	}{
		{"sensitive resource", func(r *resources.Resource) *resources.Resource { return r.WithSecrets(true, nil) }, []string{"PROP_DIR=", "PROP_NOTE=", "PROP_KEY="}, nil},
		{"sensitive value", func(r *resources.Resource) *resources.Resource { return r.WithSecrets(false, []string{"note"}) }, []string{"PROP_NOTE="}, []string{"PROP_DIR=", "PROP_KEY="}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.r(kvResource(typ, dir, "k", map[string]cty.Value{"note": cty.StringVal("s3cr3t")}))
			if _, err := typ.Load(context.Background(), r.LoadView()); err != nil {
				t.Fatal(err)
			}
			env, _ := os.ReadFile(out)
			stdin, _ := os.ReadFile(out + ".stdin")
			for _, h := range c.hidden {
				if strings.Contains("\n"+string(env), "\n"+h) {
					t.Errorf("%s is in the environment:\n%s", h, env)
				}
			}
			for _, s := range c.shown {
				if !strings.Contains("\n"+string(env), "\n"+s) {
					t.Errorf("%s is not in the environment:\n%s", s, env)
				}
			}
			if !strings.Contains(string(stdin), "s3cr3t") {
				t.Errorf("standard input lacks the value: %s", stdin)
			}
		})
	}
}

// scriptTypes is a registry of the script types that run an HCL type's
// scripts.
func scriptTypes() *resources.Registry {
	return resources.NewRegistry(commands.ScriptType(), commands.BashType(), commands.ShType(), commands.CshType(), commands.PythonType(), commands.PerlType(), commands.PowerShellScriptType())
}
