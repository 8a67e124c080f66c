package command

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/fleet"
	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources/builtin"
)

// fleetEnv is an Env keeping toque's state in scratch, for the fleet
// commands run in-process.
func fleetEnv(tb testing.TB, dir, scratch string) Env {
	vars := map[string]string{
		"TOQUE_STATE_DIR": filepath.Join(scratch, "state"),
		HostLockEnv:       filepath.Join(scratch, "host.lock"),
		"NO_COLOR":        "1",
		"TOQUE_LOG":       "",
	}
	return Env{Dir: dir, LookupEnv: func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, v != ""
		}
		return os.LookupEnv(k)
	}}
}

// simulatedBundle writes a bundle of n hosts whose plans make the same
// changes: one real plan of a recipe directory, made again for each host
// (its own host name, machine id, salt and time), as n hosts' toque would.
func simulatedBundle(tb testing.TB, n int) (dir, bundle string) {
	tb.Helper()
	dir = tb.TempDir()
	root := filepath.Join(dir, "site")
	files := map[string]string{"recipes/dir.hcl": `directory "` + root + `" {}` + "\n"}
	for i := 0; i < 5; i++ {
		files[fmt.Sprintf("recipes/r%d.hcl", i)] = fmt.Sprintf(`
file "%s/f%d.conf" {
  content = "setting_%d = on\nworkers = 4\n"
  mode    = "0644"
}
`, root, i, i)
	}
	testutil.WriteFiles(tb, dir, files)
	env := fleetEnv(tb, dir, tb.TempDir())
	if code, out, errs := runWithEnv(env, []string{"-chdir=recipes", "plan", "-out=" + filepath.Join(dir, "one.plan")}); code != 0 {
		tb.Fatalf("plan: %d\n%s%s", code, out, errs)
	}
	f, err := plan.ReadFile(tb.Context(), filepath.Join(dir, "one.plan"), plan.ReadOptions{Types: builtin.Registry()})
	if err != nil {
		tb.Fatal(err)
	}
	p := f.Plan
	m := fleet.Manifest{ToqueVersion: Version, PlanFormat: plan.FormatVersion}
	plans := map[string][]byte{}
	tmp := filepath.Join(dir, "host.plan")
	for i := 0; i < n; i++ {
		alias := fmt.Sprintf("web-%04d", i)
		p.Host = plan.Host{Hostname: alias, MachineID: fmt.Sprintf("%032x", i)}
		p.Salt = fmt.Sprintf("%064x", i)
		if err := plan.Write(tmp, p); err != nil {
			tb.Fatal(err)
		}
		b, err := os.ReadFile(tmp)
		if err != nil {
			tb.Fatal(err)
		}
		plans[alias] = b
		m.Hosts = append(m.Hosts, fleet.HostEntry{Alias: alias, Status: fleet.StatusChanges, Hostname: alias, MachineID: p.Host.MachineID})
	}
	bundle = filepath.Join(dir, "fleet.plan")
	if _, err := fleet.WriteBundle(bundle, m, plans, nil); err != nil {
		tb.Fatal(err)
	}
	return dir, bundle
}

// 1,000 hosts with identical changes are one class: the review shows
// their changes once.
func TestFleetShowGroupsIdenticalPlans(t *testing.T) {
	dir, bundle := simulatedBundle(t, 1000)
	env := fleetEnv(t, dir, t.TempDir())
	code, out, errs := runWithEnv(env, []string{"fleet", "show", bundle})
	if code != 0 {
		t.Fatalf("fleet show: %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"Fleet plan of 1000 hosts: 1000 hosts with changes.", "1000 hosts, the same changes: web-0000, web-0001,", "… and 980 more"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "will be created"); n != 6 {
		t.Errorf("the changes are shown %d times, want once (6 resources):\n%s", n, out)
	}
	code, out, _ = runWithEnv(env, []string{"fleet", "show", "-markdown", bundle})
	if code != 0 || strings.Count(out, "#### ") != 1 {
		t.Errorf("markdown: %d sections\n%s", strings.Count(out, "#### "), out)
	}
	code, out, _ = runWithEnv(env, []string{"fleet", "show", bundle, "web-0042"})
	if code != 0 || !strings.Contains(out, "toque will perform the following actions on web-0042:") {
		t.Errorf("fleet show BUNDLE HOST: %d\n%s", code, out)
	}
}

// BenchmarkFleetShow1000 is toque fleet show of 1,000 hosts whose plans
// make the same changes: reading and verifying the bundle, decoding and
// checking every plan, rendering each one's changes and grouping them.
//
// It reports the bundle's size: each host's plan.out is in it whole
// (byte-identical to a single host's plan), so the size grows linearly,
// by one plan and one manifest entry a host.
func BenchmarkFleetShow1000(b *testing.B) {
	dir, bundle := simulatedBundle(b, 1000)
	env := fleetEnv(b, dir, b.TempDir())
	st, err := os.Stat(bundle)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if code, out, errs := runWithEnv(env, []string{"fleet", "show", bundle}); code != 0 {
			b.Fatalf("%d\n%s%s", code, out, errs)
		}
	}
	b.ReportMetric(float64(st.Size())/1000, "bundle-bytes/host")
}

