package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/toquehq/toque/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/scripts/*.txtar with what toque prints now (review the diff)")

// TestScripts runs the scenarios of testdata/scripts, one txtar file each
// (see testdata/scripts/README.md for what a script may use). The scripts
// run side by side, each in a work directory of its own with its own
// state directory and host-wide lock.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/scripts",
		WorkdirRoot:         scriptWorkRoot(t),
		Setup:               setupScript,
		Cmds:                scriptCmds,
		Condition:           scriptCondition,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
	})
}

// scriptWorkRoot makes the directory the scripts' work directories go in:
// /tmp/toque-e2e-XXXXXXXX, whose name has the same length on every run
// and every machine, so that where toque breaks a line that holds a path
// does not move (golden files hold the scrubbed text: $ROOT, $WORK). It is
// removed when every script has ended. Other users may enter it, as they
// may enter /etc: toque shows only content every user may read.
func scriptWorkRoot(t *testing.T) string {
	t.Helper()
	for range 100 {
		b := make([]byte, 4)
		rand.Read(b)
		dir := "/tmp/toque-e2e-" + hex.EncodeToString(b)
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	t.Fatal("no free name for the scripts' work directory in /tmp")
	return ""
}

// The names of what setupScript keeps for the commands.
type tbKey struct{}

// statusEnv names the file where toque, run by a script, writes its exit
// status for the status command.
const statusEnv = "E2E_TOQUE_STATUS"

// setupScript gives a script its environment: toque's state directory and
// host-wide lock in its work directory, no colour, ROOT (an empty scratch
// root for the recipes to manage) and EXAMPLES (the repository's
// examples). In the archive's files, but for those under golden/, $ROOT,
// $EXAMPLES and $WORK are replaced with those directories: recipes name
// the paths they manage literally.
func setupScript(env *testscript.Env) error {
	tb, ok := env.T().(testing.TB)
	if !ok {
		return errors.New("testscript's T is not a testing.TB")
	}
	env.Values[tbKey{}] = tb
	work := env.WorkDir
	vars := map[string]string{
		"ROOT":            filepath.Join(work, "root"),
		"EXAMPLES":        filepath.Join(repoRoot, "examples"),
		"TOQUE_STATE_DIR": filepath.Join(work, "state"),
		"TOQUE_HOST_LOCK": filepath.Join(work, "run", "apply.lock"),
		"NO_COLOR":        "1",
		statusEnv:         filepath.Join(work, ".tmp", "toque-status"),
	}
	if err := os.Chmod(work, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(vars["ROOT"], 0o755); err != nil {
		return err
	}
	expand := strings.NewReplacer("$ROOT", vars["ROOT"], "$EXAMPLES", vars["EXAMPLES"], "$WORK", work)
	err := filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == work {
			return err
		}
		rel, _ := filepath.Rel(work, p)
		if d.IsDir() {
			if rel == "golden" || rel == ".tmp" || rel == "root" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if s := expand.Replace(string(b)); s != string(b) {
			return os.WriteFile(p, []byte(s), 0o644)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, v := range vars {
		env.Setenv(k, v)
	}
	return nil
}

// scriptCondition knows [root]: the tests run as root.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "root":
		return os.Geteuid() == 0, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// The commands scripts have besides testscript's own.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"status":   cmdStatus,
	"needs":    cmdNeeds,
	"snapshot": cmdSnapshot,
	"cmpmode":  cmdCmpmode,
	"cmplink":  cmdCmplink,
	"scrub":    cmdScrub,
	"hostns":   cmdHostNS,
}

// status N: the last toque the script ran (exec toque) exited N.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: status N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	f := ts.Getenv(statusEnv)
	b, err := os.ReadFile(f)
	if err != nil {
		ts.Fatalf("no exit status: toque did not end normally, or never ran (%v)", err)
	}
	os.Remove(f)
	got, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	if got != want {
		ts.Fatalf("toque exited %d, want %d", got, want)
	}
}

// needs REQ...: the script runs only where the machine meets each of
// internal/testenv's requirements (bash, root, unshare…); elsewhere it
// skips, saying why, or fails in CI's strict tiers.
func cmdNeeds(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: needs REQUIREMENT...")
	}
	reqs := make([]testenv.Requirement, len(args))
	for i, a := range args {
		reqs[i] = testenv.Requirement(a)
	}
	testenv.MustHave(ts.Value(tbKey{}).(testing.TB), reqs...)
}

// snapshot DIR FILE writes to FILE one line per entry under DIR — its
// path, mode, and the digest of a file's content or a link's target — so
// that `cmp` of two snapshots proves nothing under DIR changed.
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: snapshot DIR FILE")
	}
	dir := ts.MkAbs(args[0])
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %s", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", l)
		case fi.Mode().IsRegular():
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(c)
			fmt.Fprintf(&b, " %d %x", len(c), sum[:8])
		}
		b.WriteByte('\n')
		return nil
	})
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(b.String()), 0o644))
}

// cmpmode MODE PATH: PATH's permission bits are MODE (octal), not
// following a link.
func cmdCmpmode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: cmpmode MODE PATH")
	}
	want, err := strconv.ParseUint(args[0], 8, 32)
	ts.Check(err)
	fi, err := os.Lstat(ts.MkAbs(args[1]))
	ts.Check(err)
	if got := uint64(fi.Mode().Perm()); (got == want) == neg {
		ts.Fatalf("%s has mode %04o, want %s%04o", args[1], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// cmplink LINK TARGET: LINK is a symbolic link to TARGET.
func cmdCmplink(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cmplink LINK TARGET")
	}
	got, err := os.Readlink(ts.MkAbs(args[0]))
	ts.Check(err)
	if got != args[1] {
		ts.Fatalf("%s links to %s, want %s", args[0], got, args[1])
	}
}

// scrub: the last command's stdout and stderr, scrubbed as toque's own
// output is, for what a script reads itself (a report, jq's output).
func cmdScrub(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: scrub")
	}
	s := newScrubber(ts.Getenv)
	stdout, stderr := ts.ReadFile("stdout"), ts.ReadFile("stderr")
	fmt.Fprint(ts.Stdout(), s.line(stdout))
	fmt.Fprint(ts.Stderr(), s.line(stderr))
}

// hostns [net] [cron] gives the script a host namespace (hostNS): a mount
// namespace whose /etc and /var are overlays on the host's and whose
// /home is scratch (net: a network namespace too; cron: /run and /dev for
// a cron daemon). Then `exec ns CMD...` runs CMD in it, in the script's
// directory, and $HOSTNS is the namespace's scratch directory (its home is
// $HOSTNS/home). The namespace ends with the script, which fails if the
// host's accounts or drop-in directories changed. It needs root.
func cmdHostNS(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: hostns [net] [cron]")
	}
	var o nsOptions
	for _, a := range args {
		switch a {
		case "net":
			o.net = true
		case "cron":
			o.cron = true
		default:
			ts.Fatalf("usage: hostns [net] [cron]")
		}
	}
	ns := newHostNS(ts.Value(tbKey{}).(testing.TB), nil, o)
	bin := ts.MkAbs(".bin")
	ts.Check(os.MkdirAll(bin, 0o755))
	nsenter := append([]string{"nsenter", "-t", strconv.Itoa(ns.holder.Process.Pid)}, ns.nsFlags...)
	script := "#!/bin/sh\n# Runs a command in the script's host namespace (hostns).\nexec " + strings.Join(nsenter, " ") + ` --wd="$PWD" -- "$@"` + "\n"
	ts.Check(os.WriteFile(filepath.Join(bin, "ns"), []byte(script), 0o755))
	ts.Setenv("PATH", bin+string(os.PathListSeparator)+ts.Getenv("PATH"))
	ts.Setenv("HOSTNS", ns.dir)
}
