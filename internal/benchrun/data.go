package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// benchData times the plan of n data "exec" blocks beside n guarded
// execute resources (issue 23: data reads run in parallel with resource
// reads). Each data command and each guard sleeps for the same time, so
// reading either set alone takes about n/parallelism of those sleeps;
// read one after the other, both would take twice that. Layouts:
//
//   - resources only: n executes with a not_if that sleeps;
//   - data only: n data blocks whose commands sleep, and one file that
//     reads them all (so the plan waits for them);
//   - both, no resource reads data: the two sets together (the whole
//     plan is made while the data blocks are read);
//   - both, half the resources read data: the n executes, half of them
//     made by a for_each over a data block's answer (those wait for the
//     data; the others are read meanwhile).
//
// Each mixed layout is compared with the two sets read one after the
// other (the sum of the first two layouts): 0.50× when every read
// overlaps (both sets alone take as long), 1.00× when none does. Half of
// the resources of the last layout must wait for the data, so its floor
// is about 0.75×.
func benchData(work, bin string, n, runs, par int, sleep time.Duration) {
	secs := strconv.FormatFloat(sleep.Seconds(), 'f', -1, 64)
	resources := func(b *bytes.Buffer, from, to int) {
		for i := from; i < to; i++ {
			fmt.Fprintf(b, "execute \"r%03d\" {\n  command = \"true\"\n  not_if  = \"sleep %s; false\"\n}\n\n", i, secs)
		}
	}
	data := func(b *bytes.Buffer, root string) {
		for i := 0; i < n; i++ {
			fmt.Fprintf(b, "data \"exec\" \"d%03d\" {\n  command = \"sleep %s; echo '{\\\"k%03d\\\": %d}'\"\n}\n\n", i, secs, i, i)
		}
		b.WriteString("file \"" + filepath.Join(root, "all.json") + "\" {\n  content = jsonencode([\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(b, "    data.exec.d%03d.result,\n", i)
		}
		b.WriteString("  ])\n}\n\n")
	}
	layouts := []struct {
		name  string
		write func(b *bytes.Buffer, root string)
	}{
		{"resources only", func(b *bytes.Buffer, root string) { resources(b, 0, n) }},
		{"data only", data},
		{"both, no resource reads data", func(b *bytes.Buffer, root string) {
			resources(b, 0, n)
			for i := 0; i < n; i++ {
				fmt.Fprintf(b, "data \"exec\" \"d%03d\" {\n  command = \"sleep %s; echo {}\"\n}\n\n", i, secs)
			}
		}},
		{"both, half the resources read data", func(b *bytes.Buffer, root string) {
			resources(b, 0, n/2)
			data(b, root)
			fmt.Fprintf(b, "data \"exec\" \"keys\" {\n  command = \"echo '{%s}'\"\n}\n\n", keysJSON(n-n/2))
			fmt.Fprintf(b, "execute \"from_data\" {\n  for_each = data.exec.keys.result\n  command  = \"true\"\n  not_if   = \"sleep %s; false\"\n}\n\n", secs)
		}},
	}
	fmt.Printf("\ndata: plan of %d data \"exec\" blocks beside %d guarded executes, each command and guard sleeping %s; median of %d runs, -parallelism=%d, %d CPUs, load average %s\n",
		n, n, sleep, runs, par, numCPU(), loadAverage())
	fmt.Printf("%-40s %9s %9s   %s\n", "layout", "wall", "cpu", "against one after the other")
	var alone time.Duration
	for li, l := range layouts {
		d := filepath.Join(work, "data", strconv.Itoa(li))
		recipes, root := filepath.Join(d, "recipes"), filepath.Join(d, "root")
		check(os.MkdirAll(recipes, 0o755))
		check(os.MkdirAll(root, 0o755))
		var b bytes.Buffer
		l.write(&b, root)
		check(os.WriteFile(filepath.Join(recipes, "main.hcl"), b.Bytes(), 0o644))
		env := append(os.Environ(), "TOQUE_STATE_DIR="+filepath.Join(d, "state"), "TOQUE_HOST_LOCK="+filepath.Join(d, "host.lock"), "NO_COLOR=1")
		var ss []sample
		for r := 0; r < runs; r++ {
			ss = append(ss, timed(env, bin, "-chdir="+recipes, "plan", "-parallelism="+strconv.Itoa(par)))
		}
		sort.Slice(ss, func(i, j int) bool { return ss[i].wall < ss[j].wall })
		med := ss[len(ss)/2]
		ratio := "-"
		if li < 2 {
			alone += med.wall
		} else {
			ratio = fmt.Sprintf("%.2f×", float64(med.wall)/float64(alone))
		}
		fmt.Printf("%-40s %9s %9s   %s\n", l.name, med.wall.Round(time.Millisecond), med.cpu.Round(time.Millisecond), ratio)
	}
	fmt.Println("(0.50× is every read overlapped, 1.00× none; the last layout's floor is about 0.75×: half its resources wait for the data)")
}

// keysJSON is a JSON object's members k000 … of n keys.
func keysJSON(n int) string {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `\"k%03d\": %d`, i, i)
	}
	return b.String()
}
