package planner_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// cannotRun gives i a script guard whose working directory is missing.
func cannotRun(i *eval.Instance) *eval.Instance {
	i.Guards = []*guard.Spec{{
		Kind: guard.OnlyIf, Form: guard.Script, Source: "true", Interpreter: guard.Default,
		Values: map[string]guard.Value{"command": {Value: cty.StringVal("true")}, "cwd": {Value: cty.StringVal("/no/such/dir")}},
	}}
	return i
}

func TestPlanInstancesKinds(t *testing.T) {
	f := plantest.NewFakeType()
	f.Set("/etc/same", map[string]cty.Value{"content": plantest.Str("same\n"), "mode": plantest.Str("0644")})
	f.Set("/etc/old", map[string]cty.Value{"content": plantest.Str("<h1>old</h1>\n"), "mode": plantest.Str("0600")})
	f.Set("/etc/gone", map[string]cty.Value{"content": plantest.Str("x"), "mode": plantest.Str("0644")})
	insts := []*eval.Instance{
		f.Inst("/etc/new", "create", 1, map[string]cty.Value{"content": plantest.Str("hello\n")}),
		f.Inst("/etc/same", "create", 5, map[string]cty.Value{"content": plantest.Str("same\n"), "mode": plantest.Str("644")}),
		f.Inst("/etc/old", "create", 9, map[string]cty.Value{"content": plantest.Str("<h1>web-01</h1>\n")}),
		f.Inst("/etc/gone", "delete", 13, nil),
		f.Inst("/etc/cmd", "run", 17, nil),
		f.Inst("/etc/later", "nothing", 21, map[string]cty.Value{"content": plantest.Str("x")}),
	}
	pl, diags := plantest.FixedPlanner(f, 4).PlanInstances(context.Background(), insts)
	if diags.HasErrors() {
		t.Fatalf("diagnostics: %v", diags)
	}
	want := []struct {
		addr string
		kind resources.Kind
	}{
		{"fake_file[/etc/new]", resources.Create},
		{"fake_file[/etc/same]", resources.NoOp},
		{"fake_file[/etc/old]", resources.Update},
		{"fake_file[/etc/gone]", resources.Delete},
		{"fake_file[/etc/cmd]", resources.Run},
		{"fake_file[/etc/later]", resources.NoOp},
	}
	if len(pl.Resources) != len(want) {
		t.Fatalf("got %d resources, want %d", len(pl.Resources), len(want))
	}
	for i, w := range want {
		r := pl.Resources[i]
		if r.Address != w.addr || r.Kind != w.kind {
			t.Errorf("resource %d: got %s %s, want %s %s", i, r.Address, r.Kind, w.addr, w.kind)
		}
	}
	if pl.Errored || pl.Host.Hostname != "web-01" || pl.FormatVersion != plan.FormatVersion || pl.ToqueVersion != "0.1.0-test" {
		t.Errorf("plan header: %+v", pl)
	}
	if pl.CreatedAt.Location() != time.UTC || pl.CreatedAt.Hour() != 2 {
		t.Errorf("created_at not UTC: %v", pl.CreatedAt)
	}
	if len(pl.Salt) != 32 {
		t.Errorf("salt %q is not 16 hex bytes", pl.Salt)
	}

	reg := resources.NewRegistry(f)
	t.Run("create", func(t *testing.T) {
		r := pl.Resources[0]
		sh := pl.Show(reg, r)
		if r.Source.Filename != "recipes/default.hcl" || r.Source.Line != 1 {
			t.Errorf("source %+v", r.Source)
		}
		if r.Current == nil || r.Current.Exists || r.Fingerprint == "" {
			t.Errorf("current %+v fingerprint %q", r.Current, r.Fingerprint)
		}
		if len(r.Changes) != 2 || r.Changes[0].Property != "content" || r.Changes[1].Property != "mode" || !sh.Changes[1].Default {
			t.Fatalf("changes %+v", sh.Changes)
		}
		if sh.Changes[1].After != `"0644"` {
			t.Errorf("default mode shown as %q", sh.Changes[1].After)
		}
		c := sh.Changes[0]
		if !strings.Contains(c.After, "6 bytes") || strings.Contains(c.After, "hello") {
			t.Errorf("content after should be a size+digest summary: %q", c.After)
		}
		if !strings.Contains(c.Diff, "+hello") {
			t.Errorf("create diff %q", c.Diff)
		}
		if got := r.Desired["path"].Value; !got.RawEquals(plantest.Str("/etc/new")) {
			t.Errorf("desired path %#v", got)
		}
		if len(sh.Unmanaged) != 0 {
			t.Errorf("a created resource has no unmanaged properties: %+v", sh.Unmanaged)
		}
		if strings.Join(r.Groups, ",") != "content,mode" {
			t.Errorf("groups %v", r.Groups)
		}
	})
	t.Run("update", func(t *testing.T) {
		r := pl.Resources[2]
		sh := pl.Show(reg, r)
		if len(r.Changes) != 1 || r.Changes[0].Property != "content" {
			t.Fatalf("changes %+v", r.Changes)
		}
		d := sh.Changes[0].Diff
		if !strings.Contains(d, "-<h1>old</h1>") || !strings.Contains(d, "+<h1>web-01</h1>") || strings.Contains(d, "---") {
			t.Errorf("diff %q", d)
		}
		if len(sh.Unmanaged) != 1 || sh.Unmanaged[0].Property != "mode" || sh.Unmanaged[0].Value != `"0600"` {
			t.Errorf("unmanaged %+v", sh.Unmanaged)
		}
		if r.Fingerprint != r.Current.Fingerprint() {
			t.Error("fingerprint is not the current reading's")
		}
	})
	t.Run("nothing is not loaded", func(t *testing.T) {
		r := pl.Resources[5]
		if r.Reason != plan.ReasonNotNotified || pl.Why(r) != r.Reason || r.Current != nil {
			t.Errorf("got %+v", r)
		}
		if int(f.Loads.Load()) != 5 {
			t.Errorf("loaded %d times, want 5 (not the action-nothing one)", f.Loads.Load())
		}
	})
	if c := pl.Counts(); c != (plan.Counts{Create: 1, Update: 1, Delete: 1, Run: 1, NoOp: 2}) {
		t.Errorf("counts %+v", c)
	}
}

