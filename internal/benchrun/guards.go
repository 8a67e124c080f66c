package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
)

// benchGuards times `toque plan` on n execute resources, each with a
// not_if script guard that is true (so every resource is skipped and the
// plan's work is the guards), at -parallelism=1 and at par, against the
// same recipes without guards, and against the physical floor measured in
// the same run: n `sh -c true` processes started from Go, one at a time
// and two at a time.
func benchGuards(work, bin string, n, runs, par int) {
	dir := filepath.Join(work, "guards")
	guarded, bare := filepath.Join(dir, "guarded"), filepath.Join(dir, "bare")
	check(os.MkdirAll(guarded, 0o755))
	check(os.MkdirAll(bare, 0o755))
	var g, b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&g, "execute \"step-%05d\" {\n  command = \"echo %d\"\n  not_if  = \"true\"\n}\n\n", i, i)
		fmt.Fprintf(&b, "execute \"step-%05d\" {\n  command = \"echo %d\"\n}\n\n", i, i)
	}
	check(os.WriteFile(filepath.Join(guarded, "main.hcl"), g.Bytes(), 0o644))
	check(os.WriteFile(filepath.Join(bare, "main.hcl"), b.Bytes(), 0o644))
	env := append(os.Environ(), "TOQUE_STATE_DIR="+filepath.Join(dir, "state"), "TOQUE_HOST_LOCK="+filepath.Join(dir, "host.lock"), "NO_COLOR=1")

	median := func(f func() time.Duration) time.Duration {
		var ds []time.Duration
		for r := 0; r < runs; r++ {
			ds = append(ds, f())
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	plan := func(recipes string, p int) time.Duration {
		return median(func() time.Duration {
			return timed(env, bin, "-chdir="+recipes, "plan", "-parallelism="+strconv.Itoa(p)).wall
		})
	}
	floor := func(workers int) time.Duration {
		return median(func() time.Duration { return spawnLoop(n, workers) })
	}

	fmt.Printf("\nguards: %d execute resources, each with not_if = \"true\" (all skipped); median of %d runs, %d CPUs\n", n, runs, numCPU())
	bare1, guarded1 := plan(bare, 1), plan(guarded, 1)
	bareP, guardedP := plan(bare, par), plan(guarded, par)
	floor1, floor2 := floor(1), floor(2)
	per := func(d time.Duration) time.Duration { return d / time.Duration(n) }
	fmt.Printf("%-44s %10s %14s\n", "measurement", "total", "per resource")
	fmt.Printf("%-44s %10s %14s\n", "plan, no guards, -parallelism=1", bare1.Round(time.Millisecond), per(bare1))
	fmt.Printf("%-44s %10s %14s\n", "plan, guarded, -parallelism=1", guarded1.Round(time.Millisecond), per(guarded1))
	fmt.Printf("%-44s %10s %14s\n", fmt.Sprintf("plan, no guards, -parallelism=%d", par), bareP.Round(time.Millisecond), per(bareP))
	fmt.Printf("%-44s %10s %14s\n", fmt.Sprintf("plan, guarded, -parallelism=%d", par), guardedP.Round(time.Millisecond), per(guardedP))
	fmt.Printf("%-44s %10s %14s\n", "floor: sh -c true from Go, 1 at a time", floor1.Round(time.Millisecond), per(floor1))
	fmt.Printf("%-44s %10s %14s\n", "floor: sh -c true from Go, 2 at a time", floor2.Round(time.Millisecond), per(floor2))
	g1 := per(guarded1 - bare1)
	fmt.Printf("per-guard cost at -parallelism=1: %s (guarded minus unguarded plan), %.2f× the floor's %s\n", g1, float64(g1)/float64(per(floor1)), per(floor1))
	fmt.Printf("speed-up from -parallelism=1 to %d: %.2f× (the floor's from 1 to 2 workers: %.2f×)\n", par, float64(guarded1)/float64(guardedP), float64(floor1)/float64(floor2))
}

// spawnLoop starts n `sh -c true` processes with os/exec, workers at a
// time, and returns the wall time.
func spawnLoop(n, workers int) time.Duration {
	start := time.Now()
	jobs := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				check(exec.Command("/bin/sh", "-c", "true").Run())
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}
