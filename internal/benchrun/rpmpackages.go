package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// benchRPMPackages times `toque plan` of n package resources that are all
// installed, on an RHEL-family host: a mount namespace whose /etc, /var,
// /usr and root's home are overlays of the machine's, with its own rpm
// database holding the n packages, a Rocky os-release (so toque picks
// dnf) and a local createrepo_c repository offering them, its metadata
// cached. The packages are the subpackages of one spec, built with one
// rpmbuild and registered with one rpm -i --justdb. It also counts the
// rpm and dnf processes the plan starts, through wrappers first on PATH.
// It needs root, unshare, rpmbuild, createrepo_c and dnf; without them it
// says so and skips.
func benchRPMPackages(work, bin string, n, runs int) {
	fmt.Printf("\npackages, dnf and rpm: plan of %d installed package resources (all no-ops); median of %d runs, %d CPUs\n", n, runs, numCPU())
	for _, tool := range []string{"rpmbuild", "createrepo_c", "dnf", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Printf("  %-56s %10s\n", "rocky namespace", "skipped: "+tool+" is not installed (scripts/test-deps)")
			return
		}
	}
	if os.Geteuid() != 0 {
		fmt.Printf("  %-56s %10s\n", "rocky namespace", "skipped: needs root (a mount namespace)")
		return
	}
	dir := filepath.Join(work, "rpm-packages")
	top, repo, recipes, upgrades := filepath.Join(dir, "top"), filepath.Join(dir, "repo"), filepath.Join(dir, "recipes"), filepath.Join(dir, "recipes-upgrade")
	for _, d := range []string{filepath.Join(top, "SPECS"), filepath.Join(top, "tmp"), repo, recipes, upgrades} {
		check(os.MkdirAll(d, 0o755))
	}
	var spec, recipe, upgrade bytes.Buffer
	spec.WriteString("Name: bench\nVersion: 1.0\nRelease: 1\nSummary: benchmark\nLicense: MIT\nBuildArch: noarch\nAutoReqProv: no\n%description\nbenchmark\n")
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench-pkg-%03d", i)
		fmt.Fprintf(&spec, "%%package -n %s\nSummary: benchmark package\n%%description -n %s\nbenchmark package\n%%files -n %s\n", name, name, name)
		fmt.Fprintf(&recipe, "package %q {}\n", name)
		fmt.Fprintf(&upgrade, "package %q {\n  action = \"upgrade\"\n}\n", name)
	}
	specFile := filepath.Join(top, "SPECS", "bench.spec")
	check(os.WriteFile(specFile, spec.Bytes(), 0o644))
	check(os.WriteFile(filepath.Join(recipes, "packages.hcl"), recipe.Bytes(), 0o644))
	check(os.WriteFile(filepath.Join(upgrades, "packages.hcl"), upgrade.Bytes(), 0o644))
	build := exec.Command("rpmbuild", "-bb", "--quiet", "--nodeps", "--define", "_topdir "+top, "--define", "_tmppath "+filepath.Join(top, "tmp"),
		"--define", "_rpmdir "+repo, "--define", "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm", specFile)
	if out, err := build.CombinedOutput(); err != nil {
		check(fmt.Errorf("rpmbuild: %v\n%s", err, out))
	}
	if out, err := exec.Command("createrepo_c", "-q", "--no-database", repo).CombinedOutput(); err != nil {
		check(fmt.Errorf("createrepo_c: %v\n%s", err, out))
	}
	layers := filepath.Join(dir, "layers")
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		home = "/root"
	}
	wrap := filepath.Join(dir, "wrappers")
	check(os.MkdirAll(wrap, 0o755))
	calls := filepath.Join(wrap, "calls.log")
	for _, tool := range []string{"rpm", "dnf"} {
		real, err := exec.LookPath(tool)
		check(err)
		check(os.WriteFile(filepath.Join(wrap, tool), []byte(fmt.Sprintf("#!/bin/sh\necho %s >> %s\nexec %s \"$@\"\n", tool, calls, real)), 0o755))
	}
	var mounts []string
	for i, d := range []string{"/etc", "/var", "/usr", home} {
		up, w := filepath.Join(layers, fmt.Sprintf("u%d", i)), filepath.Join(layers, fmt.Sprintf("w%d", i))
		check(os.MkdirAll(up, 0o755))
		check(os.MkdirAll(w, 0o755))
		mounts = append(mounts, fmt.Sprintf("mount -t overlay overlay -o lowerdir=%s,upperdir=%s,workdir=%s %s", d, up, w, d))
	}
	script := fmt.Sprintf(`set -e
%[1]s
mkdir -p /etc/rpm /etc/yum.repos.d /etc/dnf/vars /var/lib/rpm
rm -f /etc/yum.repos.d/*.repo /etc/os-release
echo '%%_dbpath /var/lib/rpm' > /etc/rpm/macros.dbpath
echo 9 > /etc/dnf/vars/releasever
printf 'ID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.3"\n' > /etc/os-release
printf '[bench]\nname=bench\nbaseurl=file://%[2]s\ngpgcheck=0\n' > /etc/yum.repos.d/bench.repo
rpm --initdb
rpm -i --justdb --nodeps %[2]s/*.rpm
dnf -q makecache >/dev/null
export TOQUE_STATE_DIR=%[3]s/state TOQUE_HOST_LOCK=%[3]s/host.lock NO_COLOR=1
plan() { %[4]s -chdir="$1" plan -detailed-exitcode >/dev/null; }
for which in install upgrade; do
  d=%[5]s; [ $which = upgrade ] && d=%[6]s
  plan $d
  for i in $(seq %[7]d); do
    s=$(date +%%s%%N); plan $d; e=$(date +%%s%%N)
    echo "$which $(( (e - s) / 1000 ))"
  done
  rm -f %[8]s
  PATH=%[9]s:$PATH plan $d
  echo "$which-calls $(sort %[8]s | uniq -c | awk '{printf "%%s:%%s,", $2, $1}')"
done`, strings.Join(mounts, "\n"), repo, dir, bin, recipes, upgrades, runs, calls, wrap)
	start := time.Now()
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script).CombinedOutput()
	if err != nil {
		fmt.Printf("  %-56s %10s\n", "rocky namespace", "failed: "+strings.TrimSpace(string(out)))
		return
	}
	ds := map[string][]time.Duration{}
	counted := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		if strings.HasSuffix(f[0], "-calls") {
			counted[strings.TrimSuffix(f[0], "-calls")] = f[1]
			continue
		}
		var us int64
		if _, err := fmt.Sscan(f[1], &us); err == nil {
			ds[f[0]] = append(ds[f[0]], time.Duration(us)*time.Microsecond)
		}
	}
	for _, which := range []string{"install", "upgrade"} {
		d := ds[which]
		if len(d) == 0 {
			fmt.Printf("  %-56s %10s\n", "action "+which, "no timings: "+string(out))
			continue
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Printf("action %s\n", which)
		fmt.Printf("  %-56s %10s\n", "rocky namespace: rpm database and dnf cache of the n packages", d[len(d)/2].Round(time.Millisecond))
		fmt.Printf("  %-56s %10s\n", "  processes started", processWords(counted[which]))
	}
	fmt.Printf("  (set-up: one rpmbuild of %d subpackages, createrepo_c, rpm -i --justdb, dnf makecache; %s in all)\n", n, time.Since(start).Round(time.Second))
}

// processWords turns "dnf:1,rpm:1," into "2 (dnf 1, rpm 1)".
func processWords(s string) string {
	total := 0
	var parts []string
	for _, kv := range strings.Split(strings.TrimSuffix(s, ","), ",") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			continue
		}
		var c int
		fmt.Sscan(v, &c)
		total += c
		parts = append(parts, fmt.Sprintf("%s %d", k, c))
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}
