// Command benchrun times whole toque processes on generated recipe sets:
// the plan from nothing, the apply, and the no-op plan after it, with peak
// memory, as medians over several runs; the plan of guarded executes; the
// plan of installed packages and of remote files whose checksums match,
// with the processes each starts; the no-op plan of files made by
// for_each against written-out blocks; the plan of data blocks beside
// resources, read in parallel. `make bench` runs it.
//
// It is a measuring tool, not part of toque.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// profile, when set, is where the toque_pprof build writes its profiles.
var profile string

type sample struct {
	wall   time.Duration
	maxRSS int64 // KiB
	// cpu is the user and system time of toque and the processes it
	// waited for: what a busy machine cannot inflate.
	cpu time.Duration
}

func main() {
	ns := flag.String("n", "1000,10000", "comma-separated resource counts")
	runs := flag.Int("runs", 5, "runs per measurement (the median is reported)")
	par := flag.Int("parallelism", 10, "toque -parallelism")
	guards := flag.Int("guards", 0, "instead: time the plan of this many execute resources with a not_if script guard (see guards.go)")
	scale := flag.Bool("scale", false, "instead: the scale workload of issue 16 (see scale.go), for each -n and -layouts")
	layouts := flag.String("layouts", "one,spread", "with -scale: the recipes as one file (one), over 100 files (spread), or both")
	genDir := flag.String("generate", "", "instead: write the scale workload for the first -n and -layouts into DIR/recipes (targets under DIR/root) and stop")
	keep := flag.Bool("keep", false, "leave the runs' files (remove them later: a removal of 100,000 files slows the next minutes' creates on ext4)")
	prebuilt := flag.String("bin", "", "time this toque binary instead of building the working tree's")
	flag.StringVar(&profile, "profile", "", "build toque with the toque_pprof tag and write CPU and heap profiles of every run under this directory")
	packages := flag.Int("packages", 0, "instead: time the plan of this many installed package resources (see packages.go)")
	flag.BoolVar(&withAnsible, "ansible", false, "with -packages: also time Ansible's apt module --check of the same packages (installs ansible-core from the machine's apt sources inside a throwaway mount namespace: needs root and Debian's mirror)")
	remoteFiles := flag.Int("remote-files", 0, "instead: time the plan of this many remote_file resources whose checksums match (see packages.go)")
	custom := flag.Int("customtypes", 0, "instead: time the plan of this many resources of a type written in HCL, with and without batch (see customtypes.go)")
	forEach := flag.Int("foreach", 0, "instead: time the no-op plan of this many files made by for_each against as many written-out blocks (see foreach.go)")
	dataN := flag.Int("data", 0, "instead: time the plan of this many data \"exec\" blocks beside as many guarded executes, read one after the other or in parallel (see data.go)")
	dataSleep := flag.Duration("data-sleep", 200*time.Millisecond, "with -data: how long each data command and each guard sleeps")
	fresh := flag.Bool("freshhost", false, "instead: time the plan of a web server role on a fresh host (package cache cold and warm) against a converged one (see freshhost.go; root)")
	flag.Parse()

	if *genDir != "" {
		n, err := strconv.Atoi(strings.TrimSpace(strings.Split(*ns, ",")[0]))
		check(err)
		files, ok := scaleLayouts[strings.Split(*layouts, ",")[0]]
		if !ok {
			check(fmt.Errorf("unknown layout %q (one, spread)", *layouts))
		}
		recipes, root := filepath.Join(*genDir, "recipes"), filepath.Join(*genDir, "root")
		check(os.MkdirAll(recipes, 0o755))
		check(os.MkdirAll(root, 0o755))
		fmt.Printf("%d resources in %s, managing %s\n", generateScale(recipes, root, n, files), recipes, root)
		return
	}
	work, err := os.MkdirTemp("", "toque-bench-")
	check(err)
	if *keep {
		fmt.Printf("(the runs' files stay in %s)\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	bin := filepath.Join(work, "toque")
	if *prebuilt != "" {
		if bin, err = filepath.Abs(*prebuilt); err != nil {
			check(err)
		}
	}
	buildArgs := []string{"build", "-o", bin}
	if profile != "" {
		abs, err := filepath.Abs(profile)
		check(err)
		profile = abs
		buildArgs = append(buildArgs, "-tags", "toque_pprof")
	}
	if *prebuilt == "" {
		build := exec.Command("go", append(buildArgs, ".")...)
		build.Stderr = os.Stderr
		check(build.Run())
	}
	if *scale {
		var counts []int
		for _, f := range strings.Split(*ns, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			check(err)
			counts = append(counts, n)
		}
		benchScale(work, bin, counts, strings.Split(*layouts, ","), *runs, *par)
		return
	}
	if *guards > 0 {
		benchGuards(work, bin, *guards, *runs, *par)
		return
	}
	if *fresh {
		benchFreshHost(work, bin, *runs)
		return
	}
	if *custom > 0 {
		benchCustomTypes(work, bin, *custom, *runs, *par)
		return
	}
	if *forEach > 0 {
		benchForEach(work, bin, *forEach, *runs, *par)
		return
	}
	if *dataN > 0 {
		benchData(work, bin, *dataN, *runs, *par, *dataSleep)
		return
	}
	if *packages > 0 || *remoteFiles > 0 {
		if *packages > 0 {
			benchPackages(work, bin, *packages, *runs)
			benchRPMPackages(work, bin, *packages, *runs)
		}
		if *remoteFiles > 0 {
			benchRemoteFiles(work, bin, *remoteFiles, *runs)
		}
		return
	}

	fmt.Printf("toque whole-process timings: median of %d runs, -parallelism=%d, %d CPUs\n", *runs, *par, numCPU())
	fmt.Printf("%-8s %-22s %12s %12s\n", "N", "phase", "median", "peak RSS")
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		check(err)
		var planS, applyS, noopS []sample
		for r := 0; r < *runs; r++ {
			dir := filepath.Join(work, fmt.Sprintf("n%d-r%d", n, r))
			recipes, root, state := filepath.Join(dir, "recipes"), filepath.Join(dir, "root"), filepath.Join(dir, "state")
			check(os.MkdirAll(recipes, 0o755))
			check(os.MkdirAll(root, 0o755))
			generate(recipes, root, n)
			env := append(os.Environ(), "TOQUE_STATE_DIR="+state, "TOQUE_HOST_LOCK="+filepath.Join(state, "..", "host.lock"), "NO_COLOR=1")
			planFile := filepath.Join(dir, "plan.out")
			planS = append(planS, timed(env, bin, "-chdir="+recipes, "plan", "-parallelism="+strconv.Itoa(*par), "-out="+planFile))
			applyS = append(applyS, timed(env, bin, "apply", planFile))
			noopS = append(noopS, timed(env, bin, "-chdir="+recipes, "plan", "-parallelism="+strconv.Itoa(*par), "-detailed-exitcode"))
			os.RemoveAll(dir)
		}
		report(n, "plan (from nothing)", planS)
		report(n, "apply", applyS)
		report(n, "plan (no-op)", noopS)
	}
}

// generate writes n file resources, spread over 10 recipe files, whose
// targets live in 100 directories under root.
func generate(recipes, root string, n int) {
	const files = 10
	bufs := make([]bytes.Buffer, files)
	for d := 0; d < 100 && d < n; d++ {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", d))
		fmt.Fprintf(&bufs[0], "directory %q {\n  mode = \"0755\"\n}\n\n", dir)
	}
	for i := 0; i < n; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.conf", i))
		fmt.Fprintf(&bufs[i%files], "file %q {\n  content = \"setting_%d = ${node.bench.value}\\n\"\n  mode    = \"0644\"\n}\n\n", p, i)
	}
	fmt.Fprintf(&bufs[0], "default \"bench\" {\n  value = 42\n}\n")
	for i := range bufs {
		check(os.WriteFile(filepath.Join(recipes, fmt.Sprintf("r%02d.hcl", i)), bufs[i].Bytes(), 0o644))
	}
}

func timed(env []string, bin string, args ...string) sample {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stdout = nil
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 2 || ee.ExitCode() == 1 {
			fmt.Fprintf(os.Stderr, "toque %s: %v\n%s", strings.Join(args, " "), err, errb.String())
			os.Exit(1)
		}
	}
	s := sample{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.maxRSS = ru.Maxrss
	}
	return s
}

func report(n int, phase string, s []sample) {
	sort.Slice(s, func(i, j int) bool { return s[i].wall < s[j].wall })
	med := s[len(s)/2].wall
	var peak int64
	for _, x := range s {
		if x.maxRSS > peak {
			peak = x.maxRSS
		}
	}
	fmt.Printf("%-8d %-22s %12s %9.1f MB\n", n, phase, med.Round(time.Millisecond), float64(peak)/1024)
}

func numCPU() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}
