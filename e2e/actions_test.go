package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// action = ["create", "touch"] plans each action from the state the one
// before leaves, shows a step per action, and runs them in order.
func TestE2ESeveralActions(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
file "ROOT/f" {
  content = "x\n"
  action  = ["create", "touch"]
}
`)
	r := e.must(0, "plan", "-out=plan.out")
	for _, want := range []string{
		"# file[" + e.root + "/f] (action create, 1 of 2) will be created",
		"# file[" + e.root + "/f] (action touch, 2 of 2) will be updated in place",
		"Plan: 1 to create, 1 to update",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	r = e.must(0, "apply", "plan.out")
	if e.read("f") != "x\n" {
		t.Fatalf("f was not created:\n%s", r)
	}
	// A second plan: the file exists, so create does nothing; touch runs.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(e.root, "f"), old, old)
	r = e.must(0, "plan", "-out=plan.out")
	if !strings.Contains(r.stdout, "(action touch, 2 of 2) will be updated in place") || strings.Contains(r.stdout, "(action create, 1 of 2)") {
		t.Errorf("second plan:\n%s", r.stdout)
	}
	e.must(0, "apply", "plan.out")
	fi, _ := os.Stat(filepath.Join(e.root, "f"))
	if !fi.ModTime().After(old.Add(time.Minute)) {
		t.Errorf("touch did not update the modification time: %s", fi.ModTime())
	}
	js := e.must(0, "show", "-json", "plan.out").stdout
	if !strings.Contains(js, `"then": [`) || !strings.Contains(js, `"action": "touch"`) {
		t.Errorf("show -json lacks the further action:\n%s", js)
	}
}

// Notifications fire for each action that changed something, as Chef's
// run_all_actions: an immediately target runs once per such action; a
// delayed one once.
func TestE2ENotificationsPerAction(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
file "ROOT/f" {
  content = "x\n"
  action  = ["create", "touch"]
  notifies "run" {
    resource = "execute[now]"
    timing   = "immediately"
  }
  notifies "run" {
    resource = "execute[later]"
    timing   = "delayed"
  }
}
execute "now" {
  command = "echo now >> ROOT/log"
  action  = "nothing"
}
execute "later" {
  command = "echo later >> ROOT/log"
  action  = "nothing"
}
`)
	r := e.must(0, "plan", "-out=plan.out")
	if strings.Count(r.stdout, "# execute[now] will run: notified by") != 2 || strings.Count(r.stdout, "# execute[later] will run: notified by") != 1 {
		t.Errorf("plan:\n%s", r.stdout)
	}
	e.must(0, "apply", "plan.out")
	if got := e.read("log"); got != "now\nnow\nlater\n" {
		t.Errorf("log %q, want now twice then later once", got)
	}
}

// Pre-flight: a resource whose first action someone else already did is
// not stale when each action still takes the planned step or none.
func TestE2ESeveralActionsPartlyDone(t *testing.T) {
	e := newEnv(t)
	e.recipe("a.hcl", `
file "ROOT/f" {
  content = "x\n"
  action  = ["create", "touch"]
}
`)
	e.must(0, "plan", "-out=plan.out")
	e.write("f", "x\n", 0o644) // the create, done by someone else
	r := e.must(0, "apply", "plan.out")
	if strings.Contains(r.stderr, "stale") {
		t.Errorf("apply:\n%s", r)
	}
	// But another content is stale: create would now update.
	e.recipe("a.hcl", `
file "ROOT/g" {
  content = "y\n"
  action  = ["create", "touch"]
}
`)
	e.must(0, "plan", "-out=plan.out")
	e.write("g", "someone else's\n", 0o644)
	e.must(3, "apply", "plan.out")
}

// Pre-flight holds each action to a single action's rule: the same kinds
// of step from another live state is stale, as one action's would be.
func TestE2ESeveralActionsSameKindsOtherState(t *testing.T) {
	e := newEnv(t)
	e.write("f", "old\n", 0o644)
	e.recipe("a.hcl", `
file "ROOT/f" {
  content = "x\n"
  action  = ["create", "touch"]
}
`)
	e.must(0, "plan", "-out=plan.out")
	e.write("f", "someone else's\n", 0o644) // create still updates, from another content
	r := e.must(3, "apply", "plan.out")
	if !strings.Contains(r.stderr, "content") {
		t.Errorf("the stale plan does not say what changed:\n%s", r)
	}
	if got := e.read("f"); got != "someone else's\n" {
		t.Errorf("a stale plan changed the file: %q", got)
	}
}
