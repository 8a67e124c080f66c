package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// End-to-end tests of the file-system types' safety: paths, symbolic
// links, backups, in-process and through the built binary.

// secretFile is a root-only file outside what the recipes manage, that a
// local user would like toque to change or show; keep checks it did not.
type secretFile struct {
	t    *testing.T
	path string
	st   syscall.Stat_t
}

const secretText = "root:$6$secret-hash:19000:0:99999:7:::\n"

func newSecret(t *testing.T, path string) *secretFile {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &secretFile{t: t, path: path}
	if err := syscall.Stat(path, &s.st); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *secretFile) keep(what string) {
	s.t.Helper()
	var now syscall.Stat_t
	if err := syscall.Stat(s.path, &now); err != nil {
		s.t.Fatalf("%s: the secret is gone: %v", what, err)
	}
	b, _ := os.ReadFile(s.path)
	if string(b) != secretText || now.Mode != s.st.Mode || now.Uid != s.st.Uid || now.Gid != s.st.Gid || now.Mtim != s.st.Mtim {
		s.t.Fatalf("%s: the secret changed: %q mode %o owner %d:%d", what, b, now.Mode, now.Uid, now.Gid)
	}
}

// worldWritable makes dir under e.root, writable by every user (mode 0777):
// where a local attacker can put links.
func (e *env) worldWritable(rel string) string {
	e.t.Helper()
	dir := filepath.Join(e.root, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		e.t.Fatal(err)
	}
	return dir
}

func nobodyIfRoot() string {
	if os.Geteuid() == 0 {
		return `owner = "65534"`
	}
	return ""
}

func TestE2ESymlinkAtAManagedPathIsAPlanError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	secret := newSecret(t, filepath.Join(e.root, "vault", "shadow"))
	drop := e.worldWritable("drop")
	if err := os.Symlink(secret.path, filepath.Join(drop, "report")); err != nil {
		t.Fatal(err)
	}
	e.recipe("r.hcl", `file "ROOT/drop/report" {
  content = "report\n"
  mode    = "0644"
  `+nobodyIfRoot()+`
}`)
	r := e.must(1, "plan", "-out=plan.out")
	if !strings.Contains(flat(r.stderr), "manage_symlink_source = true") {
		t.Errorf("the plan error does not say how to follow the link:\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, "secret-hash") {
		t.Fatalf("the link's target was shown:\n%s", r)
	}
	// Asking to follow a link that another user could have made is
	// refused too.
	e.recipe("r.hcl", `file "ROOT/drop/report" {
  content               = "report\n"
  manage_symlink_source = true
}`)
	r = e.must(1, "plan")
	if !strings.Contains(flat(r.stderr), "other users can write to that directory (mode 0777)") || strings.Contains(r.stdout+r.stderr, "secret-hash") {
		t.Errorf("following a link in a world-writable directory:\n%s", r)
	}
	secret.keep("plan")
}

// TestE2ESymlinkSwappedBetweenPreflightAndConverge is the reported case:
// the plan says create, pre-flight still finds nothing, and a link to a
// root-only file appears before the file converges (here made by an
// earlier resource of the same run, so the timing is exact). apply must
// fail that resource and leave the target alone.
func TestE2ESymlinkSwappedBetweenPreflightAndConverge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	secret := newSecret(t, filepath.Join(e.root, "vault", "shadow"))
	e.worldWritable("drop")
	e.recipe("r.hcl", `
execute "attacker" {
  command = "ln -s `+secret.path+` ROOT/drop/report"
}
file "ROOT/drop/report" {
  content = "report\n"
  mode    = "0644"
  `+nobodyIfRoot()+`
}`)
	e.must(0, "plan", "-out=plan.out")
	r := e.must(1, "apply", "plan.out")
	if !strings.Contains(r.stdout+r.stderr, "manage_symlink_source") {
		t.Errorf("apply does not say why it stopped:\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, "secret-hash") {
		t.Errorf("the secret was shown:\n%s", r)
	}
	secret.keep("apply")
}

// TestE2ESymlinkSwapRace races a local user swapping the managed path,
// and its parent directory, between nothing and links to a root-only
// file, against the whole binary's apply. Whatever apply ends in, the
// secret never changes.
func TestE2ESymlinkSwapRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	secret := newSecret(t, filepath.Join(e.root, "vault", "shadow"))
	drop := e.worldWritable("drop")
	e.recipe("r.hcl", `
file "ROOT/drop/report" {
  content = "report\n"
  mode    = "0644"
  `+nobodyIfRoot()+`
}
file "ROOT/drop/sub/shadow" {
  content = "x\n"
  `+nobodyIfRoot()+`
}`)
	report, sub := filepath.Join(drop, "report"), filepath.Join(drop, "sub")
	codes := map[int]int{}
	var sample []string
	const attempts = 20
	for i := range attempts {
		os.RemoveAll(report)
		os.RemoveAll(sub)
		if err := os.Mkdir(sub, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(sub, 0o777)
		e.must(0, "plan", "-out=plan.out")
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			// From the start of apply, or a little later, so that some
			// attempts pass pre-flight and race the converge itself.
			time.Sleep(time.Duration(i%5) * 2 * time.Millisecond)
			tmp, tmpDir := filepath.Join(drop, ".a"), filepath.Join(drop, ".d")
			for j := 0; !stop.Load(); j++ {
				// The report: nothing, or a link to the secret.
				os.Remove(tmp)
				os.Symlink(secret.path, tmp)
				os.Rename(tmp, report)
				os.Remove(report)
				// The parent: a directory, or a link to the vault.
				os.Remove(tmpDir)
				if j%2 == 0 {
					os.Symlink(filepath.Dir(secret.path), tmpDir)
				} else {
					os.Mkdir(tmpDir, 0o777)
				}
				os.RemoveAll(sub)
				os.Rename(tmpDir, sub)
				time.Sleep(time.Duration(j%3) * 50 * time.Microsecond)
			}
		}()
		r := e.run("apply", "plan.out")
		stop.Store(true)
		wg.Wait()
		codes[r.code]++
		if r.code != 0 && len(sample) < 3 {
			sample = append(sample, flat(r.stderr))
		}
		// 7: the path was swapped after apply wrote it, and the end-state
		// check, reading it again, says so.
		if strings.Contains(r.stderr, "panic") || (r.code != 0 && r.code != 1 && r.code != 3 && r.code != 7) {
			t.Fatalf("attempt %d:\n%s", i, r)
		}
		secret.keep(fmt.Sprint("attempt ", i))
	}
	t.Logf("%d applies raced: exit codes %v; for example: %q", attempts, codes, sample)
}

