//go:build toque_pprof

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// startProfiling, in a build with the toque_pprof tag (made by
// internal/benchrun -profile), writes a CPU profile of the whole run and,
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
	return func() {
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
