package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A service used as a handler (its type's default action is nothing) keeps
// its guard: the notified reload the guard rules out is planned and
// applied as skipped, and the unit is never read or reloaded (no systemd
// is needed to see it).
func TestNotifiedServiceGuardSkipsTheReload(t *testing.T) {
	dir, scratch := t.TempDir(), t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	recipe := `
default "nginx" {
  service_state = "stopped"
}
file "` + conf + `" {
  content = "worker_processes 1;\n"
  notifies "reload" {
    resource = "service[nginx]"
  }
}
service "nginx" {
  only_if = node.nginx.service_state == "started"
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runToqueState(t, dir, scratch, nil, "plan", "-out=plan.out")
	if code != ExitOK || !strings.Contains(stdout, "# service[nginx] skipped: notified by") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runToqueState(t, dir, scratch, nil, "apply", "plan.out")
	if code != ExitOK || !strings.Contains(stdout, "1 created, 0 unchanged, 0 failed, 1 skipped") {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep struct {
		Notified []struct{ Address, Outcome string }
	}
	b, err := os.ReadFile(filepath.Join(scratch, "state", "reports", "last.json"))
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil || len(rep.Notified) != 1 || rep.Notified[0].Address != "service[nginx]" || rep.Notified[0].Outcome != "skipped" {
		t.Fatalf("report's notified runs %+v, %v; want service[nginx] skipped", rep.Notified, err)
	}
	if b, err := os.ReadFile(conf); err != nil || string(b) != "worker_processes 1;\n" {
		t.Fatalf("the notifier was not converged: %q, %v", b, err)
	}
}
