package commands

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

type streamedLine struct{ stream, line string }

// live_stream shows a command's output line by line while it runs (issue
// 10.14): a real process prints a line, then waits for the test to open a
// gate before it prints the next and ends.
func TestLiveStreamLinesArriveWhileTheCommandRuns(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  resources.Type
		vals map[string]any
	}{
		{"execute", ExecuteType(), map[string]any{"command": `echo first; echo warning >&2; while [ ! -e "$GATE" ]; do sleep 0.01; done; echo second`}},
		{"bash", BashType(), map[string]any{"code": `echo first; echo warning >&2; while [[ ! -e $GATE ]]; do sleep 0.01; done; echo second`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "gate")
			c.vals["live_stream"] = true
			c.vals["environment"] = map[string]string{"GATE": gate}
			r := resourcetest.RunRes(t, c.typ, "slow", c.vals)
			st, step := resourcetest.Plan(t, c.typ, r)
			lines := make(chan streamedLine, 16)
			env := resourcetest.TestEnv(t)
			env.Output = func(stream, line string) { lines <- streamedLine{stream, line} }
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel() // a failed test does not leave the command waiting
			done := make(chan error, 1)
			go func() { done <- resources.ConvergeStep(ctx, c.typ, env, r, st, step) }()

			got := map[streamedLine]bool{}
			for len(got) < 2 {
				select {
				case l := <-lines:
					got[l] = true
				case err := <-done:
					t.Fatalf("the command ended (%v) before its first lines were shown: %v", err, got)
				case <-time.After(20 * time.Second):
					t.Fatalf("no line shown while the command runs: %v", got)
				}
			}
			if !got[streamedLine{"stdout", "first"}] || !got[streamedLine{"stderr", "warning"}] {
				t.Fatalf("first lines %v", got)
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if l := <-lines; l != (streamedLine{"stdout", "second"}) {
				t.Errorf("last line %v", l)
			}
		})
	}
}

// collectOutput converges r with an Env whose Output records every line.
func collectOutput(t *testing.T, typ resources.Type, r *resources.Resource, sensitive bool) ([]streamedLine, error) {
	t.Helper()
	var mu sync.Mutex
	var got []streamedLine
	env := resourcetest.TestEnv(t)
	env.Sensitive = sensitive
	env.Output = func(stream, line string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, streamedLine{stream, line})
	}
	st, step := resourcetest.Plan(t, typ, r)
	err := resources.ConvergeStep(context.Background(), typ, env, r, st, step)
	mu.Lock()
	defer mu.Unlock()
	return got, err
}

// A hostile command cannot drive the terminal through live_stream: every
// control character reaches Env.Output escaped.
func TestLiveStreamEscapesControlCharacters(t *testing.T) {
	typ := ExecuteType()
	r := resourcetest.RunRes(t, typ, "x", map[string]any{
		"command":     `printf '\033]0;owned\007\033[2J\033[31mred\r\n\342\200\256txt.exe\n'; printf 'bell\007\n' >&2`,
		"live_stream": true,
	})
	got, err := collectOutput(t, typ, r, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[streamedLine]bool{
		{"stdout", `\x1b]0;owned\x07\x1b[2J\x1b[31mred`}: true,
		{"stdout", `\u202etxt.exe`}:                      true,
		{"stderr", `bell\x07`}:                           true,
	}
	if len(got) != len(want) {
		t.Fatalf("lines %q", got)
	}
	for _, l := range got {
		if !want[l] {
			t.Errorf("unexpected line %q", l)
		}
	}
}

// Nothing is streamed without live_stream, or for a sensitive resource;
// a failing command's error still carries its output.
func TestLiveStreamWhenNot(t *testing.T) {
	typ := ExecuteType()
	quiet := resourcetest.RunRes(t, typ, "x", map[string]any{"command": "echo hello"})
	if got, err := collectOutput(t, typ, quiet, false); err != nil || len(got) != 0 {
		t.Errorf("without live_stream: %q %v", got, err)
	}
	secret := resourcetest.RunRes(t, typ, "x", map[string]any{"command": "echo s3cret", "live_stream": true})
	if got, err := collectOutput(t, typ, secret, true); err != nil || len(got) != 0 {
		t.Errorf("a sensitive resource streamed %q %v", got, err)
	}
	failing := resourcetest.RunRes(t, typ, "x", map[string]any{"command": "echo before-failing; exit 3", "live_stream": true})
	got, err := collectOutput(t, typ, failing, false)
	if len(got) != 1 || got[0].line != "before-failing" {
		t.Errorf("streamed %q", got)
	}
	if err == nil || !strings.Contains(err.Error(), "before-failing") {
		t.Errorf("the error lost the output: %v", err)
	}
}