func TestPlanInstancesErrors(t *testing.T) {
	f := plantest.NewFakeType()
	f.LoadErr["/etc/unreadable"] = errors.New("permission denied")
	f.PlanErr["/etc/unplannable"] = errors.New("cannot decide")
	f.Panics["/etc/boom"] = true
	insts := []*eval.Instance{
		f.Inst("/etc/ok", "create", 1, map[string]cty.Value{"content": plantest.Str("x")}),
		f.Inst("/etc/unreadable", "create", 4, map[string]cty.Value{"content": plantest.Str("x")}),
		f.Inst("/etc/unplannable", "create", 7, map[string]cty.Value{"content": plantest.Str("x")}),
		f.Inst("/etc/boom", "create", 10, map[string]cty.Value{"content": plantest.Str("x")}),
		cannotRun(f.Inst("/etc/guarded", "create", 13, map[string]cty.Value{"content": plantest.Str("x")})),
	}
	pl, diags := plantest.FixedPlanner(f, 2).PlanInstances(context.Background(), insts)
	wantSummaries := []string{
		"Cannot read fake_file[/etc/unreadable]",
		"Cannot plan fake_file[/etc/unplannable]",
		"Resource type failed while planning fake_file[/etc/boom]",
		"Guard cannot run",
	}
	if len(diags) != len(wantSummaries) {
		t.Fatalf("got %d diagnostics, want %d: %v", len(diags), len(wantSummaries), diags)
	}
	lines := []int{4, 7, 10, 13}
	for i, d := range diags {
		if d.Summary != wantSummaries[i] {
			t.Errorf("diagnostic %d: %q, want %q", i, d.Summary, wantSummaries[i])
		}
		if d.Subject == nil || d.Subject.Start.Line != lines[i] {
			t.Errorf("diagnostic %d subject %v, want line %d", i, d.Subject, lines[i])
		}
	}
	if !strings.Contains(diags[0].Detail, "permission denied") {
		t.Errorf("detail %q", diags[0].Detail)
	}
	if pl == nil || !pl.Errored || len(pl.Errors) != 4 {
		t.Fatalf("plan not marked errored: %+v", pl)
	}
	if len(pl.Resources) != 1 || pl.Resources[0].Address != "fake_file[/etc/ok]" {
		t.Errorf("partial plan resources: %v", pl.Resources)
	}
	if err := plan.Applicable(pl); !errors.Is(err, plan.ErrErrored) || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Applicable: %v", err)
	}
}