// Bad input to the fleet commands: an error naming what is wrong, before
// any host is contacted (none is reachable from these tests).
func TestFleetCommandErrors(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"site/a.hcl": `file "/tmp/x" { content = "x" }`,
		"fleet.hcl": `recipes = "site"
hosts = ["web-01", "web-02"]
group "web" { hosts = ["web-*"] }
`,
		"twice.hcl": `recipes = "site"
hosts = ["web-01"]
host "web-01" {}
`,
	})
	_, bundle := simulatedBundle(t, 2)
	data, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.plan"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A bundle of another plan format (another toque made it).
	m := fleet.Manifest{ToqueVersion: "0.0.1", PlanFormat: plan.FormatVersion - 1, Hosts: []fleet.HostEntry{{Alias: "web-01", Status: fleet.StatusNoChanges}}}
	if _, err := fleet.WriteBundle(filepath.Join(dir, "old.plan"), m, nil, nil); err != nil {
		t.Fatal(err)
	}
	env := fleetEnv(t, dir, t.TempDir())
	for _, c := range []struct {
		args []string
		code int
		says []string
	}{
		{[]string{"fleet", "plan", "-limit=web-9"}, 1, []string{`-limit "web-9" names no host or group of fleet.hcl`, `Did you mean "web-01"?`}},
		{[]string{"fleet", "plan", "-inventory=twice.hcl"}, 1, []string{"Host declared twice", "twice.hcl:3"}},
		{[]string{"fleet", "plan", "-inventory=none.hcl"}, 1, []string{"Cannot read the inventory", "none.hcl: there is no such file"}},
		{[]string{"fleet", "plan", "-sign-key=nope.key", "-out=x.plan"}, 1, []string{"-sign-key"}},
		{[]string{"fleet", "apply", "old.plan"}, 1, []string{"old.plan holds plans of format", "make a new fleet plan with this toque. Nothing was applied"}},
		{[]string{"fleet", "apply", "other.plan"}, 1, []string{"other.plan holds plans for web-0000, web-0001, which fleet.hcl does not declare"}},
		{[]string{"fleet", "apply", "-expect-digest=sha256:" + strings.Repeat("0", 64), "other.plan"}, 1, []string{"this is not the fleet plan that was reviewed"}},
		{[]string{"fleet", "apply", "-limit=db", "old.plan"}, 1, []string{"old.plan holds plans of format"}},
		{[]string{"fleet", "apply"}, 1, []string{"fleet apply needs one argument, the bundle"}},
		{[]string{"fleet", "show", "fleet.hcl"}, 1, []string{"not a toque fleet plan"}},
		{[]string{"fleet", "show", "other.plan", "db-01"}, 1, []string{`other.plan holds no host "db-01"`}},
		{[]string{"fleet", "nonsense"}, 1, []string{`toque fleet has no subcommand "nonsense"`}},
	} {
		code, out, errs := runWithEnv(env, c.args)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", c.args, code, c.code, out, errs)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(out+errs, s) {
				t.Errorf("%v: output lacks %q:\n%s%s", c.args, s, out, errs)
			}
		}
	}
}

// fleet show BUNDLE HOST decodes that host's plan alone: another host's
// broken plan does not stand in its way.
func TestFleetShowOneHostOfABrokenBundle(t *testing.T) {
	dir, bundle := simulatedBundle(t, 2)
	b, err := fleet.ReadBundle(bundle, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	m, plans := b.Manifest, b.Plans
	plans["web-0001"] = []byte(`{"toque_plan":5,"checksum":"sha256:` + strings.Repeat("0", 64) + `","plan":{}}`)
	for i := range m.Hosts {
		m.Hosts[i].PlanDigest = ""
	}
	broken := filepath.Join(dir, "broken.plan")
	if _, err := fleet.WriteBundle(broken, m, plans, nil); err != nil {
		t.Fatal(err)
	}
	env := fleetEnv(t, dir, t.TempDir())
	if code, out, errs := runWithEnv(env, []string{"fleet", "show", broken, "web-0000"}); code != 0 || !strings.Contains(out, "on web-0000:") {
		t.Errorf("fleet show BUNDLE web-0000: %d\n%s%s", code, out, errs)
	}
	if code, _, _ := runWithEnv(env, []string{"fleet", "show", broken, "web-0001"}); code != 1 {
		t.Errorf("the broken host's plan shown: exit %d", code)
	}
}
