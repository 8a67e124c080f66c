package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// customTypesRecipe declares a resource type written in HCL whose
// load_current_value says whether a file exists: BATCH is replaced by
// true (one run reads every resource: a JSON array in, one answer per
// resource out) or false (one run per resource).
const customTypesRecipe = `
resource_type "marker" {
  property "path" {
    type     = string
    identity = true
  }
  property "value" {
    type = string
  }
  load_current_value {
    batch = BATCH
    code  = <<-EOT
      LOAD
    EOT
  }
  action "create" {
    converge_if_changed {
      code = "printf '%s' \"$PROP_VALUE\" > \"$PROP_PATH\""
    }
  }
}
`

// The load scripts: per resource, a test of its path with sh builtins;
// in a batch, one answer per object of the array it reads (the markers
// do not exist yet).
const (
	loadOne   = `if [ -f "$PROP_PATH" ]; then echo '{}'; else echo '{"exists": false}'; fi`
	loadBatch = `n=$(tr -cd '{' | wc -c); awk -v n="$n" 'BEGIN { printf "["; for (i = 0; i < n; i++) printf "%s{\"exists\": false}", (i ? "," : ""); print "]" }'`
)

// benchCustomTypes times `toque plan` on n resources of one type written
// in HCL, with batch = true (one load process) and without (n load
// processes), against the floor measured in the same run: n `sh -c true`
// processes started from Go, one and two at a time.
func benchCustomTypes(work, bin string, n, runs, par int) {
	dir := filepath.Join(work, "customtypes")
	env := append(os.Environ(), "TOQUE_STATE_DIR="+filepath.Join(dir, "state"), "TOQUE_HOST_LOCK="+filepath.Join(dir, "host.lock"), "NO_COLOR=1")
	recipes := func(batch bool) string {
		name, load := "single", loadOne
		if batch {
			name, load = "batch", loadBatch
		}
		d := filepath.Join(dir, name)
		check(os.MkdirAll(d, 0o755))
		src := bytes.ReplaceAll([]byte(customTypesRecipe), []byte("BATCH"), []byte(strconv.FormatBool(batch)))
		src = bytes.ReplaceAll(src, []byte("LOAD"), []byte(load))
		check(os.WriteFile(filepath.Join(d, "types.hcl"), src, 0o644))
		var b bytes.Buffer
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "marker \"m%05d\" {\n  path  = %q\n  value = \"%d\"\n}\n\n", i, filepath.Join(dir, "root", fmt.Sprintf("m%05d", i)), i)
		}
		check(os.WriteFile(filepath.Join(d, "main.hcl"), b.Bytes(), 0o644))
		return d
	}
	batch, single := recipes(true), recipes(false)
	median := func(f func() sample) sample {
		var ss []sample
		for r := 0; r < runs; r++ {
			ss = append(ss, f())
		}
		sort.Slice(ss, func(i, j int) bool { return ss[i].wall < ss[j].wall })
		return ss[len(ss)/2]
	}
	plan := func(d string) sample {
		return median(func() sample {
			return timed(env, bin, "-chdir="+d, "plan", "-parallelism="+strconv.Itoa(par))
		})
	}
	floor := func(workers int) sample {
		return median(func() sample {
			before := childrenCPU()
			wall := spawnLoop(n, workers)
			return sample{wall: wall, cpu: childrenCPU() - before}
		})
	}

	fmt.Printf("\ncustom types: plan of %d resources of one resource_type (all to create); median of %d runs, -parallelism=%d, %d CPUs, load average %s\n", n, runs, par, numCPU(), loadAverage())
	b, s := plan(batch), plan(single)
	f1, f2 := floor(1), floor(2)
	fmt.Printf("%-48s %10s %10s\n", "measurement", "wall", "cpu")
	row := func(what string, x sample) {
		cpu := "-"
		if x.cpu > 0 {
			cpu = x.cpu.Round(time.Millisecond).String()
		}
		fmt.Printf("%-48s %10s %10s\n", what, x.wall.Round(time.Millisecond), cpu)
	}
	row("plan, load_current_value with batch = true", b)
	row("plan, load_current_value per resource", s)
	row(fmt.Sprintf("floor: %d sh -c true from Go, 1 at a time", n), f1)
	row(fmt.Sprintf("floor: %d sh -c true from Go, 2 at a time", n), f2)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Printf("batch = true: %s wall, %s cpu (target under 200ms: %s)\n", b.wall.Round(time.Millisecond), b.cpu.Round(time.Millisecond), verdict(b.wall < 200*time.Millisecond))
	fmt.Printf("per resource: %.2f× the 1-at-a-time floor, %.2f× the 2-at-a-time floor (target within 1.5×: %s)\n",
		float64(s.wall)/float64(f1.wall), float64(s.wall)/float64(f2.wall), verdict(float64(s.wall) <= 1.5*float64(f1.wall)))
}

// loadAverage is the machine's 1-minute load average, "?" when unknown:
// a benchmark on a busy machine measures the machine.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// childrenCPU is the user and system time of this process's children
// that have ended.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
