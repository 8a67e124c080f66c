package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/resources"
)

// showType is a resource type for Show's tests: a state type (a file) and
// an acting type (a command) share its Load and Plan, which Show never
// calls.
type showType struct{ schema *resources.Schema }

func (t *showType) Schema() *resources.Schema { return t.schema }
func (t *showType) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return resources.Absent(), nil
}
func (t *showType) Plan(string, *resources.Resource, *resources.State) (*resources.Step, error) {
	return &resources.Step{Kind: resources.NoOp}, nil
}
func (t *showType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *showType) converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return nil
}

func showRegistry() *resources.Registry {
	return resources.NewRegistry(
		&showType{&resources.Schema{Name: "run_thing", Properties: []*resources.Property{
			{Name: "command", Type: cty.String, NameProperty: true},
			{Name: "cwd", Type: cty.String, NonState: true},
			{Name: "secret", Type: cty.String, NonState: true, Sensitive: true},
		}}},
		&showType{&resources.Schema{Name: "state_thing", Properties: []*resources.Property{
			{Name: "path", Type: cty.String, NameProperty: true},
			{Name: "content", Type: cty.String, Content: true},
			{Name: "mode", Type: cty.String, Default: cty.StringVal("0644")},
			{Name: "owner", Type: cty.String},
			{Name: "backup", Type: cty.Number, NonState: true},
		}}},
	)
}

func desired(kv ...string) map[string]Value {
	out := map[string]Value{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = Value{Value: cty.StringVal(kv[i+1])}
	}
	return out
}

func TestShowContext(t *testing.T) {
	cases := []struct {
		name string
		r    *Resource
		want string
		kind resources.Kind
	}{
		{"label is the name", &Resource{Type: "state_thing", Name: "/x", Desired: desired("path", "/x", "content", "a")}, "", ""},
		{"name differs from label", &Resource{Type: "state_thing", Name: "www", Desired: map[string]Value{"path": {Value: cty.StringVal("/srv/www")}, "backup": {Value: cty.NumberIntVal(2)}}}, `path="/srv/www"`, ""},
		{"acting type shows what runs", &Resource{Type: "run_thing", Name: "reload", Desired: desired("command", "kill -HUP 1", "cwd", "/opt", "secret", "s3")}, `command="kill -HUP 1" cwd="/opt" secret=(sensitive)`, ""},
		{"sensitive resource", &Resource{Type: "run_thing", Name: "reload", Sensitive: true, Desired: desired("command", "kill -HUP 1")}, `command=(sensitive)`, ""},
		{"a value the type does not have", &Resource{Type: "run_thing", Name: "x", Desired: desired("command", "x", "shell", "zsh")}, `shell="zsh" (not a property of run_thing: apply refuses this plan)`, ""},
		{"unknown type shows every value", &Resource{Type: "mystery", Name: "m", Desired: desired("b", "2", "a", "1")}, `a="1" b="2"`, ""},
		{"a create shows its settings", &Resource{Type: "state_thing", Name: "www", Desired: map[string]Value{"path": {Value: cty.StringVal("/srv/www")}, "backup": {Value: cty.NumberIntVal(2)}}}, `path="/srv/www" backup=2`, resources.Create},
		{"an update does not", &Resource{Type: "state_thing", Name: "www", Desired: map[string]Value{"path": {Value: cty.StringVal("/srv/www")}, "backup": {Value: cty.NumberIntVal(2)}}}, `path="/srv/www"`, resources.Update},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.r.Address = resources.Address(c.r.Type, c.r.Name)
			c.r.Kind = resources.Run
			if c.kind != "" {
				c.r.Kind = c.kind
			}
			s := (&Plan{}).Show(showRegistry(), c.r)
			var got []string
			for _, v := range s.Context {
				got = append(got, v.Property+"="+v.Value)
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("got %s, want %s", g, c.want)
			}
			if s.UnknownType != (c.r.Type == "mystery") {
				t.Errorf("unknown type %v", s.UnknownType)
			}
		})
	}
}

// What is shown of a change comes from Desired and Current, never from
// text in the plan: editing Desired changes what is shown.
func TestShowChangesFromDesiredAndCurrent(t *testing.T) {
	schema := showRegistry()
	st, _ := schema.Lookup("state_thing")
	cur := StoreCurrent(st.Schema(), &resources.State{Exists: true, Values: map[string]cty.Value{
		"content": cty.StringVal("one\ntwo\n"), "mode": cty.StringVal("0600"), "owner": cty.StringVal("root"),
	}}, "salt", false)
	r := &Resource{
		Address: "state_thing[/etc/x]", Type: "state_thing", Name: "/etc/x", Action: "create", Kind: resources.Update,
		Desired: desired("path", "/etc/x", "content", "one\nthree\n", "mode", "0640"),
		Current: cur, Fingerprint: cur.Fingerprint(),
		Changes: []Change{{Property: "content"}, {Property: "mode"}},
	}
	s := (&Plan{}).Show(schema, r)
	if len(s.Changes) != 2 {
		t.Fatalf("changes %+v", s.Changes)
	}
	content, mode := s.Changes[0], s.Changes[1]
	if !strings.Contains(content.Diff, "-two\n+three\n") || content.DiffNote != "" || !strings.HasPrefix(content.After, "(10 bytes, sha256:") {
		t.Errorf("content change %+v", content)
	}
	if mode.Before != `"0600"` || mode.After != `"0640"` || mode.Default {
		t.Errorf("mode change %+v", mode)
	}
	if len(s.Unmanaged) != 1 || s.Unmanaged[0].Property != "owner" || s.Unmanaged[0].Value != `"root"` {
		t.Errorf("unmanaged %+v", s.Unmanaged)
	}

	r.Desired["content"] = Value{Value: cty.StringVal("one\nrm -rf /\n")}
	if d := (&Plan{}).Show(schema, r).Changes[0].Diff; !strings.Contains(d, "+rm -rf /") {
		t.Errorf("an edited desired value is not what is shown: %q", d)
	}

	// Creating: a default comes from this build's schema.
	r.Kind, r.Current = resources.Create, &Current{Exists: false}
	r.Fingerprint = r.Current.Fingerprint()
	delete(r.Desired, "mode")
	s = (&Plan{}).Show(schema, r)
	if m := s.Changes[1]; m.After != `"0644"` || !m.Default || m.Before != "" {
		t.Errorf("default %+v", m)
	}
	if c := s.Changes[0]; !strings.HasPrefix(c.Diff, "@@ -0,0 +1,2 @@\n+one\n") {
		t.Errorf("create diff %q", c.Diff)
	}
}

