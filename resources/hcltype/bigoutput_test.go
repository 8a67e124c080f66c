package hcltype

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// A load_current_value that prints far more than it may (1 GiB, on
// standard output or on standard error) is cut without toque holding
// what it printed: what the reading allocates stays within a few times
// the 64 MiB cap, whatever the script prints (before, it grew with the
// output: about 1.5 GiB allocated, 700 MB resident for 2 GB printed).
// Standard error is only ever shown as a tail: printing much there is not
// an error. The figures are logged (go test -v -run TestCustomLoadBigOutput).
func TestCustomLoadBigOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("prints 1 GiB through a pipe")
	}
	const gib = "1073741824"
	cases := []struct {
		name, script, want string
	}{
		{"standard output", `head -c ` + gib + ` /dev/zero`, "load_current_value of kv (types.hcl:7:3) printed more than 67108864 bytes on its standard output"},
		{"standard error", `head -c ` + gib + ` /dev/zero >&2; echo '{"value": "v"}'`, ""},
		{"standard output, in a batch", `head -c ` + gib + ` /dev/zero`, "printed more than 67108864 bytes on its standard output"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := newKV(t, c.script, strings.Contains(c.name, "batch"))
			r := kvResource(typ, t.TempDir(), "k", nil).LoadView()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			peak := watchHeap(t)
			start := time.Now()
			st, err := typ.Load(context.Background(), r)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %v; allocated %d MiB, live heap at most %d MiB", c.name, took.Round(time.Millisecond), allocated>>20, peak()>>20)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("want an error with %q, got %v", c.want, err)
				}
			} else if err != nil || st.Values["value"].AsString() != "v" {
				t.Fatalf("got %v, %+v", err, st)
			}
			if allocated > 256<<20 {
				t.Errorf("reading allocated %d MiB for a script that printed 1 GiB: the output is held, not capped", allocated>>20)
			}
		})
	}
}

// watchHeap samples the live heap every millisecond until the test ends;
// the function returns the highest sample so far.
func watchHeap(t *testing.T) func() uint64 {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			mu.Lock()
			peak = max(peak, s[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(done); wg.Wait() })
	return func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
