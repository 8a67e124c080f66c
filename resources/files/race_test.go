package files

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// The race tests: a goroutine plays a local user with write access to a
// directory a recipe manages a path in, and swaps what is at that path (or
// at its parent) between nothing, a symbolic link to a sentinel and a hard
// link to it, as fast as it can, while Load, Plan and Converge run in a
// loop exactly as apply runs them right before converging. Whatever each
// attempt ends in (converged, or refused with an error), the sentinel's
// content, mode, owner and times must never change: zero writes outside
// the plan.

// raceAttempts is how many Load/Plan/Converge rounds each test races.
const raceAttempts = 1000

// sentinel is a file or directory the attacker aims at, with what it must
// keep.
type sentinel struct {
	path string
	st   syscall.Stat_t
	data string
}

func newSentinel(t *testing.T, path string, dir bool) *sentinel {
	t.Helper()
	s := &sentinel{path: path}
	if dir {
		mkdir(t, path, 0o700)
	} else {
		s.data = "sentinel: root only\n"
		resourcetest.WriteFile(t, path, s.data, 0o600)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Lstat(path, &s.st); err != nil {
		t.Fatal(err)
	}
	return s
}

// check fails the test when the sentinel changed.
func (s *sentinel) check(t *testing.T, attempt int) {
	t.Helper()
	var now syscall.Stat_t
	if err := syscall.Lstat(s.path, &now); err != nil {
		t.Fatalf("attempt %d: the sentinel is gone: %v", attempt, err)
	}
	if now.Mode != s.st.Mode || now.Uid != s.st.Uid || now.Gid != s.st.Gid || now.Mtim != s.st.Mtim || now.Ino != s.st.Ino {
		t.Fatalf("attempt %d: the sentinel %s changed: mode %o→%o, owner %d:%d→%d:%d, mtime %v→%v",
			attempt, s.path, s.st.Mode, now.Mode, s.st.Uid, s.st.Gid, now.Uid, now.Gid, s.st.Mtim, now.Mtim)
	}
	if s.data != "" {
		if b, err := os.ReadFile(s.path); err != nil || string(b) != s.data {
			t.Fatalf("attempt %d: the sentinel's content changed: %q, %v", attempt, b, err)
		}
	}
	var dir syscall.Stat_t
	if now.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		if entries, err := os.ReadDir(s.path); err != nil || len(entries) != 0 {
			t.Fatalf("attempt %d: something was created in the sentinel directory: %v %v", attempt, entries, err)
		}
	} else if err := syscall.Lstat(filepath.Dir(s.path), &dir); err != nil {
		t.Fatal(err)
	}
}

// swapper is the attacker: it swaps what is at path, by atomic renames
// from a scratch name in the same directory, until stopped. moves are the
// states it cycles through.
type swapper struct {
	stop  chan struct{}
	done  sync.WaitGroup
	swaps atomic.Int64
}

// swapMove puts one state at path: nothing, or what make builds at tmp,
// renamed over path (a rename cannot replace a non-empty directory: then
// the directory is removed first).
type swapMove func(tmp string) error

// startSwapper starts the attacker and waits until it made wait swaps, so
// that what it does overlaps what is raced against it in every phase.
func startSwapper(path string, wait int64, moves []swapMove) *swapper {
	s := &swapper{stop: make(chan struct{})}
	ready := make(chan struct{})
	defer func() { <-ready }()
	tmp := filepath.Join(filepath.Dir(path), ".attacker")
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		for i := 0; ; i++ {
			if int64(i) == wait {
				close(ready)
			}
			select {
			case <-s.stop:
				return
			default:
			}
			move := moves[i%len(moves)]
			if move == nil {
				os.RemoveAll(path)
			} else {
				os.RemoveAll(tmp)
				if move(tmp) == nil {
					if err := os.Rename(tmp, path); err != nil {
						os.RemoveAll(path)
						os.Rename(tmp, path)
					}
				}
			}
			s.swaps.Add(1)
		}
	}()
	return s
}

func (s *swapper) halt() int64 {
	close(s.stop)
	s.done.Wait()
	return s.swaps.Load()
}

func linkTo(target string) swapMove {
	return func(tmp string) error { return os.Symlink(target, tmp) }
}

