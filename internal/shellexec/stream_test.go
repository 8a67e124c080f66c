package shellexec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type streamed struct{ stream, line string }

// Output receives each line as the process prints it, before the process
// ends, while Result still holds the whole output.
func TestOutputStreamsLinesAsTheyCome(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	lines := make(chan streamed, 16)
	s := sh(`echo first; echo warn >&2; while [ ! -e "$GATE" ]; do sleep 0.01; done; echo second; printf 'no newline'`)
	s.Env = map[string]string{"GATE": gate}
	s.Output = func(stream, line string) { lines <- streamed{stream, line} }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel() // a failed test does not leave the process waiting
	done := make(chan *Result, 1)
	go func() {
		res, err := Run(ctx, s)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()

	// The first lines come while the process waits for the gate.
	got := map[streamed]bool{}
	for len(got) < 2 {
		select {
		case l := <-lines:
			got[l] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("no line before the process ended; got %v", got)
		}
	}
	if !got[streamed{"stdout", "first"}] || !got[streamed{"stderr", "warn"}] {
		t.Fatalf("first lines: %v", got)
	}
	select {
	case <-done:
		t.Fatal("the process ended before the gate opened")
	default:
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	close(lines)
	var rest []streamed
	for l := range lines {
		rest = append(rest, l)
	}
	if want := []streamed{{"stdout", "second"}, {"stdout", "no newline"}}; len(rest) != 2 || rest[0] != want[0] || rest[1] != want[1] {
		t.Errorf("later lines %v, want %v", rest, want)
	}
	if res.Stdout != "first\nsecond\nno newline" || res.Stderr != "warn\n" {
		t.Errorf("captured %q %q", res.Stdout, res.Stderr)
	}
}

// Lines come raw (escaping is the caller's), without CR LF, long lines in
// pieces; calls never overlap; a sensitive Spec never streams.
func TestOutputLines(t *testing.T) {
	var mu sync.Mutex
	busy := false
	var got []streamed
	collect := func(stream, line string) {
		mu.Lock()
		if busy {
			t.Error("overlapping Output calls")
		}
		busy = true
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		busy = false
		got = append(got, streamed{stream, line})
		mu.Unlock()
	}
	s := sh(`printf 'crlf\r\n\033[31mred\n'; for i in 1 2 3 4 5; do echo err$i >&2; echo out$i; done; head -c 5000 /dev/zero | tr '\0' x; echo`)
	s.Output = collect
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	var out, errs []string
	for _, l := range got {
		if l.stream == "stdout" {
			out = append(out, l.line)
		} else {
			errs = append(errs, l.line)
		}
	}
	want := []string{"crlf", "\x1b[31mred", "out1", "out2", "out3", "out4", "out5", strings.Repeat("x", maxLogLine), strings.Repeat("x", 5000-maxLogLine)}
	if strings.Join(out, "|") != strings.Join(want, "|") {
		t.Errorf("stdout lines %q", out)
	}
	if strings.Join(errs, "|") != "err1|err2|err3|err4|err5" {
		t.Errorf("stderr lines %q", errs)
	}

	got = nil
	s.Sensitive = true
	res, err := Run(context.Background(), s)
	if err != nil || len(got) != 0 {
		t.Fatalf("a sensitive process streamed %d lines (%v)", len(got), err)
	}
	if !strings.Contains(res.Stdout, "out5") {
		t.Errorf("a sensitive process's output is still captured, got %q", res.Stdout)
	}
}

func TestPieceEndKeepsCharactersWhole(t *testing.T) {
	ascii := []byte(strings.Repeat("x", maxLogLine+10))
	if got := pieceEnd(ascii); got != maxLogLine {
		t.Errorf("ASCII: cut at %d", got)
	}
	straddle := []byte(strings.Repeat("x", maxLogLine-1) + "é" + "yyy") // é's second byte at maxLogLine
	if got := pieceEnd(straddle); got != maxLogLine-1 {
		t.Errorf("a two-byte character across the cut: cut at %d, want %d", got, maxLogLine-1)
	}
	euro := []byte(strings.Repeat("x", maxLogLine-2) + "€" + "y") // € is 3 bytes
	if got := pieceEnd(euro); got != maxLogLine-2 {
		t.Errorf("a three-byte character across the cut: cut at %d, want %d", got, maxLogLine-2)
	}
}
