//go:build toque_pprof

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"time"
)

// startProfiling, in a build with the toque_pprof tag (made by
// internal/benchrun -profile), writes a CPU profile and an execution trace
// of the whole run and,
// at its end, a heap profile (allocations and what is in use) into
// TOQUE_PPROF_DIR. Release builds have none of this (main_noprof.go).
func startProfiling() (stop func()) {
	dir := os.Getenv("TOQUE_PPROF_DIR")
	if dir == "" {
		return func() {}
	}
	fail := func(err error) func() {
		fmt.Fprintln(os.Stderr, "toque_pprof:", err)
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return fail(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fail(err)
	}
	// An execution trace too (go tool trace): where the wall time goes
	// when the CPU profile does not say (waiting, one core idle).
	tf, err := os.Create(filepath.Join(dir, "trace.out"))
	if err != nil {
		pprof.StopCPUProfile()
		f.Close()
		return fail(err)
	}
	if err := trace.Start(tf); err != nil {
		tf.Close()
		tf = nil
	}
	done := make(chan struct{})
	go samplePeakHeap(dir, done)
	return func() {
		close(done)
		if tf != nil {
			trace.Stop()
			tf.Close()
		}
		pprof.StopCPUProfile()
		f.Close()
		h, err := os.Create(filepath.Join(dir, "heap.pprof"))
		if err != nil {
			fail(err)
			return
		}
		defer h.Close()
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(h, 0); err != nil {
			fail(err)
		}
	}
}

// samplePeakHeap writes peak-heap.pprof (the in-use heap as of the last
// collection) each time the live heap grows by a quarter over the last
// one written, so that the file left is the heap near its peak.
func samplePeakHeap(dir string, done <-chan struct{}) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var written uint64
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if live < written+written/4 || live < 8<<20 {
			continue
		}
		written = live
		if f, err := os.Create(filepath.Join(dir, "peak-heap.pprof")); err == nil {
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
}
