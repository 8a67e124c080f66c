package command

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// toqueSession runs toque in-process in dir, every run with one state
// directory and host lock (so that apply follows plan), under scratch.
type toqueSession struct {
	t       *testing.T
	dir     string
	scratch string
}

func newSession(t *testing.T, dir string) *toqueSession {
	return &toqueSession{t: t, dir: dir, scratch: t.TempDir()}
}

func (s *toqueSession) run(args ...string) (code int, stdout, stderr string) {
	t := s.t
	t.Helper()
	vars := map[string]string{
		"TOQUE_STATE_DIR": filepath.Join(s.scratch, "state"),
		HostLockEnv:       filepath.Join(s.scratch, "host.lock"),
		"TOQUE_CACHE_DIR": filepath.Join(s.scratch, "cache"),
		"NO_COLOR":        "1",
		"TOQUE_LOG":       "",
	}
	env := Env{Dir: s.dir, LookupEnv: func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, v != ""
		}
		return os.LookupEnv(k)
	}}
	testutil.MustBeUnder(t, s.scratch, "the host-wide apply lock", hostLock(env))
	testutil.MustBeUnder(t, s.scratch, "the state directory", stateDir(env, ""))
	var out, errs bytes.Buffer
	code = Run(context.Background(), nil, args, Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errs, Env: env})
	return code, out.String(), errs.String()
}

// Bad input to for_each, count, dynamic blocks and notifications of
// instances: an error at the expression (FILE:LINE:COL), exit 1, and the
// host untouched.
func TestForEachBadInput(t *testing.T) {
	cases := []struct {
		name, recipe string
		summary, at  string
	}{
		{"for_each and count together", `file "x" {
  for_each = toset(["a"])
  count    = 1
  path     = "${node.t.root}/${each.key}"
}`, "Invalid combination of count and for_each", "a.hcl:3:3"},
		{"a negative count", `file "x" {
  count = -2
  path  = "${node.t.root}/${count.index}"
}`, "Invalid count argument", "a.hcl:2:11"},
		{"a fractional count", `file "x" {
  count = 2.5
  path  = "${node.t.root}/${count.index}"
}`, "Invalid count argument", "a.hcl:2:11"},
		{"for_each over a list", `file "x" {
  for_each = ["a", "b"]
  path     = "${node.t.root}/${each.key}"
}`, "Invalid for_each argument", "a.hcl:2:14"},
		{"for_each over null", `file "x" {
  for_each = null
  path     = "${node.t.root}/${each.key}"
}`, "Invalid for_each argument", "a.hcl:2:14"},
		{"for_each over keys known only at apply", `file "x" {
  for_each = { (lazy("k")) = 1 }
  path     = "${node.t.root}/${each.key}"
}`, "lazy is not allowed on for_each", "a.hcl:2:17"},
		{"each outside for_each", `file "x" {
  path = "${node.t.root}/${each.key}"
}`, "Reference to each outside for_each", "a.hcl:2:28"},
		{"count.index outside count", `file "x" {
  path = "${node.t.root}/${count.index}"
}`, "Reference to count outside count", "a.hcl:2:28"},
		{"a dynamic for_each that is no collection", `file "x" {
  dynamic "notifies" {
    for_each = 42
    labels   = ["run"]
    content {
      resource = "execute[x]"
    }
  }
  path = "${node.t.root}/x"
}
execute "x" {
  command = "true"
  action  = "nothing"
}`, "Invalid dynamic for_each value", "a.hcl:3:16"},
		{"a notification to an instance that does not exist", `file "x" {
  for_each = toset(["a.com", "b.com"])
  path     = "${node.t.root}/${each.key}"
}
execute "y" {
  command = "true"
  notifies "create" {
    resource = "file[x][\"c.com\"]"
  }
}`, "Notification to a resource that does not exist", "a.hcl:8:16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := t.TempDir()
			testutil.WriteFiles(t, dir, map[string]string{"a.hcl": c.recipe + "\ndefault \"t\" {\n  root = \"" + root + "\"\n}\n"})
			s := newSession(t, dir)
			for _, args := range [][]string{{"validate"}, {"plan"}, {"apply", "-auto-approve"}} {
				code, _, stderr := s.run(args...)
				if code != 1 || strings.Count(stderr, "Error: ") != 1 || !strings.Contains(stderr, "Error: "+c.summary) || !strings.Contains(stderr, c.at) {
					t.Errorf("%s: exit %d, want 1 with one error %q at %s:\n%s", args[0], code, c.summary, c.at, stderr)
				}
			}
			if entries, _ := os.ReadDir(root); len(entries) != 0 {
				t.Errorf("the host was changed: %v", entries)
			}
		})
	}
}