func hardLinkTo(target string) swapMove {
	return func(tmp string) error { return os.Link(target, tmp) }
}

func emptyDir(tmp string) error { return os.Mkdir(tmp, 0o755) }

// raceTally counts how the attempts ended, to show the race was run:
// refused by Load or Plan, or by Converge (which ran with the attacker
// active), or converged.
type raceTally struct{ refusedEarly, refused, converged int }

// raceOnce is what apply does right before converging one resource: Load,
// Plan, and Converge the step Plan gives (whatever it is: a create that
// became an update of the same properties is allowed by apply). attack
// starts the attacker: before Load when early, otherwise right after Plan,
// so that it acts in the window between what Converge was told and what
// it changes.
func raceOnce(t *testing.T, early bool, typ resources.Type, env *resources.Env, r *resources.Resource, attack func() *swapper, tally *raceTally) {
	var sw *swapper
	if early {
		sw = attack()
	}
	defer func() {
		if sw != nil {
			sw.halt()
		}
	}()
	st, err := typ.Load(t.Context(), r.LoadView())
	if err != nil {
		tally.refusedEarly++
		return
	}
	step, err := resources.PlanStep(typ, r, st)
	if err != nil {
		tally.refusedEarly++
		return
	}
	if sw == nil {
		sw = attack()
	}
	if err := resources.ConvergeStep(t.Context(), typ, env, r, st, step); err != nil {
		var ule *UnsafeLinkError
		if !errors.Is(err, ErrChanged) && !errors.As(err, &ule) && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			t.Logf("converge error: %v", err)
		}
		tally.refused++
		return
	}
	tally.converged++
}

// raceWorld is a directory every user can write (the attacker's way in),
// and a sentinel file and directory in a directory only root can write.
type raceWorld struct {
	drop       string
	secretFile *sentinel
	secretDir  *sentinel
}

func newRaceWorld(t *testing.T) *raceWorld {
	base := tmpfsDir(t)
	w := &raceWorld{drop: filepath.Join(base, "drop")}
	mkdir(t, w.drop, 0o777)
	vault := filepath.Join(base, "vault")
	mkdir(t, vault, 0o755)
	w.secretFile = newSentinel(t, filepath.Join(vault, "target"), false)
	w.secretDir = newSentinel(t, filepath.Join(vault, "newdir"), true)
	return w
}

