package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// webEnv runs toque on examples/web-config with WEB_CONFIG_ROOT in a
// scratch directory, and extra environment variables per call.
type webEnv struct {
	*env
	example string
}

func newWebEnv(t *testing.T) *webEnv {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "examples", "web-config"))
	if err != nil {
		t.Fatal(err)
	}
	return &webEnv{env: newEnv(t), example: abs}
}

func (w *webEnv) toque(vars []string, args ...string) result {
	w.t.Helper()
	return w.env.toque(append([]string{"WEB_CONFIG_ROOT=" + w.root}, vars...), args...)
}

func (w *webEnv) must(want int, vars []string, args ...string) result {
	w.t.Helper()
	return w.env.mustToque(want, append([]string{"WEB_CONFIG_ROOT=" + w.root}, vars...), args...)
}

// planApply plans the example with vars, checks the plan's exit status
// (-detailed-exitcode) and applies it when it has changes.
func (w *webEnv) planApply(vars []string, wantPlan int) string {
	w.t.Helper()
	out := filepath.Join(w.dir, "plan.out")
	r := w.must(wantPlan, vars, "-chdir="+w.example, "plan", "-detailed-exitcode", "-out="+out)
	if wantPlan == 2 {
		w.must(0, nil, "apply", out)
	}
	return r.stdout
}