func TestPlanInstancesOrderAndParallelism(t *testing.T) {
	for _, par := range []int{1, 8} {
		t.Run(fmt.Sprintf("parallelism %d", par), func(t *testing.T) {
			f := plantest.NewFakeType()
			var insts []*eval.Instance
			var want []string
			for i := range 16 {
				name := fmt.Sprintf("/srv/f%02d", i)
				// Later resources finish first.
				f.Delay[name] = time.Duration(16-i) * time.Millisecond
				insts = append(insts, f.Inst(name, "create", i+1, map[string]cty.Value{"content": plantest.Str(name)}))
				want = append(want, "fake_file["+name+"]")
			}
			pl, diags := plantest.FixedPlanner(f, par).PlanInstances(context.Background(), insts)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			var got []string
			for _, r := range pl.Resources {
				got = append(got, r.Address)
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("order:\n got %v\nwant %v", got, want)
			}
			m := int(f.MaxRunning.Load())
			if m > par {
				t.Errorf("%d loads ran at once, parallelism is %d", m, par)
			}
			if par > 1 && m < 2 {
				t.Errorf("loads never overlapped with parallelism %d", par)
			}
		})
	}
}

func TestPlanInstancesCancelled(t *testing.T) {
	f := plantest.NewFakeType()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.Delay["/a"] = time.Second
	pl, diags := plantest.FixedPlanner(f, 1).PlanInstances(ctx, []*eval.Instance{
		f.Inst("/a", "create", 1, nil), f.Inst("/b", "create", 2, nil), f.Inst("/c", "create", 3, nil),
	})
	if !diags.HasErrors() || !pl.Errored {
		t.Fatalf("a cancelled plan must be errored: %v", diags)
	}
}

