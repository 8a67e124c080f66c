package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// After an apply that did not finish (a notified reload failed), the next
// plan says so — what did not run, and how to finish it: apply the old
// plan again — in text, JSON and Markdown, although it has no changes of
// its own (the notifier is in its planned state now, so nothing notifies
// the reload again).
func TestPlanSaysAnEarlierApplyDidNotFinish(t *testing.T) {
	dir, scratch := t.TempDir(), t.TempDir()
	writeRecipe(t, dir, `
file "`+filepath.Join(dir, "nginx.conf")+`" {
  content = "worker_processes 2;\n"
  notifies "run" {
    resource = "execute[reload-nginx]"
  }
}
execute "reload-nginx" {
  command = "test -e '`+filepath.Join(dir, "nginx-ok")+`'"
  action  = "nothing"
}
`)
	if code, stdout, stderr := runToqueState(t, dir, scratch, nil, "plan", "-out=plan.out"); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runToqueState(t, dir, scratch, nil, "apply", "plan.out"); code != ExitError {
		t.Fatalf("apply: exit %d, want %d (the reload fails)\n%s\n%s", code, ExitError, stdout, stderr)
	}
	planFile := filepath.Join(dir, "plan.out")

	code, stdout, stderr := runToqueState(t, dir, scratch, nil, "plan")
	if code != ExitOK || !strings.Contains(stdout, "No changes.") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"did not finish", "execute[reload-nginx]", "failed", "toque apply " + planFile} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the plan text lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runToqueState(t, dir, scratch, nil, "plan", "-json")
	var doc struct {
		Unfinished []struct {
			PlanFile string `json:"plan_file"`
			Outcome  string `json:"outcome"`
			NotDone  []struct {
				Address, Outcome string
				Notified         bool
			} `json:"not_done"`
		} `json:"unfinished_applies"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); code != ExitOK || err != nil {
		t.Fatalf("plan -json: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if len(doc.Unfinished) != 1 || doc.Unfinished[0].PlanFile != planFile || doc.Unfinished[0].Outcome != "failed" ||
		len(doc.Unfinished[0].NotDone) != 1 || doc.Unfinished[0].NotDone[0].Address != "execute[reload-nginx]" || !doc.Unfinished[0].NotDone[0].Notified {
		t.Errorf("plan -json's unfinished applies: %+v", doc.Unfinished)
	}

	code, stdout, stderr = runToqueState(t, dir, scratch, nil, "plan", "-markdown")
	if code != ExitOK || !strings.Contains(stdout, "did not finish") || !strings.Contains(stdout, "execute[reload-nginx]") {
		t.Errorf("plan -markdown: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// Applying the old plan again, once what failed is fixed, finishes it:
	// the next plan says nothing more.
	if err := os.WriteFile(filepath.Join(dir, "nginx-ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runToqueState(t, dir, scratch, nil, "apply", "plan.out"); code != ExitOK {
		t.Fatalf("apply again: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runToqueState(t, dir, scratch, nil, "plan"); code != ExitOK || strings.Contains(stdout, "did not finish") {
		t.Fatalf("plan after the plan finished: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
