package systemd_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/command"
)

// These tests run toque's commands in-process (command.Run, as main calls
// it) in the systemd container that TestServicesInContainer boots (see
// box_test.go): plan, then apply, of recipes whose services are real
// units of the container's systemd.

func insideBox(t *testing.T) {
	t.Helper()
	if os.Getenv("TOQUE_TEST_IN_SYSTEMD_BOX") == "" {
		t.Skip("runs in the systemd container TestServicesInContainer boots")
	}
}

// scenario is a recipe directory and toque's state, both the test's.
type scenario struct {
	t                *testing.T
	dir, state, lock string
}

func newScenario(t *testing.T, recipe string) *scenario {
	t.Helper()
	base := t.TempDir()
	s := &scenario{t: t, dir: filepath.Join(base, "recipes"), state: filepath.Join(base, "state"), lock: filepath.Join(base, "apply.lock")}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.recipe(recipe)
	return s
}

func (s *scenario) recipe(src string) {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, "main.hcl"), []byte(src), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return "exit " + string(rune('0'+r.code)) + "\n--- stdout\n" + r.stdout + "--- stderr\n" + r.stderr
}

// toque runs toque in-process on the scenario and fails the test unless
// it exits with want.
func (s *scenario) toque(want int, args ...string) result {
	s.t.Helper()
	vars := map[string]string{"TOQUE_STATE_DIR": s.state, "TOQUE_HOST_LOCK": s.lock, "NO_COLOR": "1"}
	lookup := func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
	var out, errb bytes.Buffer
	code := command.Run(s.t.Context(), make(chan struct{}), append([]string{"-chdir=" + s.dir}, args...), command.Streams{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Env: command.Env{LookupEnv: lookup},
	})
	r := result{code, out.String(), errb.String()}
	if code != want {
		s.t.Fatalf("toque %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

// notified is the report's notified runs of the last apply: address,
// outcome and reason.
func (s *scenario) notified() []map[string]any {
	s.t.Helper()
	reports, _ := filepath.Glob(filepath.Join(s.state, "reports", "*.json"))
	if len(reports) == 0 {
		s.t.Fatal("no apply report")
	}
	b, err := os.ReadFile(reports[len(reports)-1])
	if err != nil {
		s.t.Fatal(err)
	}
	var rep struct {
		Notified []map[string]any `json:"notified"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		s.t.Fatal(err)
	}
	return rep.Notified
}

func sh(t *testing.T, script string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// unit writes a unit whose ExecReload appends to /run/NAME.reloads, and
// has systemd read it (not started); it is removed when the test ends.
func unit(t *testing.T, name string) (reloads string) {
	t.Helper()
	reloads = "/run/" + name + ".reloads"
	sh(t, `printf '[Service]\nExecStart=/bin/sleep 1000\nExecReload=/bin/sh -c "echo reloaded >> `+reloads+`"\n' > /etc/systemd/system/`+name+`.service && systemctl daemon-reload`)
	t.Cleanup(func() {
		exec.Command("sh", "-c", "systemctl stop "+name+"; rm -f /etc/systemd/system/"+name+".service "+reloads+"; systemctl daemon-reload").Run()
	})
	return reloads
}

// The usual handler: a configuration file notifies a reload of its
// service, which notifies in turn. With the service stopped, the plan
// says the reload has nothing to do, apply reloads nothing and counts
// nothing as done, and what the service notifies does not run (Chef's
// action_reload converges nothing for a service that is not running).
// With the service running, the reload runs and notifies.
func TestInBoxNotifiedReloadOfAStoppedService(t *testing.T) {
	insideBox(t)
	reloads := unit(t, "toque-n")
	conf, after := "/etc/toque-n.conf", "/run/toque-n.after"
	t.Cleanup(func() { os.Remove(conf); os.Remove(after) })
	recipe := func(v string) string {
		return `file "` + conf + `" {
  content = "` + v + `\n"
  notifies "reload" {
    resource = "service[toque-n]"
  }
}

service "toque-n" {
  notifies "run" {
    resource = "execute[after-reload]"
  }
}

execute "after-reload" {
  command = "touch ` + after + `"
  action  = "nothing"
}
`
	}
	s := newScenario(t, recipe("v1"))
	r := s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	if !strings.Contains(r.stdout, "not running: nothing to reload") || strings.Contains(r.stdout, "execute[after-reload] will run") {
		t.Errorf("plan with the service stopped: want the reload to say it has nothing to do, and no run of what it notifies:\n%s", r.stdout)
	}
	r = s.toque(0, "apply", "plan.out")
	if exists(after) || exists(reloads) {
		t.Errorf("apply with the service stopped: reloaded %v, ran what the reload notifies %v:\n%s", exists(reloads), exists(after), r)
	}
	for _, n := range s.notified() {
		if n["address"] == "service[toque-n]" && n["outcome"] == "changed" {
			t.Errorf("the reload of a stopped service is reported as changed: %v", n)
		}
	}
	if sh(t, "systemctl is-active toque-n || true") != "inactive" {
		t.Error("the reload started the service")
	}

	sh(t, "systemctl start toque-n")
	s.recipe(recipe("v2"))
	r = s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	if !strings.Contains(r.stdout, "execute[after-reload] will run") {
		t.Errorf("plan with the service running:\n%s", r.stdout)
	}
	s.toque(0, "apply", "plan.out")
	if got, _ := os.ReadFile(reloads); string(got) != "reloaded\n" || !exists(after) {
		t.Errorf("apply with the service running: reloads %q, after-reload ran %v", got, exists(after))
	}
}

// A reload planned while the service ran, whose service an earlier
// resource of the same apply stops: apply reads it again, reloads
// nothing, says why, and fires nothing.
func TestInBoxReloadAfterAnEarlierStop(t *testing.T) {
	insideBox(t)
	reloads := unit(t, "toque-m")
	conf, after := "/etc/toque-m.conf", "/run/toque-m.after"
	t.Cleanup(func() { os.Remove(conf); os.Remove(after) })
	sh(t, "systemctl start toque-m")
	s := newScenario(t, `service "stop-m" {
  service_name = "toque-m"
  action       = "stop"
}

file "`+conf+`" {
  content = "v1\n"
  notifies "reload" {
    resource = "service[toque-m]"
  }
}

service "toque-m" {
  notifies "run" {
    resource = "execute[after-reload]"
  }
}

execute "after-reload" {
  command = "touch `+after+`"
  action  = "nothing"
}
`)
	r := s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	if !strings.Contains(r.stdout, "execute[after-reload] will run") {
		t.Errorf("plan with the service running:\n%s", r.stdout)
	}
	r = s.toque(0, "apply", "plan.out")
	if exists(after) || exists(reloads) {
		t.Errorf("reloaded %v, ran what the reload notifies %v:\n%s", exists(reloads), exists(after), r)
	}
	found := false
	for _, n := range s.notified() {
		if n["address"] != "service[toque-m]" {
			continue
		}
		found = true
		if n["outcome"] == "changed" || !strings.Contains(n["reason"].(string), "not running: nothing to reload") {
			t.Errorf("the reload of a service stopped earlier in the apply: %v", n)
		}
	}
	if !found {
		t.Errorf("no report of the notified reload: %v", s.notified())
	}
}

// The service's own actions start it, and a changed file notifies a
// reload (delayed, so after the start): with the service stopped at plan
// the reload has nothing to do, and apply does not fail on finding it
// running by then.
func TestInBoxStartThenNotifiedReload(t *testing.T) {
	insideBox(t)
	unit(t, "toque-s")
	conf := "/etc/toque-s.conf"
	t.Cleanup(func() { os.Remove(conf) })
	s := newScenario(t, `file "`+conf+`" {
  content = "v1\n"
  notifies "reload" {
    resource = "service[toque-s]"
  }
}

service "toque-s" {
  action = ["enable", "start"]
}
`)
	s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	r := s.toque(0, "apply", "plan.out")
	if sh(t, "systemctl is-active toque-s || true") != "active" {
		t.Errorf("not started:\n%s", r)
	}
	s.toque(0, "plan", "-detailed-exitcode")
}

// A unit that does not exist, with three actions: the plan fails with one
// error that says it is missing, not one per action, and not "cannot
// reload". With a systemd_unit that creates it first, it plans and
// applies.
func TestInBoxMissingUnitOnce(t *testing.T) {
	insideBox(t)
	s := newScenario(t, `service "toque-nope" {
  action = ["enable", "start", "restart"]
}
`)
	r := s.toque(1, "plan")
	if n := strings.Count(r.stderr, "Error: "); n != 1 || !strings.Contains(r.stderr, "Missing unit") {
		t.Errorf("want one error, Missing unit; got %d:\n%s", n, r.stderr)
	}
	s.recipe(`service "toque-nope" {
  action = ["enable", "start", "reload"]
}
`)
	r = s.toque(1, "plan")
	if n := strings.Count(r.stderr, "Error: "); n != 1 || !strings.Contains(r.stderr, "Missing unit") || strings.Contains(r.stderr, "ExecReload") {
		t.Errorf("want one error, Missing unit; got %d:\n%s", n, r.stderr)
	}
	t.Cleanup(func() {
		exec.Command("sh", "-c", "systemctl disable --now toque-nope; rm -f /etc/systemd/system/toque-nope.service; systemctl daemon-reload").Run()
	})
	s.recipe(`systemd_unit "toque-nope.service" {
  content = "[Service]\nExecStart=/bin/sleep 1000\nExecReload=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
}

service "toque-nope" {
  action = ["enable", "start", "reload"]
}
`)
	s.toque(2, "plan", "-detailed-exitcode", "-out=plan.out")
	s.toque(0, "apply", "plan.out")
	if got := sh(t, "systemctl is-active toque-nope; systemctl is-enabled toque-nope"); got != "active\nenabled" {
		t.Errorf("after apply: %q", got)
	}
}
