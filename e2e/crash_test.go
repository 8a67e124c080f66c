package e2e

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	crashKills = flag.Int("crash-kills", 12, "how many times TestE2ECrashLeavesEveryFileWhole kills apply (make crash-test kills it 60 times)")
	crashSeed  = flag.Uint64("crash-seed", 0, "seed of TestE2ECrashLeavesEveryFileWhole's kill points (0: from the clock; the test logs the seed it used)")
)

// The crash workload: new files committed in groups, updates of existing
// files (one at a time, with backups), and runs, in one directory.
const (
	crashCreatesA = 90
	crashUpdates  = 30
	crashCreatesB = 60
	crashRuns     = 6
)

func crashName(kind string, i int) string { return fmt.Sprintf("%s%03d.conf", kind, i) }
func crashNew(name string) string         { return "# new\n" + name + " = " + strings.Repeat("n", 100) + "\n" }
func crashOld(name string) string         { return "# old\n" + name + " = " + strings.Repeat("o", 80) + "\n" }

func crashRecipe(root string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "directory %q {\n  mode = \"0755\"\n}\n\n", root+"/d")
	file := func(name string) {
		fmt.Fprintf(&b, "file %q {\n  content = %q\n  mode    = \"0640\"\n}\n\n", root+"/d/"+name, crashNew(name))
	}
	for i := range crashCreatesA {
		file(crashName("a", i))
		if i%(crashCreatesA/crashRuns) == 0 {
			m := fmt.Sprintf("%s/d/m%03d.done", root, i)
			fmt.Fprintf(&b, "execute \"mark-%03d\" {\n  command = \"echo done > %s\"\n  creates = %q\n}\n\n", i, m, m)
		}
	}
	for i := range crashUpdates {
		file(crashName("u", i))
	}
	for i := range crashCreatesB {
		file(crashName("b", i))
	}
	return b.String()
}

// TestE2ECrashLeavesEveryFileWhole kills apply with SIGKILL at random points
// — after a random number of its progress lines, plus a random fraction of
// a millisecond, so anywhere in pre-flight, staging, a group's sync and
// renames, an update, a run or the journal — and checks after each kill
// that every managed file is whole: its old content and mode (or absent,
// for a create) or its new content and mode, never empty or partial; that
// nothing else is left but temporary files; that the journal says done
// only what is done on disk; and that applying the plan again finishes the
// job. -crash-kills sets how many kills (make crash-test: 60).
func TestE2ECrashLeavesEveryFileWhole(t *testing.T) {
	t.Parallel()
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill points from -crash-seed=%d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	lines := 2 * (1 + crashCreatesA + crashUpdates + crashCreatesB + crashRuns)
	midway := 0
	for k := range *crashKills {
		e := newEnv(t)
		if err := os.MkdirAll(filepath.Join(e.root, "d"), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range crashUpdates {
			e.write("d/"+crashName("u", i), crashOld(crashName("u", i)), 0o644)
		}
		e.recipe("crash.hcl", crashRecipe(e.root))
		e.must(0, "plan", "-out=plan.out")

		cut := rng.IntN(lines + 1)
		pause := time.Duration(rng.IntN(2000)) * time.Microsecond
		e.killApplyAfter(cut, pause)
		news := e.checkCrashFiles(fmt.Sprintf("kill %d (after %d lines and %v)", k, cut, pause), true)
		if news > 0 && news < crashCreatesA+crashUpdates+crashCreatesB {
			midway++
		}
		e.checkJournalAgainstDisk()

		// A child of the killed apply (a process it was starting) may
		// hold the host-wide lock's descriptor for the moment it takes to
		// exec: wait for it rather than fail.
		r := e.run("apply", "-lock-timeout=10s", "plan.out")
		switch {
		case r.code == 0, r.code == 6: // 6: the kill came after the journal said finished
		case r.code == 3 && strings.Contains(r.stderr, "may or may not have run"):
			// Killed while a run ran: a new plan decides.
			e.must(0, "plan", "-out=plan.out")
			e.must(0, "apply", "plan.out")
		default:
			t.Fatalf("kill %d: applying the plan again: %s", k, r)
		}
		e.checkCrashFiles(fmt.Sprintf("kill %d, after applying again", k), false)
	}
	t.Logf("%d kills, %d of them with some files new and some not", *crashKills, midway)
}

// killApplyAfter starts apply plan.out, reads cut lines of its progress,
// waits pause, and kills it with SIGKILL (unless it has finished by then).
func (e *env) killApplyAfter(cut int, pause time.Duration) {
	e.t.Helper()
	cmd := e.binCmd("-chdir="+e.dir, "apply", "plan.out")
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for n := 0; n < cut && sc.Scan(); n++ {
	}
	time.Sleep(pause)
	cmd.Process.Signal(syscall.SIGKILL)
	go func() {
		for sc.Scan() { // let it write what it writes before dying
		}
	}()
	err = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err != nil && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL) {
		e.t.Fatalf("apply failed before it was killed: %v", err)
	}
}

