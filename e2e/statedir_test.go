package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EHostileStateDirIsRefused prepares the state directory as another
// user could: apply must refuse it, change nothing on the host, and write
// nothing through what was planted.
func TestE2EHostileStateDirIsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// prepare makes the hostile state directory; sentinel is a file
		// outside it that must not change.
		prepare func(t *testing.T, state, sentinel string)
		want    string
	}{
		{"owned by another user", func(t *testing.T, state, _ string) {
			uid, gid := nobodyIDs(t)
			mkdir(t, state, 0o700)
			if err := os.Chown(state, uid, gid); err != nil {
				t.Fatal(err)
			}
		}, "is owned by uid"},
		{"group-writable", func(t *testing.T, state, _ string) {
			mkdir(t, state, 0o770)
		}, "writable by its group"},
		{"lock file a link to another file", func(t *testing.T, state, sentinel string) {
			mkdir(t, state, 0o700)
			if err := os.Symlink(sentinel, filepath.Join(state, "apply.lock")); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
			e.must(0, "plan", "-out=plan.out")
			sentinel := filepath.Join(t.TempDir(), "shadow")
			if err := os.WriteFile(sentinel, []byte("root:secret\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			c.prepare(t, e.state, sentinel)
			before := e.snapshot()

			r := e.must(1, "apply", "plan.out")
			// The detail is word-wrapped, and a long temporary path may
			// break a phrase: compare without the line breaks.
			flat := strings.Join(strings.Fields(r.stderr), " ")
			if !strings.Contains(flat, "Refusing an untrusted state directory") || !strings.Contains(flat, c.want) || !strings.Contains(strings.ReplaceAll(r.stderr, "\n", ""), e.state) {
				t.Errorf("want the state directory refused because it %s:\n%s", c.want, r)
			}
			sameSnapshot(t, before, e.snapshot())
			if b, _ := os.ReadFile(sentinel); string(b) != "root:secret\n" {
				t.Errorf("the file behind the planted link changed: %q", b)
			}

			r = e.must(1, "apply", "-json", "plan.out")
			if ev := lastEvent(t, r.stdout); ev["error_kind"] != "untrusted_state" || ev["exit_code"] != 1.0 {
				t.Errorf("JSON error event %v, want error_kind untrusted_state, exit 1", ev)
			}
		})
	}
}