// A guard is shown as its spec says it runs, whatever its result records.
func TestShowGuardsFromSpecs(t *testing.T) {
	exit0 := 0
	spec := &guard.Spec{Kind: guard.NotIf, Form: guard.Script, Source: "test -f /etc/done", Interpreter: "default",
		Values: map[string]guard.Value{
			"command":     {Value: cty.StringVal("test -f /etc/done")},
			"cwd":         {Value: cty.StringVal("/opt")},
			"environment": {Value: cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")})},
		}}
	r := &Resource{
		Address: "run_thing[x]", Type: "run_thing", Name: "x", Action: "run", Kind: resources.Skip,
		GuardSpecs: []*guard.Spec{spec},
		Guards:     []GuardResult{{ExitCode: &exit0, Passed: true, Decided: true, Output: "ok"}},
		Reason:     "not_if `true` is true", // what an editor would write; never shown
	}
	p := &Plan{Resources: []*Resource{r}}
	s := p.Show(showRegistry(), r)
	if s.Why != "not_if `test -f /etc/done` is true" {
		t.Errorf("why %q", s.Why)
	}
	g := s.Guards[0]
	if g.Command != "test -f /etc/done" || g.Cwd != "/opt" || g.Environment["A"] != "1" || g.Output != "ok" || !g.Decided {
		t.Errorf("guard %+v", g)
	}
	// Every parameter it runs with, with its value; not the script again.
	if len(g.Params) != 2 || g.Params[0] != (ShownValue{"cwd", "/opt"}) || g.Params[1] != (ShownValue{"environment", "A=1"}) {
		t.Errorf("guard parameters %+v", g.Params)
	}
	r.Sensitive = true
	g = p.Show(showRegistry(), r).Guards[0]
	if g.Command != Sensitive || g.Cwd != Sensitive || g.Environment["A"] != Sensitive || g.Output != "" || g.Verdict != "not_if (sensitive) is true" {
		t.Errorf("sensitive guard %+v", g)
	}
}

// The planner records as Reason what Why composes again from the plan.
func TestWhyIsTheRecordedReason(t *testing.T) {
	pl := samplePlan(t)
	for _, r := range pl.Resources {
		if got := pl.Why(r); got != r.Reason {
			t.Errorf("%s: Why %q, recorded %q", r.Address, got, r.Reason)
		}
	}
}

// A live value not every user may read is never in the plan, nor shown:
// the reason is, and the planned content, which is not private.
func TestShowPrivateLiveContent(t *testing.T) {
	reg := showRegistry()
	st, _ := reg.Lookup("state_thing")
	cur := StoreCurrent(st.Schema(), &resources.State{Exists: true,
		Values:  map[string]cty.Value{"content": cty.StringVal("pin=1234\n")},
		Private: map[string]string{"content": "not every user may read it"},
	}, "salt", false)
	r := &Resource{
		Address: "state_thing[/root/pin]", Type: "state_thing", Name: "/root/pin", Action: "create", Kind: resources.Update,
		Desired: desired("path", "/root/pin", "content", "pin=5678\n"),
		Current: cur, Fingerprint: cur.Fingerprint(),
		Changes: []Change{{Property: "content"}},
	}
	p := &Plan{Salt: "salt", Resources: []*Resource{r}}
	c := p.Show(reg, r).Changes[0]
	if c.Before != "(9 bytes, private)" || c.DiffNote != "not every user may read it; the diff shows the planned content in full" || c.Diff != "@@ -0,0 +1 @@\n+pin=5678\n" {
		t.Errorf("change %+v", c)
	}
	body, err := p.canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "1234") {
		t.Errorf("the plan holds the private content:\n%s", body)
	}
}

// TestShowLazyTemplateFileSaysWhatItRenders: a template file rendered at
// apply is carried in the plan; the plan shows its size and sha256, so a
// reviewer can tell it is the file in the repository.
func TestShowLazyTemplateFileSaysWhatItRenders(t *testing.T) {
	src := "listen ${port}\n"
	p := &Plan{Resources: []*Resource{{
		Address: "state_thing[/etc/app.conf]", Type: "state_thing", Name: "/etc/app.conf", Action: "create", Kind: resources.Create,
		Lazy: map[string]*LazyExpr{"content": {Source: src, Template: lazy.TemplateFile, Range: hcl.Range{Filename: "app.conf.tpl", Start: hcl.InitialPos, End: hcl.InitialPos}}},
	}}}
	s := p.Show(showRegistry(), p.Resources[0])
	sum := sha256.Sum256([]byte(src))
	if len(s.Lazy) != 1 || !strings.Contains(s.Lazy[0].Expression, "the template app.conf.tpl") || !strings.Contains(s.Lazy[0].Expression, hex.EncodeToString(sum[:])) {
		t.Errorf("shown %+v", s.Lazy)
	}
}