func (w *webEnv) reloads() int {
	b, err := os.ReadFile(filepath.Join(w.root, "reload.log"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.Count(string(b), "reload\n")
}

func TestE2EWebConfigExample(t *testing.T) {
	w := newWebEnv(t)

	// First apply: everything is created, the reload runs once although
	// both templates notify it.
	out := w.planApply(nil, 2)
	contains(t, "first plan", out,
		`# execute[reload-web] will run: notified by template[web.conf] and template[upstreams.conf] (delayed)`,
		"+listen 8080;",
		"Plan: 4 to create, 0 to update, 0 to delete, 1 to run, 0 skipped, 1 unchanged.")
	if strings.Index(out, "execute[reload-web] will run") < strings.Index(out, "file[motd]") {
		t.Errorf("the delayed reload should be listed last:\n%s", out)
	}
	if n := w.reloads(); n != 1 {
		t.Fatalf("first apply reloaded %d times, want 1", n)
	}
	if got := w.read("etc/web.conf"); !strings.Contains(got, "listen 8080;\nworker_processes 4;\n") {
		t.Errorf("web.conf:\n%s", got)
	}
	if got := w.read("etc/upstreams.conf"); !strings.HasSuffix(got, "server app-1:9000;\nserver app-2:9000;\n") {
		t.Errorf("upstreams.conf:\n%s", got)
	}

	// Second plan: nothing to do, and the reload target says why.
	out = w.planApply(nil, 0)
	contains(t, "second plan", out, "No changes.", "# execute[reload-web]: action is nothing: runs only when notified; nothing notifies it in this plan")

	// One attribute changes: one file diff, one reload.
	port := []string{"WEB_PORT=9090"}
	out = w.planApply(port, 2)
	contains(t, "port plan", out, "-listen 8080;", "+listen 9090;",
		"# execute[reload-web] will run: notified by template[web.conf] (delayed)",
		"Plan: 0 to create, 1 to update, 0 to delete, 1 to run, 0 skipped, 4 unchanged.")
	if strings.Count(out, "\n  ~ ") != 1 || strings.Contains(out, "upstreams.conf] will") {
		t.Errorf("want exactly one file diff:\n%s", out)
	}
	if n := w.reloads(); n != 2 {
		t.Fatalf("after the port change: %d reloads, want 2", n)
	}
	w.planApply(port, 0)

	// Both templates change in one run: still one reload.
	both := []string{"WEB_PORT=8081", "WEB_UPSTREAMS=app-3:9000"}
	out = w.planApply(both, 2)
	contains(t, "both plan", out, "notified by template[web.conf] and template[upstreams.conf] (delayed)", "2 to update")
	if n := w.reloads(); n != 3 {
		t.Fatalf("after both templates changed: %d reloads, want 3", n)
	}

	// The report lists the notified run; show -json carries the edges.
	var rep struct {
		Notified []struct{ Address, Outcome, Reason string } `json:"notified"`
	}
	if err := json.Unmarshal([]byte(readState(t, w.env, "reports/last.json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Notified) != 1 || rep.Notified[0].Address != "execute[reload-web]" || rep.Notified[0].Outcome != "changed" {
		t.Errorf("report notified: %+v", rep.Notified)
	}
	planFile := filepath.Join(w.dir, "p2")
	w.must(2, []string{"WEB_PORT=1"}, "-chdir="+w.example, "plan", "-detailed-exitcode", "-out="+planFile)
	js := w.must(0, nil, "show", "-json", planFile).stdout
	var view struct {
		Resources []struct {
			Address       string
			Notifications []struct{ Target, Action, Timing string }
			NotifiedBy    []struct{ Notifier string } `json:"notified_by"`
		}
		NotifiedRuns []struct {
			Address   string
			Notifiers []string
			Runs      string
			Kind      string
		} `json:"notified_runs"`
	}
	if err := json.Unmarshal([]byte(js), &view); err != nil {
		t.Fatal(err)
	}
	edges := 0
	for _, r := range view.Resources {
		for _, n := range r.Notifications {
			if n.Target == "execute[reload-web]" && n.Action == "run" && n.Timing == "delayed" {
				edges++
			}
		}
		if r.Address == "execute[reload-web]" && len(r.NotifiedBy) != 2 {
			t.Errorf("notified_by: %+v", r.NotifiedBy)
		}
	}
	if edges != 2 || len(view.NotifiedRuns) != 1 || view.NotifiedRuns[0].Runs != "end" || view.NotifiedRuns[0].Kind != "run" {
		t.Errorf("edges %d, notified runs %+v", edges, view.NotifiedRuns)
	}

	// toque graph works without the host.
	dot := w.must(0, nil, "-chdir="+w.example, "graph").stdout
	contains(t, "graph", dot, "digraph toque {",
		`"template[web.conf]" -> "execute[reload-web]" [label = "run (delayed)"];`,
		`"execute[reload-web]" [label = "6. execute[reload-web]", style = "dashed"`)
}

func readState(t *testing.T, e *env, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.state, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A notifier already in its planned state (an earlier run did the work)
// fires nothing, and the report says so.
func TestE2ENotifierAlreadyDoneFiresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("a.hcl", `
template "ROOT/app.conf" {
  content_template = "v = ${v}\n"
  variables        = { v = 2 }
  notifies "run" {
    resource = "execute[reload]"
    timing   = "immediately"
  }
}
execute "reload" {
  command = "echo reload >> ROOT/reload.log"
  action  = "nothing"
}
`)
	planFile := filepath.Join(e.dir, "..", "plan.out")
	out := e.must(0, "plan", "-out="+planFile).stdout
	contains(t, "plan", out, "# execute[reload] will run: notified by template["+e.root+"/app.conf] (immediately)")
	e.write("app.conf", "v = 2\n", 0o644)
	e.must(0, "apply", planFile)
	if _, err := os.Stat(filepath.Join(e.root, "reload.log")); !os.IsNotExist(err) {
		t.Fatalf("the reload ran although its notifier did not change (%v)", err)
	}
	rep := readState(t, e, "reports/last.json")
	contains(t, "report", rep, `"outcome": "not notified"`, "did not change (already done)")
}

// Delayed notifications run even when a later resource fails; the failure
// is reported after them.
func TestE2EDelayedNotificationAfterFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("a.hcl", `
file "ROOT/app.conf" {
  content = "x\n"
  notifies "run" {
    resource = "execute[reload]"
  }
}
execute "boom" {
  command = "exit 3"
}
execute "reload" {
  command = "echo reload >> ROOT/reload.log"
  action  = "nothing"
}
`)
	r := e.must(1, "apply", "-auto-approve")
	if got := e.read("reload.log"); got != "reload\n" {
		t.Fatalf("reload.log = %q", got)
	}
	ran := strings.Index(r.stdout, "execute[reload]: Run complete")
	failed := strings.Index(r.stdout, "Apply failed!")
	if ran < 0 || failed < 0 || ran > failed {
		t.Errorf("the delayed reload should run, then the failure be reported:\n%s", r)
	}
}

func TestE2ENotificationBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		files map[string]string
		want  string // FILE:LINE in stderr
		what  string // summary in stderr
	}{
		{"before cycle", map[string]string{"bad.hcl": `
execute "a" {
  command = "true"
  notifies "run" {
    resource = "execute[b]"
    timing   = "before"
  }
}
execute "b" {
  command = "true"
  notifies "run" {
    resource = "execute[a]"
    timing   = "before"
  }
}
`}, "bad.hcl:11", "Notification cycle"},
		{"notify itself", map[string]string{"bad.hcl": "file \"ROOT/x\" {\n  content = \"x\"\n  notifies \"create\" {\n    resource = \"file[ROOT/x]\"\n  }\n}\n"}, "bad.hcl:3", "Resource notifies itself"},
		{"missing target", map[string]string{"bad.hcl": "file \"ROOT/x\" {\n  content = \"x\"\n  notifies \"run\" {\n    resource = \"execute[nope]\"\n  }\n}\n"}, "bad.hcl:4", "Notification to a resource that does not exist"},
		{"unknown action", map[string]string{"bad.hcl": "file \"ROOT/x\" {\n  content = \"x\"\n  notifies \"restart\" {\n    resource = \"execute[r]\"\n  }\n}\nexecute \"r\" {\n  action = \"nothing\"\n}\n"}, "bad.hcl:3", "Unsupported notification action"},
		{"missing template variable", map[string]string{
			"bad.hcl": "template \"ROOT/x\" {\n  source    = \"x.tpl\"\n  variables = { port = 1 }\n}\n",
			"x.tpl":   "# x\nlisten ${prot};\n",
		}, "x.tpl:2", "Unknown variable"},
		{"unreadable template", map[string]string{"bad.hcl": "template \"ROOT/x\" {\n  source = \"missing.tpl\"\n}\n"}, "bad.hcl:2", "Cannot read the template"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			for name, src := range c.files {
				e.recipe(name, src)
			}
			before := e.snapshot()
			for _, cmd := range [][]string{{"plan"}, {"validate"}, {"apply", "-auto-approve"}} {
				r := e.must(1, cmd...)
				contains(t, cmd[0], r.stderr, c.want, c.what)
				if strings.Contains(r.stderr, "panic") {
					t.Errorf("%s panicked:\n%s", cmd[0], r)
				}
			}
			sameSnapshot(t, before, e.snapshot())
		})
	}
}
