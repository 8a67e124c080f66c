package shellexec

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// Spec.Stdout with a LimitedBuffer: what fits is kept whole, in the
// buffer only; past Max the buffer lets go of it and the reading stops,
// so the process's next write fails (SIGPIPE) instead of Run draining
// everything it prints. Standard error is still kept as a tail, and lines
// still reach the logger.
func TestLimitedStdout(t *testing.T) {
	ctx := context.Background()
	out := &LimitedBuffer{Max: 1 << 20}
	s := sh(`head -c 1000 /dev/zero | tr '\0' x; echo; echo err >&2`)
	s.Stdout = out
	var logged strings.Builder
	s.Logger = hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Debug})
	res, err := Run(ctx, s)
	if err != nil || out.Over() || len(out.Bytes()) != 1001 || res.Stdout != "" || res.Stderr != "err\n" || res.Truncated {
		t.Fatalf("fits: %v, over %v, %d bytes, %+v", err, out.Over(), len(out.Bytes()), res)
	}
	if !strings.Contains(logged.String(), "line="+strings.Repeat("x", 1000)) {
		t.Errorf("the line did not reach the logger:\n%.300s", logged.String())
	}

	// 10 GiB would take a while: the writer is stopped once past Max.
	out = &LimitedBuffer{Max: 1 << 20}
	s = sh(`head -c 10737418240 /dev/zero; echo "exit $?" >&2`)
	s.Stdout = out
	res, err = Run(ctx, s)
	if !out.Over() || out.Bytes() != nil {
		t.Fatalf("over: %v, %d bytes held", out.Over(), len(out.Bytes()))
	}
	if err != nil || res.Stderr != "exit 141\n" || res.Duration.Seconds() > 5 {
		t.Errorf("head was not stopped by SIGPIPE (exit 141 in sh): %v, %+v", err, res)
	}
}

// The tail of a stream is kept in place: printing far past OutputLimit
// costs no allocation per write.
func TestOutputTailAllocatesOnce(t *testing.T) {
	c := newCapture("stdout", 64<<10, nil, nil)
	chunk := make([]byte, 32<<10)
	for i := 0; i < 16; i++ {
		c.write(chunk) // grown to its size
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < 4096; i++ { // 128 MiB
		c.write(chunk)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("printing 128 MiB past the limit allocated %d KiB", n>>10)
	}
	if out, truncated := c.result(); len(out) != 64<<10 || !truncated {
		t.Errorf("tail of %d bytes, truncated %v", len(out), truncated)
	}
}

// LimitedBuffer keeps exactly what was written, across chunks, up to
// Max and not a byte more.
func TestLimitedBufferChunks(t *testing.T) {
	for _, max := range []int{0, 1, 4 << 10, 5 << 20} {
		b := &LimitedBuffer{Max: max}
		var want []byte
		for i := 0; ; i++ {
			p := []byte(strings.Repeat(string(rune('a'+i%26)), 1+i*997%70000))
			if len(want)+len(p) > max {
				if n, err := b.Write(p); n != 0 || err != ErrOutputLimit || !b.Over() || b.Bytes() != nil {
					t.Fatalf("max %d: past it: %d, %v, over %v", max, n, err, b.Over())
				}
				break
			}
			if n, err := b.Write(p); n != len(p) || err != nil {
				t.Fatalf("max %d: write %d: %d, %v", max, len(p), n, err)
			}
			want = append(want, p...)
			if got := b.Bytes(); string(got) != string(want) {
				t.Fatalf("max %d: %d bytes kept, want %d", max, len(got), len(want))
			}
		}
		if n, _ := b.Write([]byte("x")); n != 0 {
			t.Fatalf("max %d: a write after the limit was kept", max)
		}
	}
}
