package shellexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPrepare holds run's first step alone: what is refused before
// anything starts, and what a script's launch holds.
func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		spec    Spec
		wantErr func(error) bool
	}{
		{"a command", Spec{Argv: []string{"true"}}, nil},
		{"a missing directory", Spec{Argv: []string{"true"}, Dir: filepath.Join(dir, "none")}, func(err error) bool {
			var de *DirError
			return errors.As(err, &de) && strings.Contains(de.Error(), "does not exist")
		}},
		{"a directory that is a file", Spec{Argv: []string{"true"}, Dir: file}, func(err error) bool {
			var de *DirError
			return errors.As(err, &de) && strings.Contains(de.Error(), "is not a directory")
		}},
		{"a missing command", Spec{Argv: []string{"toque-no-such-command"}}, func(err error) bool {
			var nf *NotFoundError
			return errors.As(err, &nf) && nf.What == "command" && nf.Name == "toque-no-such-command"
		}},
		{"a missing interpreter", Spec{Interpreter: []string{"toque-no-such-shell"}, Script: "true"}, func(err error) bool {
			var nf *NotFoundError
			return errors.As(err, &nf) && nf.What == "interpreter"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := prepare(c.spec, currentSelf())
			if c.wantErr != nil {
				if !c.wantErr(err) || l != nil {
					t.Fatalf("prepare: %v, %+v", err, l)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.script != "" || !filepath.IsAbs(l.exe) || l.args[0] != "true" {
				t.Errorf("launch %+v", l)
			}
		})
	}
	t.Run("a script", func(t *testing.T) {
		l, err := prepare(Spec{Interpreter: []string{"/bin/sh"}, Flags: []string{"-e"}, Script: "echo hi", ScriptSuffix: ".sh"}, currentSelf())
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(l.script)
		b, err := os.ReadFile(l.script)
		if err != nil || string(b) != "echo hi" || !strings.HasSuffix(l.script, ".sh") {
			t.Fatalf("script file %q: %q, %v", l.script, b, err)
		}
		if want := []string{"/bin/sh", "-e", l.script}; strings.Join(l.args, " ") != strings.Join(want, " ") {
			t.Errorf("args %q, want %q", l.args, want)
		}
	})
}

// TestWaitOrKill holds run's wait step alone on real process groups: how
// each ends, and that the step returns only once the process has exited.
func TestWaitOrKill(t *testing.T) {
	cases := []struct {
		name     string
		script   string
		cancel   bool
		timedOut bool
		canceled bool
		signal   syscall.Signal // 0: exited
	}{
		{"exits on its own", "exit 3", false, false, false, 0},
		{"times out", "sleep 30", false, true, false, syscall.SIGTERM},
		{"ignores SIGTERM", "trap '' TERM; while :; do sleep 1; done", false, true, false, syscall.SIGKILL},
		{"cancelled", "sleep 30", true, false, true, syscall.SIGTERM},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Spec{Argv: []string{"/bin/sh", "-c", c.script}, Timeout: time.Second, KillGrace: 300 * time.Millisecond}
			if c.cancel {
				s.Timeout = time.Minute
			}
			l, err := prepare(s, currentSelf())
			if err != nil {
				t.Fatal(err)
			}
			cmd, _, _ := l.command(s, options{})
			waitCh := make(chan error, 1)
			if err := startPlain(cmd, waitCh); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(200*time.Millisecond, cancel)
			}
			start := time.Now()

			_, timedOut, canceled := waitOrKill(ctx, s, cmd.Process.Pid, waitCh)

			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("took %s", elapsed)
			}
			if timedOut != c.timedOut || canceled != c.canceled {
				t.Errorf("timed out %v, canceled %v; want %v, %v", timedOut, canceled, c.timedOut, c.canceled)
			}
			if cmd.ProcessState == nil {
				t.Fatal("returned before the process exited")
			}
			st := cmd.ProcessState.Sys().(syscall.WaitStatus)
			switch {
			case c.signal == 0 && (!st.Exited() || st.ExitStatus() != 3):
				t.Errorf("status %v, want exit 3", st)
			case c.signal != 0 && (!st.Signaled() || st.Signal() != c.signal):
				t.Errorf("status %v, want killed by %v", st, c.signal)
			}
		})
	}
}

// TestJudge holds run's last step alone: whether the exit is allowed,
// and which error says how the process ended.
func TestJudge(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name     string
		ctx      context.Context
		returns  []int
		exit     int
		timedOut bool
		allowed  bool
		err      func(error) bool
	}{
		{"exit 0", context.Background(), nil, 0, false, true, nil},
		{"exit 1", context.Background(), nil, 1, false, false, func(err error) bool {
			var ee *ExitError
			return errors.As(err, &ee) && len(ee.Returns) == 1 && ee.Returns[0] == 0
		}},
		{"exit 1, allowed", context.Background(), []int{0, 1}, 1, false, true, nil},
		{"killed", context.Background(), []int{0}, -1, false, false, func(err error) bool {
			var ee *ExitError
			return errors.As(err, &ee)
		}},
		{"timed out", context.Background(), nil, -1, true, false, func(err error) bool {
			var te *TimeoutError
			return errors.As(err, &te) && te.Timeout == time.Second
		}},
		{"cancelled", cancelled, nil, -1, false, false, func(err error) bool {
			return errors.Is(err, context.Canceled) && strings.HasPrefix(err.Error(), "prog interrupted")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &Result{ExitCode: c.exit}
			err := judge(c.ctx, Spec{Returns: c.returns, Timeout: time.Second}, res, "prog", nil, c.timedOut, c.ctx.Err() != nil)
			if res.Allowed != c.allowed {
				t.Errorf("allowed %v, want %v", res.Allowed, c.allowed)
			}
			if c.err == nil && err != nil || c.err != nil && !c.err(err) {
				t.Errorf("error %T %v", err, err)
			}
		})
	}
}
