package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
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

func TestE2EHostLockExcludesApplyWithAnotherStateDir(t *testing.T) {
	t.Parallel()
	first := newEnv(t)
	cmd, out, firstErr := first.startLongApply()

	second := newEnv(t)
	second.hostLock = first.hostLock // one host
	second.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	second.must(0, "plan", "-out=plan.out")
	r := second.run("apply", "plan.out")
	j := second.run("apply", "-json", "plan.out")
	go io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("first apply: %v\n%s", err, firstErr)
	}

	if r.code != 4 {
		t.Fatalf("an apply with another state directory ran beside the first: want exit 4, got %s", r)
	}
	for _, want := range []string{"host-wide lock", fmt.Sprintf("pid %d", cmd.Process.Pid), first.state, first.hostLock} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(second.root, "a.conf")); !os.IsNotExist(err) {
		t.Error("the second apply changed the host")
	}
	ev := lastEvent(t, j.stdout)
	holder, _ := ev["lock_holder"].(map[string]any)
	if j.code != 4 || ev["error_kind"] != "lock_held" || holder["host_wide"] != true || holder["pid"] != float64(cmd.Process.Pid) || holder["state_dir"] != first.state {
		t.Errorf("JSON: exit %d, error event %v", j.code, ev)
	}

	// Once the first is done, the second runs.
	second.must(0, "apply", "plan.out")
}

// lastEvent decodes the last line of an apply -json stream.
func lastEvent(t *testing.T, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var ev map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil {
		t.Fatalf("last event: %v\n%s", err, stdout)
	}
	return ev
}

// nobodyIDs is the uid and gid of nobody; the test is skipped unless it
// runs as root, as only root can give a directory to another user.
func nobodyIDs(t *testing.T) (int, int) {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Nobody)
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
