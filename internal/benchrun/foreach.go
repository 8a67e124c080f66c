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

// benchForEach times the no-op plan of n files made by for_each against
// the same n files written out as n blocks (issue 23: within 1.2×). Each
// layout manages its own n files (in 100 directories, made by a for_each
// in every layout), applied once; then its no-op plan is timed runs
// times:
//
//   - written, literal: n file blocks, each path a literal (the scale
//     workload's shape, the cheapest to evaluate);
//   - written, like for like: n file blocks whose path and content are
//     the templates the for_each block has, with the key written in
//     ("${node.bench.root}/d07/f00107.conf"): the baseline the for_each
//     layouts are measured against;
//   - for_each over a set: one block, for_each = toset(node.sites.names),
//     a list of n strings a default block writes (one attribute leaf),
//     path and content from each.key;
//   - for_each over node attributes: one block, for_each over a map of n
//     entries a default block writes (n attribute leaves, each with its
//     provenance, as a role's sites would be).
func benchForEach(work, bin string, n, runs, par int) {
	n -= n % 100 // (a whole number of files per directory)
	key := func(i int) string { return fmt.Sprintf("d%02d/f%05d", i%100, i) }
	const fileTail = "  content = \"setting_%s = ${node.bench.value}\\n\"\n  mode    = \"0644\"\n}\n\n"
	layouts := []struct {
		name  string
		write func(b *bytes.Buffer, root string)
	}{
		{"written, literal paths", func(b *bytes.Buffer, root string) {
			for i := 0; i < n; i++ {
				fmt.Fprintf(b, "file %q {\n"+fileTail, filepath.Join(root, key(i)+".conf"), key(i))
			}
		}},
		{"written, like for like", func(b *bytes.Buffer, root string) {
			for i := 0; i < n; i++ {
				fmt.Fprintf(b, "file \"f%05d\" {\n  path    = \"${node.bench.root}/%s.conf\"\n"+fileTail, i, key(i), key(i))
			}
		}},
		{"for_each over a set", func(b *bytes.Buffer, root string) {
			b.WriteString("default \"sites\" {\n  names = [\n")
			for i := 0; i < n; i++ {
				fmt.Fprintf(b, "    %q,\n", key(i))
			}
			b.WriteString("  ]\n}\n\n")
			fmt.Fprintf(b, "file \"f\" {\n  for_each = toset(node.sites.names)\n  path     = \"${node.bench.root}/${each.key}.conf\"\n"+fileTail, "${each.key}")
		}},
		{"for_each over node attributes", func(b *bytes.Buffer, root string) {
			b.WriteString("default \"sites\" {\n  files = {\n")
			for i := 0; i < n; i++ {
				fmt.Fprintf(b, "    %q = %d\n", key(i), i)
			}
			b.WriteString("  }\n}\n\n")
			fmt.Fprintf(b, "file \"f\" {\n  for_each = node.sites.files\n  path     = \"${node.bench.root}/${each.key}.conf\"\n"+fileTail, "${each.key}")
		}},
	}
	dirs := make([]string, len(layouts))
	for li, l := range layouts {
		d := filepath.Join(work, "foreach", strconv.Itoa(li))
		recipes, root := filepath.Join(d, "recipes"), filepath.Join(d, "root")
		check(os.MkdirAll(recipes, 0o755))
		check(os.MkdirAll(root, 0o755))
		var b bytes.Buffer
		fmt.Fprintf(&b, "default \"bench\" {\n  root  = %q\n  value = 42\n}\n\n", root)
		b.WriteString("directory \"dirs\" {\n  for_each = toset([for i in range(100) : format(\"d%02d\", i)])\n  path     = \"${node.bench.root}/${each.key}\"\n}\n\n")
		l.write(&b, root)
		check(os.WriteFile(filepath.Join(recipes, "main.hcl"), b.Bytes(), 0o644))
		dirs[li] = d
	}

	fmt.Printf("\nfor_each: no-op plan of %d files (and 100 directories), median of %d runs, -parallelism=%d, %d CPUs, load average %s\n", n, runs, par, numCPU(), loadAverage())
	fmt.Printf("%-32s %9s %9s %10s   %s\n", "layout", "wall", "cpu", "peak RSS", "against written, like for like")
	var base sample
	for li, l := range layouts {
		d := dirs[li]
		env := append(os.Environ(), "TOQUE_STATE_DIR="+filepath.Join(d, "state"), "TOQUE_HOST_LOCK="+filepath.Join(d, "host.lock"), "NO_COLOR=1")
		recipes, planFile := filepath.Join(d, "recipes"), filepath.Join(d, "plan.out")
		timed(env, bin, "-chdir="+recipes, "plan", "-parallelism="+strconv.Itoa(par), "-out="+planFile)
		timed(env, bin, "apply", planFile)
		var ss []sample
		for r := 0; r < runs; r++ {
			ss = append(ss, timed(env, bin, "-chdir="+recipes, "plan", "-parallelism="+strconv.Itoa(par), "-detailed-exitcode"))
		}
		byWall := append([]sample(nil), ss...)
		sort.Slice(byWall, func(i, j int) bool { return byWall[i].wall < byWall[j].wall })
		byCPU := append([]sample(nil), ss...)
		sort.Slice(byCPU, func(i, j int) bool { return byCPU[i].cpu < byCPU[j].cpu })
		med := sample{wall: byWall[len(ss)/2].wall, cpu: byCPU[len(ss)/2].cpu}
		var peak int64
		for _, s := range ss {
			peak = max(peak, s.maxRSS)
		}
		ratio := "-"
		switch {
		case li == 1:
			base = med
		case li > 1:
			ratio = fmt.Sprintf("%.2f× wall, %.2f× cpu", float64(med.wall)/float64(base.wall), float64(med.cpu)/float64(base.cpu))
		}
		fmt.Printf("%-32s %9s %9s %7.1f MB   %s\n", l.name, med.wall.Round(time.Millisecond), med.cpu.Round(time.Millisecond), float64(peak)/1024, ratio)
	}
	fmt.Println("(target: for_each within 1.2× of the same blocks written out; wall and cpu are each a median; on a busy machine, cpu is the steadier)")
}