func TestPlanInstancesSensitive(t *testing.T) {
	f := plantest.NewFakeType()
	f.Set("/etc/secret", map[string]cty.Value{"content": plantest.Str("old-password\n"), "mode": plantest.Str("0600"), "secret": plantest.Str("hunter1")})
	f.Set("/etc/key", map[string]cty.Value{"content": plantest.Str("public\n"), "secret": plantest.Str("hunter1")})
	sens := f.Inst("/etc/secret", "create", 1, map[string]cty.Value{"content": plantest.Str("new-password\n")})
	sens.Sensitive = true
	insts := []*eval.Instance{
		sens,
		f.Inst("/etc/key", "create", 5, map[string]cty.Value{"content": plantest.Str("public\n"), "secret": plantest.Str("hunter2")}),
	}
	pl, diags := plantest.FixedPlanner(f, 2).PlanInstances(context.Background(), insts)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	reg := resources.NewRegistry(f)
	rendered, err := views.JSONView(pl, views.JSONOptions{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	views.RenderText(&text, pl, views.RenderOptions{Registry: reg})
	for _, secret := range []string{"password", "hunter", "0600"} {
		for _, r := range pl.Resources {
			sh := pl.Show(reg, r)
			for _, c := range sh.Changes {
				if strings.Contains(c.Before+c.After+c.Diff+c.DiffNote, secret) {
					t.Errorf("%s: change %+v shows %q", r.Address, c, secret)
				}
			}
			for _, cv := range sh.Current {
				if strings.Contains(cv.Value, secret) {
					t.Errorf("%s: current %s shows %q", r.Address, cv.Property, secret)
				}
			}
			for k, sv := range r.Current.Values {
				if sv.Value != nil && strings.Contains(sv.Value.GoString(), secret) {
					t.Errorf("%s: current %s is kept in full in the plan", r.Address, k)
				}
			}
			for _, u := range sh.Unmanaged {
				if strings.Contains(u.Value, secret) {
					t.Errorf("%s: unmanaged %+v shows %q", r.Address, u, secret)
				}
			}
		}
		if strings.Contains(string(rendered), secret) {
			t.Errorf("JSON view shows %q:\n%s", secret, rendered)
		}
		if strings.Contains(text.String(), secret) {
			t.Errorf("text shows %q:\n%s", secret, text.String())
		}
	}
	r := pl.Resources[0]
	sh := pl.Show(reg, r)
	if len(sh.Changes) != 1 || sh.Changes[0].After != plan.Sensitive || sh.Changes[0].Before != plan.Sensitive || sh.Changes[0].DiffNote == "" || sh.Changes[0].Diff != "" {
		t.Errorf("sensitive resource change: %+v", sh.Changes)
	}
	if len(sh.Unmanaged) != 2 {
		t.Errorf("unmanaged of a sensitive resource: %+v", sh.Unmanaged)
	}
	// The plan file still holds the desired value in full: apply needs it.
	if got := r.Desired["content"].Value; !got.RawEquals(plantest.Str("new-password\n")) {
		t.Errorf("desired content %#v", got)
	}
	k := pl.Resources[1]
	if kc := pl.Show(reg, k).Changes; len(kc) != 1 || kc[0].Property != "secret" || !kc[0].Sensitive || kc[0].After != plan.Sensitive {
		t.Errorf("sensitive property change: %+v", kc)
	}
	if strings.Join(k.SensitiveProperties, ",") != "secret" {
		t.Errorf("sensitive properties %v", k.SensitiveProperties)
	}
	if d := k.Current.Values["secret"].Digest; !strings.HasPrefix(d, "hmac-sha256:") {
		t.Errorf("sensitive live value kept as %q", d)
	}
}

func TestPlanInstancesContentDiffNotes(t *testing.T) {
	big := strings.Repeat("a line of text\n", (plan.MaxDiffSize/15)+10)
	cases := []struct {
		name, before, after string
		note                string
		diff                string
	}{
		{"text", "one\ntwo\n", "one\nthree\n", "", "-two\n+three\n"},
		{"NUL byte", "one\n", "o\x00ne\n", "binary content: no diff shown", ""},
		{"invalid UTF-8 before", "\xff\xfe", "text\n", "the live content (2 bytes, sha256:b3d510ef0427…) is binary: the diff shows the planned content in full", "@@ -0,0 +1 @@\n+text\n"},
		{"too large", "small\n", big, "content larger than 1 MiB: no diff shown", ""},
		{"large binary live content", strings.Repeat("\x00", 2000), "text\n", "the live content (2.0 KiB, sha256:", "+text\n"},
		{"live content over the limit", big, "text\n", "the live content (1.0 MiB, sha256:", "+text\n"},
		{"no newline at end", "a", "b", "", `\ No newline at end of file`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := plantest.NewFakeType()
			f.Set("/f", map[string]cty.Value{"content": plantest.Str(tc.before)})
			pl, diags := plantest.FixedPlanner(f, 1).PlanInstances(context.Background(), []*eval.Instance{
				f.Inst("/f", "create", 1, map[string]cty.Value{"content": plantest.Str(tc.after)}),
			})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			c := pl.Show(resources.NewRegistry(f), pl.Resources[0]).Changes[0]
			if !strings.HasPrefix(c.DiffNote, tc.note) || (tc.note == "" && c.DiffNote != "") {
				t.Errorf("note %q, want %q", c.DiffNote, tc.note)
			}
			if tc.diff == "" && c.Diff != "" {
				t.Errorf("unexpected diff %q", c.Diff)
			}
			if !strings.Contains(c.Diff, tc.diff) {
				t.Errorf("diff %q lacks %q", c.Diff, tc.diff)
			}
			if len(c.After) > 200 || len(c.Before) > 200 {
				t.Errorf("content display not summarised: %d / %d bytes", len(c.Before), len(c.After))
			}
		})
	}
}

func TestPlanInstancesGuards(t *testing.T) {
	f := plantest.NewFakeType()
	exit1 := 1
	g := &plantest.FakeGuards{
		Results: map[string][]plantest.FakeGuard{
			"/skip": {{Kind: "only_if", Form: "script", Command: "test -d /opt", Interpreter: "sh", ExitCode: &exit1, Passed: false, Decided: true}},
			"/run":  {{Kind: "not_if", Form: "expression", Command: "node.web.enabled", Passed: false}},
		},
		Skip: map[string]bool{"/skip": true},
		Fail: map[string]bool{"/broken": true},
	}
	p := plantest.FixedPlanner(f, 2)
	p.Guards = g.Evaluate
	nothing := g.Guard(f.Inst("/nothing", "nothing", 10, nil))
	pl, diags := p.PlanInstances(context.Background(), []*eval.Instance{
		g.Guard(f.Inst("/skip", "create", 1, map[string]cty.Value{"content": plantest.Str("x")})),
		g.Guard(f.Inst("/run", "create", 4, map[string]cty.Value{"content": plantest.Str("x")})),
		g.Guard(f.Inst("/broken", "create", 7, map[string]cty.Value{"content": plantest.Str("x")})),
		nothing,
	})
	if len(diags) != 1 || diags[0].Summary != "Guard cannot run" || !pl.Errored {
		t.Fatalf("diagnostics %v", diags)
	}
	if len(pl.Resources) != 3 {
		t.Fatalf("resources %d", len(pl.Resources))
	}
	skip := pl.Resources[0]
	if skip.Kind != resources.Skip || skip.Reason != "only_if `test -d /opt` failed" || skip.Current != nil || len(skip.Guards) != 1 {
		t.Errorf("skipped: %+v", skip)
	}
	run := pl.Resources[1]
	if run.Kind != resources.Create || len(run.Guards) != 1 {
		t.Errorf("guarded but not skipped: %+v", run)
	}
	if n := pl.Resources[2]; n.Kind != resources.NoOp || n.Guards != nil {
		t.Errorf("action nothing is not guarded: %+v", n)
	}
	if f.Loads.Load() != 1 {
		t.Errorf("%d loads, want 1 (skipped and failed guards are not loaded)", f.Loads.Load())
	}
}

var updateFixture = flag.Bool("update", false, "rewrite plan/testdata/sample.plan")

// TestSamplePlanFixture keeps plan/testdata/sample.plan, which the plan
// file tests read, equal to what the planner makes today.
func TestSamplePlanFixture(t *testing.T) {
	path := filepath.Join("..", "testdata", "sample.plan")
	pl := plantest.SamplePlan(t)
	if *updateFixture {
		if err := plan.Write(path, pl); err != nil {
			t.Fatal(err)
		}
		// plan.Write makes plans private (0600); the fixture is read by
		// the tests as any user (make test-nonroot), as git checks it out.
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := plan.Read(path, builtin.Registry())
	if err != nil {
		t.Fatalf("%v (run go test ./plan/planner -run SamplePlanFixture -update)", err)
	}
	if got.Digest() != pl.Digest() {
		t.Errorf("plan/testdata/sample.plan is not what the planner makes today; review the change and run go test ./plan/planner -run SamplePlanFixture -update")
	}
}
