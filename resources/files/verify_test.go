package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// verify runs its commands on the new content, in a private temporary
// file, before the file changes: a command that fails fails the resource
// and leaves the file as it was (create, update and a staged create
// alike); the path reaches the shell as an argument, so a file name that
// holds shell syntax runs nothing.
func TestFileVerify(t *testing.T) {
	dir := t.TempDir()
	ft := BuiltinFileType()
	env := resourcetest.TestEnv(t)
	check := []string{"grep -qx good %s", "test \"$(stat -c %a %s)\" = 600"}
	res := func(path, content string) *resources.Resource {
		return resourcetest.NewRes(t, ft, "create", map[string]any{"path": path, "content": content, "verify": check})
	}

	made := filepath.Join(dir, "made.conf")
	resourcetest.Apply(t, ft, env, res(made, "good\n"), resources.Create)

	refused := filepath.Join(dir, "refused.conf")
	resourcetest.ConvergeErr(t, ft, env, res(refused, "bad\n"), "verify `grep -qx good %s` refused the new content of "+refused+" (exit 1)")
	if _, err := os.Lstat(refused); !os.IsNotExist(err) {
		t.Errorf("a refused create left %s: %v", refused, err)
	}
	// A staged create (apply's group commit) is verified too.
	r := res(refused, "bad\n")
	st, step := resourcetest.Plan(t, ft, r)
	if s, err := ft.(resources.Stager).Stage(context.Background(), env, r, st, step); err == nil || s != nil || !strings.Contains(err.Error(), "refused the new content") {
		t.Errorf("a staged create: %v, %v", s, err)
	}

	resourcetest.ConvergeErr(t, ft, env, res(made, "worse\n"), "refused the new content of "+made)
	if b, _ := os.ReadFile(made); string(b) != "good\n" {
		t.Errorf("a refused update changed the file: %q", b)
	}

	// A %s the recipe quoted stays one word, spaces and all.
	spaced := filepath.Join(dir, "with space.conf")
	quoted := resourcetest.NewRes(t, ft, "create", map[string]any{"path": spaced, "content": "good\n", "verify": []string{`grep -qx good "%s"`, `test -f '%s'`}})
	resourcetest.Apply(t, ft, env, quoted, resources.Create)

	odd := filepath.Join(dir, "a$(touch pwned)`touch pwned2`;b.conf")
	resourcetest.Apply(t, ft, env, res(odd, "good\n"), resources.Create)
	cwd, _ := os.Getwd()
	for _, d := range []string{cwd, "/", dir, os.TempDir()} {
		for _, p := range []string{"pwned", "pwned2"} {
			if _, err := os.Stat(filepath.Join(d, p)); err == nil {
				os.Remove(filepath.Join(d, p))
				t.Errorf("a file name ran touch %s in %s", p, d)
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "toque-verify-*")); len(left) > 0 {
		t.Errorf("verify left %v", left)
	}
}

func TestVerifyBadInput(t *testing.T) {
	for _, c := range []struct {
		v    cty.Value
		want string
	}{
		{cty.ListVal([]cty.Value{cty.StringVal("sshd -t")}), "does not name the file to check: write %s"},
		{cty.ListVal([]cty.Value{cty.StringVal("  ")}), "a command is empty"},
	} {
		if err := validateVerify(c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%#v: %v, want %q", c.v, err, c.want)
		}
	}
}
