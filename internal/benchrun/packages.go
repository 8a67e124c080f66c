package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// benchPackages times `toque plan` of n package resources that are all
// installed, so the plan is all no-ops: what a converged host plans on
// every run. apt and dpkg read a throwaway root through the children's
// environment (APT_CONFIG, DPKG_ADMINDIR), so toque runs its production
// command lines; the root's status file lists the n packages as installed
// and its only repository (a file: index, no .deb needed) offers them.
// Then, as root with unshare, the same plan inside a mount namespace whose
// /etc and /var are overlays of the machine's own: the real package
// database and apt's real lists, plus the n packages.
//
// It also counts the processes the plan starts, through wrappers first on
// PATH that log each call (a separate run: the wrappers cost time).
func benchPackages(work, bin string, n, runs int) {
	dir := filepath.Join(work, "packages")
	repo, root, recipes := filepath.Join(dir, "repo"), filepath.Join(dir, "root"), filepath.Join(dir, "recipes")
	// apt reads a file: repository as its sandbox user (_apt), who must
	// be able to reach it.
	check(os.Chmod(work, 0o755))
	for _, d := range []string{repo, recipes, filepath.Join(root, "etc/apt/apt.conf.d"), filepath.Join(root, "etc/apt/sources.list.d"),
		filepath.Join(root, "etc/apt/preferences.d"), filepath.Join(root, "var/lib/apt/lists/partial"),
		filepath.Join(root, "var/cache/apt/archives/partial"), filepath.Join(root, "var/lib/dpkg/info"), filepath.Join(root, "var/log")} {
		check(os.MkdirAll(d, 0o755))
	}
	upgrades := filepath.Join(dir, "recipes-upgrade")
	check(os.MkdirAll(upgrades, 0o755))
	var index, status, recipe, upgrade bytes.Buffer
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench-pkg-%03d", i)
		names = append(names, name)
		fmt.Fprintf(&index, "Package: %s\nVersion: 1.0\nArchitecture: all\nMaintainer: bench <bench@example.invalid>\nFilename: ./%s_1.0_all.deb\nSize: 600\nSHA256: %064x\nDescription: benchmark package\n\n", name, name, i)
		fmt.Fprintf(&status, "Package: %s\nStatus: install ok installed\nPriority: optional\nArchitecture: all\nVersion: 1.0\nMaintainer: bench <bench@example.invalid>\nDescription: benchmark package\n\n", name)
		fmt.Fprintf(&recipe, "package %q {}\n", name)
		fmt.Fprintf(&upgrade, "package %q {\n  action = \"upgrade\"\n}\n", name)
	}
	check(os.WriteFile(filepath.Join(repo, "Packages"), index.Bytes(), 0o644))
	check(os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), status.Bytes(), 0o644))
	check(os.WriteFile(filepath.Join(recipes, "packages.hcl"), recipe.Bytes(), 0o644))
	check(os.WriteFile(filepath.Join(upgrades, "packages.hcl"), upgrade.Bytes(), 0o644))
	check(os.WriteFile(filepath.Join(root, "etc/apt/sources.list"), []byte("deb [trusted=yes] file:"+repo+" ./\n"), 0o644))
	conf := fmt.Sprintf("Dir \"%[1]s/\";\nDir::State::status \"%[1]s/var/lib/dpkg/status\";\nAPT::Sandbox::User \"root\";\nAcquire::Languages \"none\";\n", root)
	check(os.WriteFile(filepath.Join(root, "apt.conf"), []byte(conf), 0o644))
	aptEnv := []string{"APT_CONFIG=" + filepath.Join(root, "apt.conf"), "DPKG_ADMINDIR=" + filepath.Join(root, "var/lib/dpkg")}
	update := exec.Command("apt-get", "-q", "update")
	update.Env = append(os.Environ(), aptEnv...)
	if out, err := update.CombinedOutput(); err != nil {
		check(fmt.Errorf("apt-get update in the benchmark's root: %v\n%s", err, out))
	}
	env := append(os.Environ(), aptEnv...)
	env = append(env, "TOQUE_STATE_DIR="+filepath.Join(dir, "state"), "TOQUE_HOST_LOCK="+filepath.Join(dir, "host.lock"), "NO_COLOR=1")
	fmt.Printf("\npackages: plan of %d installed package resources (all no-ops); median of %d runs, %d CPUs\n", n, runs, numCPU())
	for _, c := range []struct{ what, recipes string }{
		{"action install", recipes},
		{"action upgrade", upgrades},
	} {
		args := []string{"-chdir=" + c.recipes, "plan", "-detailed-exitcode"}
		fmt.Printf("%s\n", c.what)
		med, cpu := medianSamples(runs, func() sample { return timed(env, bin, args...) })
		fmt.Printf("  %-56s %10s  (cpu %s)\n", "throwaway root (APT_CONFIG), only the benchmark's repository", med.Round(time.Millisecond), cpu.Round(time.Millisecond))
		fmt.Printf("  %-56s %10s\n", "  processes started", countProcesses(dir, env, bin, args))
		if os.Geteuid() != 0 {
			continue
		}
		ds, err := packagesOnHostLists(dir, bin, repo, status.Bytes(), c.recipes, runs)
		if err != nil {
			fmt.Printf("  %-56s %10s\n", "machine's own apt lists (overlay)", "skipped: "+err.Error())
			continue
		}
		fmt.Printf("  %-56s %10s\n", "machine's own database and apt lists, in an overlay", ds[0].Round(time.Millisecond))
		fmt.Printf("  %-56s %10s\n", "  the same without docker-clean (apt keeps pkgcache.bin)", ds[1].Round(time.Millisecond))
		if c.what == "action install" && withAnsible {
			if d, err := ansibleBeside(dir, names, status.Bytes(), runs); err != nil {
				fmt.Printf("  %-56s %10s\n", "Ansible's apt --check, the same packages", "skipped: "+err.Error())
			} else {
				fmt.Printf("  %-56s %10s\n", "Ansible's apt --check, the same packages (overlay)", d.Round(time.Millisecond))
			}
		}
	}
}