// TestE2EPlanShowsOnlyContentEveryUserMayRead checks that no rendering of
// a plan (text, JSON, the Markdown of a pull-request comment) shows the
// current content of a file not every user of the host may read, even
// when the recipe names its owner; and that a readable file still gets its
// diff.
func TestE2EPlanShowsOnlyContentEveryUserMayRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	secret := newSecret(t, filepath.Join(e.root, "etc", "shadow"))
	e.write("etc/motd", "old motd\n", 0o644)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	e.recipe("r.hcl", `
file "ROOT/etc/shadow" {
  content = "replaced\n"
  owner   = "`+me.Username+`" # the file's own owner: it does not unlock the diff
}
file "ROOT/etc/motd" { content = "new motd\n" }
`)
	for _, args := range [][]string{{"plan", "-out=plan.out"}, {"plan", "-json"}, {"show", "-markdown", "plan.out"}, {"show", "-json", "plan.out"}} {
		r := e.run(args...)
		if r.code != 0 {
			t.Fatalf("toque %v:\n%s", args, r)
		}
		out := r.stdout + r.stderr
		if strings.Contains(out, "secret-hash") {
			t.Errorf("toque %v shows the root-only content:\n%s", args, out)
		}
		if !strings.Contains(flat(out), "current content not shown: not every user of this host may read it (mode 0600") {
			t.Errorf("toque %v does not say why the content is not shown:\n%s", args, out)
		}
		if !strings.Contains(out, "-old motd") || !strings.Contains(out, "+new motd") {
			t.Errorf("toque %v does not show the diff of a readable file:\n%s", args, out)
		}
	}
	e.must(0, "apply", "plan.out")
	if got, _ := os.ReadFile(secret.path); string(got) != "replaced\n" {
		t.Fatalf("the planned change was not applied: %q", got)
	}
}

// TestE2EKilledApplyLeftoversAreCleanedUp kills (SIGKILL) a real apply
// while it copies a file's backup, and checks that the next apply removes
// what it left and what older versions left (a zero-byte backup, a
// temporary file beside the managed one), none of which counts as a
// backup.
func TestE2EKilledApplyLeftoversAreCleanedUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), (16<<20)/16) // 16 MiB: a copy long enough to kill
	e.recipe("r.hcl", `file "ROOT/big" {
  content = "small\n"
  backup  = 2
}`)
	backups := filepath.Join(e.state, "backup", e.root, "big")
	tmp := filepath.Join(backups, ".toque-tmp")
	killed := false
	for attempt := 0; attempt < 5 && !killed; attempt++ {
		if err := os.WriteFile(filepath.Join(e.root, "big"), big, 0o644); err != nil {
			t.Fatal(err)
		}
		e.must(0, "plan", "-out=plan.out")
		cmd := e.binCmd("-chdir="+e.dir, "apply", "plan.out")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
	poll:
		for {
			select {
			case <-exited:
				break poll // too fast: try again
			default:
			}
			if _, err := os.Lstat(tmp); err == nil {
				cmd.Process.Kill()
				<-exited
				killed = true
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	if !killed {
		t.Skip("apply always finished its backup before it could be killed")
	}
	if _, err := os.Lstat(tmp); err != nil {
		t.Fatalf("the killed apply left no temporary backup: %v", err)
	}
	// What toque before atomic backups left: a zero-byte backup; and a
	// temporary file of a killed write beside the managed file.
	if err := os.WriteFile(filepath.Join(backups, "20200101000000.000000000"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.write(".big.toque-tmp", "half a new big", 0o600)

	r := e.must(0, "apply", "plan.out") // resumes the interrupted apply
	if got := e.read("big"); got != "small\n" {
		t.Fatalf("big = %q after the second apply:\n%s", got[:min(len(got), 40)], r)
	}
	entries, err := os.ReadDir(backups)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, en := range entries {
			names = append(names, en.Name())
		}
		t.Fatalf("backups of big = %v, want the one whole copy", names)
	}
	if b, _ := os.ReadFile(filepath.Join(backups, entries[0].Name())); !bytes.Equal(b, big) {
		t.Fatalf("the backup is not a whole copy: %d bytes", len(b))
	}
	if _, err := os.Lstat(filepath.Join(e.root, ".big.toque-tmp")); !os.IsNotExist(err) {
		t.Fatalf("the temporary file beside big is still there: %v", err)
	}
}
