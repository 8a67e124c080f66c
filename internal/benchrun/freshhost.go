package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// benchFreshHost times issue 22's yardstick on this machine: the plan of
// a web server role — a package, a template over its configuration file,
// a file in a directory it creates, its service enabled — on a fresh
// host, with toque's package cache cold (the .debs fetched and read) and
// warm, beside the plan of the same role on the converged host (after
// the apply), and beside `apt-get install --download-only` of the same
// set. It runs as root in a mount namespace whose /etc, /var and /usr are
// overlays of the machine's own (its package database, the debs it
// installs, the unit it enables vanish with it), apt reading only a
// file: repository of packages built here with dpkg-deb; systemd is not
// running here, so the service is enabled, not started. Nothing of the
// machine changes.
func benchFreshHost(work, bin string, runs int) {
	if os.Geteuid() != 0 {
		fmt.Println("\nfresh host: skipped (needs root for the mount namespace)")
		return
	}
	dir := filepath.Join(work, "freshhost")
	repo, recipes := filepath.Join(dir, "repo"), filepath.Join(dir, "recipes")
	check(os.Chmod(work, 0o755))
	check(os.MkdirAll(repo, 0o755))
	check(os.MkdirAll(recipes, 0o755))
	bytes := 0
	for _, p := range benchDebs {
		bytes += buildDeb(dir, repo, p)
	}
	idx := exec.Command("dpkg-scanpackages", "--multiversion", ".", "/dev/null")
	idx.Dir = repo
	out, err := idx.Output()
	check(err)
	check(os.WriteFile(filepath.Join(repo, "Packages"), out, 0o644))
	check(os.WriteFile(filepath.Join(recipes, "web.hcl"), []byte(benchWebRecipe), 0o644))
	check(os.WriteFile(filepath.Join(recipes, "bench-web.conf.tpl"), []byte("greeting = ${greeting}\nport = 8080\n"), 0o644))
	layers := filepath.Join(dir, "layers")
	for _, d := range []string{"eu", "ew", "vu", "vw", "uu", "uw"} {
		check(os.MkdirAll(filepath.Join(layers, d), 0o755))
	}
	script := fmt.Sprintf(`set -e
mount -t overlay overlay -o lowerdir=/etc,upperdir=%[1]s/eu,workdir=%[1]s/ew /etc
mount -t overlay overlay -o lowerdir=/var,upperdir=%[1]s/vu,workdir=%[1]s/vw /var
mount -t overlay overlay -o lowerdir=/usr,upperdir=%[1]s/uu,workdir=%[1]s/uw /usr
rm -f /etc/apt/sources.list.d/*
echo 'deb [trusted=yes] file:%[2]s ./' > /etc/apt/sources.list
apt-get -q update >/dev/null
export TOQUE_STATE_DIR=%[3]s/state TOQUE_HOST_LOCK=%[3]s/host.lock NO_COLOR=1
# Each line: what, wall seconds, user and system CPU seconds (toque's and
# its children's).
timed() { what=$1; shift; /usr/bin/time -f "$what %%e %%U %%S" -o %[3]s/t "$@" >/dev/null 2>&1 || [ $? = 2 ]; cat %[3]s/t; }
plan() { timed "$1$2" %[4]s -chdir=%[5]s plan -detailed-exitcode; }
phases() {
  for i in $(seq %[6]d); do rm -rf %[3]s/state/cache; plan cold $1; done
  for i in $(seq %[6]d); do plan warm $1; done
  for i in $(seq %[6]d); do
    rm -rf %[3]s/dl && mkdir -p %[3]s/dl/partial
    timed aptdl$1 apt-get -q -y -o Dir::Cache::archives=%[3]s/dl/ install --download-only bench-web
  done
}
phases ""
# The same where apt keeps its binary cache (pkgcache.bin), as a Debian
# host does: this image's docker-clean turns it off.
rm -f /etc/apt/apt.conf.d/docker-clean
apt-get -q update >/dev/null
phases -cached
%[4]s -chdir=%[5]s plan -out=%[3]s/web.plan >/dev/null || true
%[4]s apply %[3]s/web.plan >/dev/null
for i in $(seq %[6]d); do plan converged -cached; done
touch /etc/apt/apt.conf.d/docker-clean
printf 'DPkg::Post-Invoke { "true"; };\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n' > /etc/apt/apt.conf.d/docker-clean
for i in $(seq %[6]d); do plan converged ""; done
`, layers, repo, dir, bin, recipes, runs)
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
	res, err := cmd.CombinedOutput()
	if err != nil {
		fmt.Printf("\nfresh host: failed: %v\n%s\n", err, res)
		return
	}
	wall, cpu := map[string][]time.Duration{}, map[string][]time.Duration{}
	for _, l := range strings.Split(string(res), "\n") {
		var which string
		var w, u, sy float64
		if _, err := fmt.Sscan(l, &which, &w, &u, &sy); err == nil {
			wall[which] = append(wall[which], time.Duration(w*float64(time.Second)))
			cpu[which] = append(cpu[which], time.Duration((u+sy)*float64(time.Second)))
		}
	}
	med := func(m map[string][]time.Duration, k string) time.Duration {
		d := m[k]
		if len(d) == 0 {
			return 0
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	fmt.Printf("\nfresh host: plan of a web server role (package with a dependency, template over its conffile, file in its directory, service enabled); median of %d runs, %d CPUs\n", runs, numCPU())
	fmt.Printf("  %-66s %9s %9s\n", "", "wall", "cpu")
	for _, v := range []struct{ suffix, what string }{{"", "as this image is (docker-clean: apt rebuilds its cache every call)"}, {"-cached", "apt keeping pkgcache.bin, as a Debian host does"}} {
		fmt.Printf("  %s\n", v.what)
		row := func(label, k string) {
			fmt.Printf("    %-64s %9s %9s\n", label, med(wall, k).Round(time.Millisecond), med(cpu, k).Round(time.Millisecond))
		}
		row("fresh host, package cache cold (.debs fetched and read)", "cold"+v.suffix)
		row(fmt.Sprintf("  beside apt-get install --download-only of the set (%d B)", bytes), "aptdl"+v.suffix)
		row("fresh host, package cache warm", "warm"+v.suffix)
		row("converged host (after the apply): no changes", "converged"+v.suffix)
		fmt.Printf("    %-64s %9s %9s  (goal: at most 100ms)\n", "warm-cache overhead of planning what the package brings",
			(med(wall, "warm"+v.suffix) - med(wall, "converged"+v.suffix)).Round(time.Millisecond),
			(med(cpu, "warm"+v.suffix) - med(cpu, "converged"+v.suffix)).Round(time.Millisecond))
	}
}

// benchDeb is one fixture package of the fresh-host benchmark.
type benchDeb struct {
	name, depends string
	files         map[string]string
	conffiles     []string
}

var benchDebs = []benchDeb{
	{name: "bench-web-common", files: map[string]string{
		"etc/bench-web/bench-web.conf":       "greeting = hello from the package\nport = 8080\n",
		"etc/bench-web/sites/.keep":          "",
		"usr/share/bench-web/html/index.txt": "it works\n",
	}, conffiles: []string{"/etc/bench-web/bench-web.conf"}},
	{name: "bench-web", depends: "bench-web-common", files: map[string]string{
		"lib/systemd/system/bench-web.service": "[Service]\nExecStart=/bin/sleep infinity\nExecReload=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
		"usr/sbin/bench-web":                   "#!/bin/sh\nexec sleep infinity\n",
	}},
}

const benchWebRecipe = `package "bench-web" {}

template "/etc/bench-web/bench-web.conf" {
  source    = "bench-web.conf.tpl"
  variables = { greeting = "hello from toque" }
}

file "/etc/bench-web/sites/default.conf" {
  content = "site = default\n"
}

service "bench-web" {
  action = "enable"
}
`

// buildDeb builds p with dpkg-deb into repo and returns its size.
func buildDeb(dir, repo string, p benchDeb) int {
	tree := filepath.Join(dir, "src", p.name)
	control := fmt.Sprintf("Package: %s\nVersion: 1.0\nArchitecture: all\nMaintainer: bench <bench@example.invalid>\n", p.name)
	if p.depends != "" {
		control += "Depends: " + p.depends + "\n"
	}
	control += "Description: toque benchmark package\n"
	files := map[string]string{"DEBIAN/control": control}
	for k, v := range p.files {
		files[k] = v
	}
	if len(p.conffiles) > 0 {
		files["DEBIAN/conffiles"] = strings.Join(p.conffiles, "\n") + "\n"
	}
	for name, content := range files {
		path := filepath.Join(tree, name)
		check(os.MkdirAll(filepath.Dir(path), 0o755))
		check(os.WriteFile(path, []byte(content), 0o644))
	}
	deb := filepath.Join(repo, p.name+"_1.0_all.deb")
	out, err := exec.Command("dpkg-deb", "--build", "--root-owner-group", tree, deb).CombinedOutput()
	if err != nil {
		check(fmt.Errorf("dpkg-deb: %v: %s", err, out))
	}
	fi, err := os.Stat(deb)
	check(err)
	return int(fi.Size())
}