// withAnsible adds Ansible's figure to the packages benchmark (-ansible).
var withAnsible bool

// packagesOnHostLists times the plan in a mount namespace whose /etc and
// /var are overlays of the machine's: its dpkg status plus the benchmark's
// packages, its apt sources and lists plus the benchmark's repository.
// Nothing of the machine changes.
//
// It returns two medians: as the machine is, and without a container
// image's /etc/apt/apt.conf.d/docker-clean, which turns off apt's binary
// cache (pkgcache.bin) so that every apt-cache call parses every list
// again: a Debian host keeps the cache.
func packagesOnHostLists(dir, bin, repo string, status []byte, recipes string, runs int) ([2]time.Duration, error) {
	var meds [2]time.Duration
	layers, err := os.MkdirTemp(dir, "layers-")
	if err != nil {
		return meds, err
	}
	for _, d := range []string{"eu", "ew", "vu", "vw"} {
		if err := os.MkdirAll(filepath.Join(layers, d), 0o755); err != nil {
			return meds, err
		}
	}
	extra := filepath.Join(dir, "status-extra")
	if err := os.WriteFile(extra, status, 0o644); err != nil {
		return meds, err
	}
	script := fmt.Sprintf(`set -e
mount -t overlay overlay -o lowerdir=/etc,upperdir=%[1]s/eu,workdir=%[1]s/ew /etc
mount -t overlay overlay -o lowerdir=/var,upperdir=%[1]s/vu,workdir=%[1]s/vw /var
printf '\n' >> /var/lib/dpkg/status
cat %[2]s >> /var/lib/dpkg/status
echo 'deb [trusted=yes] file:%[3]s ./' > /etc/apt/sources.list.d/toque-bench.list
apt-get -q update -o Dir::Etc::sourcelist=sources.list.d/toque-bench.list -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 >/dev/null
plan() {
  TOQUE_STATE_DIR=%[5]s/state-ns TOQUE_HOST_LOCK=%[5]s/host-ns.lock NO_COLOR=1 %[6]s -chdir=%[7]s plan -detailed-exitcode >/dev/null
}
timings() {
  plan
  for i in $(seq %[4]d); do
    s=$(date +%%s%%N); plan; e=$(date +%%s%%N)
    echo "$1 $(( (e - s) / 1000 ))"
  done
}
timings as-is
rm -f /etc/apt/apt.conf.d/docker-clean
timings cached`, layers, extra, repo, runs, dir, bin, recipes)
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script).CombinedOutput()
	if err != nil {
		return meds, fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	ds := map[string][]time.Duration{}
	for _, l := range strings.Split(string(out), "\n") {
		var which string
		var us int64
		if _, err := fmt.Sscan(l, &which, &us); err == nil {
			ds[which] = append(ds[which], time.Duration(us)*time.Microsecond)
		}
	}
	for i, which := range []string{"as-is", "cached"} {
		d := ds[which]
		if len(d) == 0 {
			return meds, fmt.Errorf("no timings: %s", out)
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		meds[i] = d[len(d)/2]
	}
	return meds, nil
}

// benchRemoteFiles times `toque plan` of n remote_file resources whose
// files already have their checksums: no download, and the sources point
// at a closed port, so any attempt would fail the plan.
func benchRemoteFiles(work, bin string, n, runs int) {
	dir := filepath.Join(work, "remote-files")
	files, recipes := filepath.Join(dir, "files"), filepath.Join(dir, "recipes")
	check(os.MkdirAll(files, 0o755))
	check(os.MkdirAll(recipes, 0o755))
	var recipe bytes.Buffer
	for i := 0; i < n; i++ {
		content := make([]byte, 4096)
		_, err := rand.Read(content)
		check(err)
		p := filepath.Join(files, fmt.Sprintf("f%03d.bin", i))
		check(os.WriteFile(p, content, 0o644))
		sum := sha256.Sum256(content)
		fmt.Fprintf(&recipe, "remote_file %q {\n  source   = \"http://127.0.0.1:9/f%03d.bin\"\n  checksum = %q\n}\n\n", p, i, hex.EncodeToString(sum[:]))
	}
	check(os.WriteFile(filepath.Join(recipes, "files.hcl"), recipe.Bytes(), 0o644))
	env := append(os.Environ(), "TOQUE_STATE_DIR="+filepath.Join(dir, "state"), "TOQUE_HOST_LOCK="+filepath.Join(dir, "host.lock"), "NO_COLOR=1")
	args := []string{"-chdir=" + recipes, "plan", "-detailed-exitcode"}
	fmt.Printf("\nremote_file: plan of %d files of 4 KiB whose checksums match (sources unreachable: no network may be used); median of %d runs\n", n, runs)
	med, cpu := medianSamples(runs, func() sample { return timed(env, bin, args...) })
	fmt.Printf("%-58s %10s  (cpu %s)\n", "plan", med.Round(time.Millisecond), cpu.Round(time.Millisecond))
	fmt.Printf("%-58s %10s\n", "  processes started", countProcesses(dir, env, bin, args))
}

// countProcesses runs toque once with logging wrappers of apt's and
// dpkg's tools (and sh, curl, wget) first on PATH, and says how many of
// each it started.
func countProcesses(dir string, env []string, bin string, args []string) string {
	wrap := filepath.Join(dir, "wrappers")
	check(os.MkdirAll(wrap, 0o755))
	log := filepath.Join(wrap, "calls.log")
	os.Remove(log)
	for _, tool := range []string{"dpkg-query", "apt-cache", "apt-get", "dpkg", "dpkg-deb", "sh", "curl", "wget"} {
		real, err := exec.LookPath(tool)
		if err != nil {
			continue
		}
		script := fmt.Sprintf("#!%s\necho %s >> %s\nexec %s \"$@\"\n", "/bin/dash", tool, log, real)
		if _, err := os.Stat("/bin/dash"); err != nil {
			script = strings.Replace(script, "/bin/dash", "/bin/sh", 1)
		}
		check(os.WriteFile(filepath.Join(wrap, tool), []byte(script), 0o755))
	}
	var path string
	var rest []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			path = strings.TrimPrefix(kv, "PATH=")
			continue
		}
		rest = append(rest, kv)
	}
	timed(append(rest, "PATH="+wrap+":"+path), bin, args...)
	b, _ := os.ReadFile(log)
	counts := map[string]int{}
	total := 0
	for _, l := range strings.Fields(string(b)) {
		counts[l]++
		total++
	}
	if total == 0 {
		return "0"
	}
	var parts []string
	for k, v := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