// A plan of instances applies, and the next plan has no changes; its
// JSON view gives each instance's index.
func TestForEachPlanApplyPlan(t *testing.T) {
	root := t.TempDir()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"a.hcl": strings.ReplaceAll(`
default "site" {
  pages = { index = "hello", about = "me" }
}
default "t" {
  root = "ROOT"
}
resource_type "site" {
  property "name" {
    type          = string
    name_property = true
  }
  property "pages" {
    type          = map(string)
    desired_state = false
  }
  load_current_value {
    code = "echo '{}'"
  }
  action "create" {
    file "page" {
      for_each = new_resource.pages
      path     = "${node.t.root}/${new_resource.name}-${each.key}.html"
      content  = "${each.value}\n"
    }
  }
}
site "blog" {
  pages = node.site.pages
}
file "n" {
  count   = 2
  path    = "ROOT/n${count.index}"
  content = "${count.index}\n"
  notifies "run" {
    resource = "execute[after][${count.index}]"
  }
}
execute "after" {
  count   = 2
  command = "true"
  action  = "nothing"
}
`, "ROOT", root)})
	s := newSession(t, dir)
	planFile := filepath.Join(s.scratch, "plan.out")
	if code, out, errs := s.run("plan", "-out="+planFile); code != 0 || !strings.Contains(out, `# site[blog].file[page]["about"] will be created`) ||
		!strings.Contains(out, "# execute[after][1] will run: notified by file[n][1] (delayed)") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := s.run("show", "-json", planFile)
	if code != 0 {
		t.Fatalf("show: %d %s", code, errs)
	}
	var view struct {
		Resources []struct {
			Address string          `json:"address"`
			Index   json.RawMessage `json:"index"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(out), &view); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range view.Resources {
		got = append(got, r.Address+"="+string(r.Index))
	}
	want := `site[blog]=|site[blog].file[page]["about"]="about"|site[blog].file[page]["index"]="index"|file[n][0]=0|file[n][1]=1|execute[after][0]=0|execute[after][1]=1`
	if strings.Join(got, "|") != want {
		t.Errorf("show -json resources\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	if code, out, errs := s.run("apply", planFile); code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errs)
	}
	for name, content := range map[string]string{"blog-index.html": "hello\n", "blog-about.html": "me\n", "n1": "1\n"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != content {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	if code, out, errs := s.run("plan", "-detailed-exitcode"); code != 0 || !strings.Contains(out, "No changes.") {
		t.Fatalf("second plan: exit %d\n%s\n%s", code, out, errs)
	}
}

// A resource group's guards are shown once, skip or let its resources
// run at plan and at apply, and the next plan has no changes.
func TestResourceGroupPlanApplyPlan(t *testing.T) {
	root := t.TempDir()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"a.hcl": strings.ReplaceAll(`
default "hardening" {
  core_dumps = false
}
resource_group "core_dumps" {
  only_if = node.hardening.core_dumps
  file "ROOT/limits.conf" {
    content = "* hard core 0\n"
  }
  file "ROOT/sysctl.conf" {
    content = "fs.suid_dumpable = 0\n"
  }
}
resource_group "banner" {
  not_if = "test -e ROOT/nobanner"
  file "ROOT/motd" {
    content = "authorized use only\n"
  }
  file "ROOT/issue" {
    content = "authorized use only\n"
  }
}
`, "ROOT", root)})
	s := newSession(t, dir)
	planFile := filepath.Join(s.scratch, "plan.out")
	code, out, errs := s.run("plan", "-out="+planFile)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"# resource_group[core_dumps] skipped: only_if node.hardening.core_dumps is false\n  #   skips its 2 resources: file[" + root + "/limits.conf] and file[" + root + "/sysctl.conf]\n",
		"# resource_group[banner]: the guards of its 2 resources\n  #   not_if `test -e " + root + "/nobanner` is false",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "not_if `test -e"); n != 1 {
		t.Errorf("the group's guard is shown %d times:\n%s", n, out)
	}
	if code, out, errs := s.run("apply", planFile); code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errs)
	}
	for name, want := range map[string]bool{"motd": true, "issue": true, "limits.conf": false} {
		if _, err := os.Stat(filepath.Join(root, name)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", name, err == nil, want)
		}
	}
	if code, out, errs := s.run("plan", "-detailed-exitcode"); code != 0 || !strings.Contains(out, "No changes.") || !strings.Contains(out, "# resource_group[core_dumps] skipped") {
		t.Fatalf("second plan: exit %d\n%s\n%s", code, out, errs)
	}
}
