package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/internal/testutil"
)

// As a user other than root (make test-nonroot), a plan shows everything
// it can plan, and what only root could do is one line per resource; a
// file whose recipe sets only its mode is read for its metadata, not its
// content, so one toque's user may not read is planned.
func TestPlanAsNonRootShowsTheRestAndOneLinePerNeedsRoot(t *testing.T) {
	testenv.MustHave(t, testenv.NonRoot)
	dir, scratch := t.TempDir(), t.TempDir()
	closed := filepath.Join(dir, "closed")
	if err := os.Mkdir(closed, 0o755); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "unreadable")
	if err := os.WriteFile(unreadable, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(unreadable, 0)
	os.Chmod(closed, 0o555) // toque's user may not write it
	t.Cleanup(func() { os.Chmod(closed, 0o755) })
	writeRecipe(t, dir, `
file "`+filepath.Join(dir, "mine")+`" {
  content = "ok\n"
}
file "`+filepath.Join(closed, "x")+`" {
  content = "no"
}
file "`+unreadable+`" {
  mode = "0000"
}
file "`+filepath.Join(dir, "given")+`" {
  content = "x"
  owner   = "root"
}
execute "as-root" {
  command = "true"
  user    = "root"
}
`)
	code, stdout, stderr := runToqueState(t, dir, scratch, nil, "plan")
	if code != ExitError {
		t.Fatalf("exit %d, want %d (the plan is incomplete)\n%s\n%s", code, ExitError, stdout, stderr)
	}
	if !strings.Contains(stdout, "# file["+filepath.Join(dir, "mine")+"] will be created") {
		t.Errorf("the plan does not show what it could plan:\n%s", stdout)
	}
	for _, addr := range []string{"file[" + filepath.Join(closed, "x") + "]", "file[" + filepath.Join(dir, "given") + "]", "execute[as-root]"} {
		n := 0
		for _, line := range strings.Split(stdout+stderr, "\n") {
			if strings.Contains(line, addr) && strings.Contains(strings.ToLower(line), "needs root") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d lines say %s needs root, want 1:\n%s\n%s", n, addr, stdout, stderr)
		}
	}
	if strings.Contains(stdout+stderr, unreadable+": permission denied") || strings.Contains(stdout+stderr, "Cannot read") {
		t.Errorf("the file whose recipe sets only its mode was read for its content:\n%s\n%s", stdout, stderr)
	}
	if strings.Contains(stderr, " on main.hcl") {
		t.Errorf("needs-root errors are not one line each:\n%s", stderr)
	}
}

// As a user other than root, a plan in policy mode needs no state
// directory it can create: its cache is a temporary one when it cannot
// (local cookbooks never touch it), and no raw Go error is printed.
func TestPolicyPlanAsNonRootNeedsNoWritableStateDir(t *testing.T) {
	testenv.MustHave(t, testenv.NonRoot)
	dir, scratch := t.TempDir(), t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"policy.hcl":                       "name = \"p\"\nrun_list = [\"cb\"]\ncookbook \"cb\" {\n  path = \"cookbooks/cb\"\n}\n",
		"cookbooks/cb/metadata.hcl":        "name = \"cb\"\nversion = \"1.0.0\"\n",
		"cookbooks/cb/recipes/default.hcl": "file \"" + filepath.Join(dir, "out") + "\" {\n  content = \"x\"\n}\n",
	})
	if code, stdout, stderr := runToqueState(t, dir, scratch, nil, "install"); code != ExitOK {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	closed := filepath.Join(t.TempDir(), "closed")
	if err := os.Mkdir(closed, 0o555); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"HOME": filepath.Join(closed, "home"), "XDG_STATE_HOME": "",
		"TOQUE_STATE_DIR": "", "TOQUE_CACHE_DIR": "", HostLockEnv: filepath.Join(scratch, "host.lock"),
		"NO_COLOR": "1", "TOQUE_LOG": "",
	}
	env := Env{Dir: dir, LookupEnv: func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, v != ""
		}
		return os.LookupEnv(k)
	}}
	testutil.MustBeUnder(t, filepath.Dir(closed), "the state directory", stateDir(env, ""))
	code, stdout, stderr := runWithEnv(env, []string{"plan"})
	if code != ExitOK || !strings.Contains(stdout, "will be created") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(closed, "home")); !os.IsNotExist(err) {
		t.Errorf("the plan made the state directory's parents: %v", err)
	}
}

// A file whose content is known only at apply is not read for its content
// at plan (Load does not see the content then); once the value is known,
// reading the content is no difference from the plan to report.
func TestLazyFileContentIsNoDifferenceFromThePlan(t *testing.T) {
	dir, scratch := t.TempDir(), t.TempDir()
	src, a := filepath.Join(dir, "src"), filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeRecipe(t, dir, `
file "`+src+`" {
  content = "new\n"
}
file "`+a+`" {
  content = lazy(file("`+src+`"))
}
`)
	if code, stdout, stderr := runToqueState(t, dir, scratch, nil, "plan", "-out=plan.out"); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runToqueState(t, dir, scratch, nil, "apply", "plan.out")
	if code != ExitOK || strings.Contains(stdout, "differs from plan") {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(a); string(b) != "new\n" {
		t.Fatalf("content %q", b)
	}
}