// tmpfsDir is a temporary directory on a tmpfs when /dev/shm is one
// (fsync is free there, and a race converges hundreds of times), else
// t.TempDir().
func tmpfsDir(t testing.TB) string {
	var fs syscall.Statfs_t
	if syscall.Statfs("/dev/shm", &fs) == nil && fs.Type == 0x01021994 { // TMPFS_MAGIC
		if dir, err := os.MkdirTemp("/dev/shm", "toque-race-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// ownerIfRoot sets owner and group to nobody when the test runs as root,
// so that a chown through a link would show on the sentinel.
func ownerIfRoot(vals map[string]any) map[string]any {
	if os.Geteuid() == 0 {
		vals["owner"], vals["group"] = "65534", "65534"
	}
	return vals
}

func TestRaceFileSymlinkSwap(t *testing.T) {
	ft := FileType()
	w := newRaceWorld(t)
	vault := filepath.Dir(w.secretFile.path)
	target := filepath.Join(w.drop, "target")
	sub := filepath.Join(w.drop, "sub")
	env := resourcetest.TestEnv(t)
	finalSwap := []swapMove{linkTo(w.secretFile.path), nil, hardLinkTo(w.secretFile.path), nil}
	var tally raceTally
	start := time.Now()
	for i := range raceAttempts {
		// Each attempt starts from a clean state: nothing at the path (or
		// a file of its own, for an update), in a real directory.
		os.RemoveAll(target)
		os.RemoveAll(sub)
		mkdir(t, sub, 0o777)
		path, swapped, moves := target, target, finalSwap
		vals := ownerIfRoot(map[string]any{"content": "planned\n", "mode": "0644"})
		switch scenario := i % 6; scenario {
		case 1: // the parent is swapped for a link to the sentinel's directory
			path, swapped, moves = filepath.Join(sub, "target"), sub, []swapMove{linkTo(vault), emptyDir}
		case 2, 4: // rewritten in place
			vals["atomic_update"] = false
		case 5: // the recipe asks to follow a link at the path
			vals["manage_symlink_source"] = true
		}
		if s := i % 6; s == 3 || s == 4 {
			resourcetest.WriteFile(t, target, "old\n", 0o644) // an update
		}
		vals["path"] = path
		wait := int64(i/2) % 5
		attack := func() *swapper { return startSwapper(swapped, wait, moves) }
		raceOnce(t, (i/6)%3 == 0, ft, env, resourcetest.NewRes(t, ft, "", vals), attack, &tally)
		w.secretFile.check(t, i)
	}
	t.Logf("%d attempts in %v: %+v", raceAttempts, time.Since(start).Round(time.Millisecond), tally)
	if tally.converged == 0 || tally.refused == 0 {
		t.Fatalf("the race was not run both ways: %+v", tally)
	}
}

func TestRaceDirectorySymlinkSwap(t *testing.T) {
	dt := DirectoryType()
	w := newRaceWorld(t)
	vault := filepath.Dir(w.secretDir.path)
	target := filepath.Join(w.drop, "newdir")
	sub := filepath.Join(w.drop, "sub")
	env := resourcetest.TestEnv(t)
	var tally raceTally
	start := time.Now()
	for i := range raceAttempts {
		os.RemoveAll(target)
		os.RemoveAll(sub)
		mkdir(t, sub, 0o777)
		var path string
		var attack func() *swapper
		if i%2 == 0 {
			path = target
			attack = func() *swapper { return startSwapper(target, int64(i%5), []swapMove{linkTo(w.secretDir.path), nil}) }
		} else {
			path = filepath.Join(sub, "newdir")
			attack = func() *swapper { return startSwapper(sub, int64(i%5), []swapMove{linkTo(vault), emptyDir}) }
		}
		vals := ownerIfRoot(map[string]any{"path": path, "mode": "0755"})
		if i%4 == 3 {
			vals["manage_symlink_source"] = true
		}
		raceOnce(t, i%3 == 0, dt, env, resourcetest.NewRes(t, dt, "", vals), attack, &tally)
		w.secretDir.check(t, i)
	}
	t.Logf("%d attempts in %v: %+v", raceAttempts, time.Since(start).Round(time.Millisecond), tally)
	if tally.converged == 0 || tally.refused == 0 {
		t.Fatalf("the race was not run both ways: %+v", tally)
	}
}

func TestRaceLinkParentSwap(t *testing.T) {
	lt := LinkType()
	w := newRaceWorld(t)
	vault := filepath.Dir(w.secretFile.path)
	sub := filepath.Join(w.drop, "sub")
	env := resourcetest.TestEnv(t)
	var tally raceTally
	start := time.Now()
	for i := range raceAttempts {
		// A real directory again (the last attempt may have left a link
		// to the vault, which the attacker's own removals would go
		// through).
		os.RemoveAll(sub)
		mkdir(t, sub, 0o777)
		path := filepath.Join(sub, "target")
		var attack func() *swapper
		if i%2 == 0 {
			attack = func() *swapper { return startSwapper(sub, int64(i%5), []swapMove{linkTo(vault), emptyDir}) }
		} else {
			attack = func() *swapper {
				return startSwapper(path, int64(i%5), []swapMove{hardLinkTo(w.secretFile.path), linkTo("elsewhere"), nil})
			}
		}
		raceOnce(t, i%3 == 0, lt, env, resourcetest.NewRes(t, lt, "", ownerIfRoot(map[string]any{"target_file": path, "to": "planned"})), attack, &tally)
		w.secretFile.check(t, i)
		if entries, _ := os.ReadDir(vault); len(entries) != 2 {
			t.Fatalf("attempt %d: a link was made in the vault: %v", i, entries)
		}
	}
	t.Logf("%d attempts in %v: %+v", raceAttempts, time.Since(start).Round(time.Millisecond), tally)
	if tally.converged == 0 || tally.refused == 0 {
		t.Fatalf("the race was not run both ways: %+v", tally)
	}
}