// medianSamples runs f runs times and returns the median wall time and
// the median CPU time (user and system, toque's and its children's).
func medianSamples(runs int, f func() sample) (wall, cpu time.Duration) {
	var ws, cs []time.Duration
	for r := 0; r < runs; r++ {
		s := f()
		ws, cs = append(ws, s.wall), append(cs, s.cpu)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
	return ws[len(ws)/2], cs[len(cs)/2]
}

// ansibleBeside times, for comparison, Ansible's apt module checking the
// same n installed packages (ansible-playbook --check, one task with the
// n names, state present), in a mount namespace whose /etc, /var and /usr
// are overlays of the machine's, with ansible-core installed there from
// the machine's own apt sources (so it needs Debian's mirror) and the
// benchmark's packages in its dpkg status: nothing of the machine
// changes. It returns the median, or why it could not run.
func ansibleBeside(dir string, names []string, status []byte, runs int) (time.Duration, error) {
	layers, err := os.MkdirTemp(dir, "ansible-")
	if err != nil {
		return 0, err
	}
	for _, d := range []string{"eu", "ew", "vu", "vw", "uu", "uw"} {
		if err := os.MkdirAll(filepath.Join(layers, d), 0o755); err != nil {
			return 0, err
		}
	}
	extra := filepath.Join(layers, "status-extra")
	if err := os.WriteFile(extra, status, 0o644); err != nil {
		return 0, err
	}
	var play strings.Builder
	play.WriteString("- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n    - apt:\n        state: present\n        name:\n")
	for _, n := range names {
		fmt.Fprintf(&play, "          - %s\n", n)
	}
	if err := os.WriteFile(filepath.Join(layers, "play.yml"), []byte(play.String()), 0o644); err != nil {
		return 0, err
	}
	script := fmt.Sprintf(`set -e
mount -t overlay overlay -o lowerdir=/etc,upperdir=%[1]s/eu,workdir=%[1]s/ew /etc
mount -t overlay overlay -o lowerdir=/var,upperdir=%[1]s/vu,workdir=%[1]s/vw /var
mount -t overlay overlay -o lowerdir=/usr,upperdir=%[1]s/uu,workdir=%[1]s/uw /usr
command -v ansible-playbook >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get -q -y install ansible-core >/dev/null
printf '\n' >> /var/lib/dpkg/status
cat %[1]s/status-extra >> /var/lib/dpkg/status
export ANSIBLE_LOCALHOST_WARNING=False ANSIBLE_INVENTORY_UNPARSED_WARNING=False
ansible-playbook --check %[1]s/play.yml >/dev/null
for i in $(seq %[2]d); do
  s=$(date +%%s%%N); ansible-playbook --check %[1]s/play.yml >/dev/null; e=$(date +%%s%%N)
  echo "ansible $(( (e - s) / 1000 ))"
done`, layers, runs)
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	var ds []time.Duration
	for _, l := range strings.Split(string(out), "\n") {
		var which string
		var us int64
		if _, err := fmt.Sscan(l, &which, &us); err == nil && which == "ansible" {
			ds = append(ds, time.Duration(us)*time.Microsecond)
		}
	}
	if len(ds) == 0 {
		return 0, fmt.Errorf("no timings: %s", out)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}
