package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// The scale workload (issue 16): one directory, n files of about 136
// bytes each, and n/10 execute resources, each guarded by `creates` (the
// marker file its command writes), so that after one apply every
// resource is unchanged. The same resources are written either as one
// recipe file or spread over 100 files.

// contentBytes is the size of every managed file.
const contentBytes = 136

// scaleLayouts are the two ways of writing the recipes.
var scaleLayouts = map[string]int{"one": 1, "spread": 100}

// generateScale writes the recipes of the scale workload for n files
// under root, in the given number of recipe files, and returns the
// number of resources.
func generateScale(recipes, root string, n, files int) int {
	bufs := make([]bytes.Buffer, files)
	dir := filepath.Join(root, "d")
	fmt.Fprintf(&bufs[0], "default \"bench\" {\n  owner = \"toque\"\n}\n\n")
	fmt.Fprintf(&bufs[0], "directory %q {\n  mode = \"0755\"\n}\n\n", dir)
	for i := 0; i < n; i++ {
		// "# managed by toque\nsetting_NNNNNNN = aaa…\n": contentBytes
		// bytes once node.bench.owner is "toque".
		line := fmt.Sprintf("setting_%07d = ", i)
		value := strings.Repeat(string(rune('a'+i%26)), contentBytes-len("# managed by toque\n")-len(line)-1)
		fmt.Fprintf(&bufs[i*files/n], "file %q {\n  content = \"# managed by ${node.bench.owner}\\n%s%s\\n\"\n  mode    = \"0644\"\n}\n\n",
			filepath.Join(dir, fmt.Sprintf("f%07d.conf", i)), line, value)
	}
	for i := 0; i < n/10; i++ {
		marker := filepath.Join(dir, fmt.Sprintf("m%07d.done", i))
		fmt.Fprintf(&bufs[(i*10)*files/n], "execute \"mark-%07d\" {\n  command = \"echo done > %s\"\n  creates = %q\n}\n\n", i, marker, marker)
	}
	for i := range bufs {
		check(os.WriteFile(filepath.Join(recipes, fmt.Sprintf("r%03d.hcl", i)), bufs[i].Bytes(), 0o644))
	}
	return 1 + n + n/10
}

// scalePhases are the measurements of one run, in the order they run.
var scalePhases = []string{
	"plan (from nothing)",
	"plan -out (from nothing)",
	"apply plan.out",
	"plan (no-op)",
	"plan -out (no-op)",
	"apply plan.out (no-op)",
	"apply -auto-approve (no-op)",
}

// benchScale times the phases of the scale workload for each n and layout,
// each from a fresh directory per run, and prints medians with the peak
// RSS of the median run, and the time and memory per resource.
func benchScale(work, bin string, ns []int, layouts []string, runs, par int) {
	fmt.Printf("scale workload: 1 directory, N files of %d bytes, N/10 execute guarded by creates\n", contentBytes)
	fmt.Printf("median of %d whole-process runs, -parallelism=%d, %d CPUs, load average %s\n", runs, par, numCPU(), loadAvg())
	fmt.Printf("wall and peak RSS (wait4 rusage) are the median run's (by wall); CPU (user+system) is the median\n")
	fmt.Printf("of the runs' CPU times, with their lowest and highest (a shared machine's load moves CPU less than wall)\n")
	fmt.Printf("%-8s %-7s %-28s %9s %9s %15s %10s %10s %10s\n", "N", "recipes", "phase", "wall", "CPU", "CPU min-max", "peak RSS", "wall/res", "RSS/res")
	for _, n := range ns {
		for _, layout := range layouts {
			files, ok := scaleLayouts[layout]
			if !ok {
				check(fmt.Errorf("unknown layout %q (one, spread)", layout))
			}
			samples := make([][]sample, len(scalePhases))
			resources := 0
			for r := 0; r < runs; r++ {
				dir := filepath.Join(work, fmt.Sprintf("scale-%d-%s-r%d", n, layout, r))
				recipes, root, state := filepath.Join(dir, "recipes"), filepath.Join(dir, "root"), filepath.Join(dir, "state")
				check(os.MkdirAll(recipes, 0o755))
				check(os.MkdirAll(root, 0o755))
				resources = generateScale(recipes, root, n, files)
				env := append(os.Environ(), "TOQUE_STATE_DIR="+state, "TOQUE_HOST_LOCK="+filepath.Join(dir, "host.lock"), "NO_COLOR=1")
				if profile != "" {
					env = append(env, "TOQUE_PPROF_DIR="+filepath.Join(profile, fmt.Sprintf("%d-%s-r%d", n, layout, r)))
				}
				planFile, noopFile := filepath.Join(dir, "plan.out"), filepath.Join(dir, "noop.out")
				chdir, p := "-chdir="+recipes, fmt.Sprintf("-parallelism=%d", par)
				for i, args := range [][]string{
					{chdir, "plan", p},
					{chdir, "plan", p, "-out=" + planFile},
					{"apply", planFile},
					{chdir, "plan", p, "-detailed-exitcode"},
					{chdir, "plan", p, "-out=" + noopFile},
					{"apply", noopFile},
					{chdir, "apply", p, "-auto-approve"},
				} {
					samples[i] = append(samples[i], timedPhase(env, profile, scalePhases[i], bin, args...))
				}
				// The run's files stay until benchrun ends: ext4 does not
				// reuse an inode freed in the last minute, and creating
				// 100,000 files right after removing as many costs it a scan
				// per create, which would be the harness's cost, not toque's.
			}
			fmt.Printf("# load average after N=%d %s: %s\n", n, layout, loadAvg())
			for i, phase := range scalePhases {
				s := samples[i]
				cpus := make([]time.Duration, len(s))
				for k := range s {
					cpus[k] = s[k].cpu
				}
				sort.Slice(cpus, func(a, b int) bool { return cpus[a] < cpus[b] })
				sort.Slice(s, func(a, b int) bool { return s[a].wall < s[b].wall })
				m := s[len(s)/2]
				ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
				fmt.Printf("%-8d %-7s %-28s %9s %9s %15s %7.1f MB %10s %7.1f KB\n", n, layout, phase,
					m.wall.Round(time.Millisecond), cpus[len(cpus)/2].Round(time.Millisecond), ms(cpus[0])+"-"+ms(cpus[len(cpus)-1])+"s",
					float64(m.maxRSS)/1024, (m.wall / time.Duration(resources)).Round(100*time.Nanosecond), float64(m.maxRSS)/float64(resources))
			}
		}
	}
}

// loadAvg is the first three fields of /proc/loadavg: other work on the
// machine shows in wall times (CPU times are steadier).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// timedPhase runs one phase; with profiling on, each phase writes its
// profiles into a directory of its own. Dirty pages of what ran before
// (the previous run's removal of 100,000 files, say) are written out
// first, so that one phase does not pay for another's writeback.
func timedPhase(env []string, profile, phase, bin string, args ...string) sample {
	syscall.Sync()
	if profile != "" {
		last := env[len(env)-1]
		env = append(env[:len(env)-1:len(env)-1], last+"/"+strings.NewReplacer(" ", "_", "(", "", ")", "", ".", "_").Replace(phase))
	}
	return timed(env, bin, args...)
}