// checkCrashFiles checks every file of the crash workload: old or new
// (after a kill), or new (after applying again), each with the mode that
// goes with its content; it returns how many are new.
func (e *env) checkCrashFiles(when string, killed bool) (news int) {
	e.t.Helper()
	dir := filepath.Join(e.root, "d")
	want := map[string]bool{}
	check := func(name string, existed bool) {
		want[name] = true
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) && killed && !existed {
			return // a create not done yet
		}
		if err != nil {
			e.t.Fatalf("%s: %s: %v", when, name, err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			e.t.Fatal(err)
		}
		switch {
		case string(b) == crashNew(name) && fi.Mode().Perm() == 0o640:
			news++
		case killed && existed && string(b) == crashOld(name) && fi.Mode().Perm() == 0o644:
		default:
			e.t.Fatalf("%s: %s is neither its old nor its new self: mode %04o, %d bytes %q", when, name, fi.Mode().Perm(), len(b), b)
		}
	}
	for i := range crashCreatesA {
		check(crashName("a", i), false)
		if i%(crashCreatesA/crashRuns) == 0 {
			// A run's marker is its command's doing, not a managed file:
			// a kill can cut the command short (toque's children die
			// with it), and creates then says it ran.
			want[fmt.Sprintf("m%03d.done", i)] = true
		}
	}
	for i := range crashUpdates {
		check(crashName("u", i), true)
	}
	for i := range crashCreatesB {
		check(crashName("b", i), false)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, en := range entries {
		name := en.Name()
		if want[name] || (killed && strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".toque-tmp")) {
			continue
		}
		e.t.Fatalf("%s: unexpected %s in the managed directory", when, name)
	}
	return news
}

// checkJournalAgainstDisk: every line of the journal but the last is
// whole, and every file the journal says changed has its new content.
func (e *env) checkJournalAgainstDisk() {
	e.t.Helper()
	journals, _ := filepath.Glob(filepath.Join(e.state, "journal", "sha256-*.jsonl"))
	if len(journals) > 1 {
		e.t.Fatalf("journals %v", journals)
	}
	for _, j := range journals {
		data, err := os.ReadFile(j)
		if err != nil {
			e.t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i, line := range lines {
			var ev struct{ Event, Address, Outcome string }
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				if i < len(lines)-1 {
					e.t.Fatalf("journal line %d is damaged: %q", i+1, line)
				}
				continue // the last, cut by the kill (or "")
			}
			if ev.Event != "resource_end" || ev.Outcome != "changed" || !strings.HasPrefix(ev.Address, "file[") {
				continue
			}
			path := strings.TrimSuffix(strings.TrimPrefix(ev.Address, "file["), "]")
			if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "# new\n") {
				e.t.Fatalf("the journal says %s changed, but it holds %q", path, b)
			}
		}
	}
}
