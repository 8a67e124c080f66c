package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report reads the last apply report of the state directory in scratch.
func lastReport(t *testing.T, scratch string) (rep struct {
	Resources, Notified []struct{ Address, Outcome, Reason string }
	NotStarted          int `json:"not_started"`
	Unchanged           int
}) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(scratch, "state", "reports", "last.json"))
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func writeRecipe(t *testing.T, dir, recipe string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An apply stopped by a failure counts as "not started" only what had
// work to do: resources whose action is nothing, and no-ops, had nothing
// to start.
func TestApplyStoppedCountsOnlyWorkNotStarted(t *testing.T) {
	dir, scratch := t.TempDir(), t.TempDir()
	writeRecipe(t, dir, `
execute "fails" {
  command = "false"
}
execute "handler-1" {
  command = "true"
  action  = "nothing"
}
execute "handler-2" {
  command = "true"
  action  = "nothing"
}
file "`+filepath.Join(dir, "after")+`" {
  content = "x"
}
`)
	if code, stdout, stderr := runToqueState(t, dir, scratch, nil, "plan", "-out=plan.out"); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runToqueState(t, dir, scratch, nil, "apply", "plan.out")
	if code != ExitError {
		t.Fatalf("apply: exit %d, want %d\n%s\n%s", code, ExitError, stdout, stderr)
	}
	if !strings.Contains(stdout, "1 failed, 0 skipped, 1 not started.") {
		t.Errorf("the summary does not count only the file as not started:\n%s", stdout)
	}
	rep := lastReport(t, scratch)
	if rep.NotStarted != 1 {
		t.Errorf("report: %d not started, want 1: %+v", rep.NotStarted, rep.Resources)
	}
	for _, rr := range rep.Resources {
		if strings.HasPrefix(rr.Address, "execute[handler-") && rr.Outcome != "unchanged" {
			t.Errorf("%s: %q, want unchanged (its action is nothing)", rr.Address, rr.Outcome)
		}
	}
}

// A notified run that an earlier resource of the apply left with nothing
// to do (it stopped the service the run would reload) is not reported as
// run, nor as "already in the planned state": apply says why there was
// nothing to do, in the type's words.
func TestNotifiedRunLeftWithNothingToDoSaysWhy(t *testing.T) {
	dir, scratch := t.TempDir(), t.TempDir()
	running := filepath.Join(dir, "running")
	if err := os.WriteFile(running, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	writeRecipe(t, dir, `
resource_type "svc" {
  property "name" {
    type          = string
    name_property = true
  }
  load_current_value {
    code = "if [ -e '`+running+`' ]; then echo '{}'; else echo '{\"exists\": false}'; fi"
  }
  action "reload" {
    converge_by "reload the service" {
      when = "exists"
      code = "echo reloaded >> '`+filepath.Join(dir, "reloads")+`'"
    }
  }
}
file "`+filepath.Join(dir, "conf")+`" {
  content = "x"
  notifies "reload" {
    resource = "svc[web]"
  }
}
execute "stop-web" {
  command = "rm -f '`+running+`'"
}
svc "web" {
  action = "nothing"
}
`)
	if code, stdout, stderr := runToqueState(t, dir, scratch, nil, "plan", "-out=plan.out"); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runToqueState(t, dir, scratch, nil, "apply", "plan.out")
	if code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	const why = "does not exist, and the reload action does nothing then"
	if !strings.Contains(stdout, "svc[web]: nothing to do: "+why) || strings.Contains(stdout, "already in the planned state") {
		t.Errorf("apply does not say why the reload had nothing to do:\n%s", stdout)
	}
	rep := lastReport(t, scratch)
	if len(rep.Notified) != 1 || rep.Notified[0].Outcome != "unchanged" || !strings.Contains(rep.Notified[0].Reason, why) {
		t.Errorf("report's notified runs %+v", rep.Notified)
	}
	if _, err := os.Stat(filepath.Join(dir, "reloads")); !os.IsNotExist(err) {
		t.Errorf("the reload ran: %v", err)
	}
}
