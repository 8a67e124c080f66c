package fleet_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/fleet"
)

// Plan every host, review the grouped changes, apply in batches, and
// plan again: the flow of a fleet, on eight real sshd hosts.
func TestFleetPlanReviewApply(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
`+hostEnv+`
hosts = ["web-01", "web-02", "web-04", "web-05", "web-06", "db-01", "db-02"]

host "web-03" {
  attributes = {
    site = { greeting = "bonjour" }
  }
}

group "web" {
  hosts = ["web-*"]
  attributes = {
    site = {
      greeting = "hello"
      owner    = "web team"
    }
  }
}

group "db" {
  hosts = ["db-*"]
  attributes = {
    site = { greeting = "hello", owner = "web team" }
  }
}

rollout {
  batches      = [1, "50%", "100%"]
  max_failures = 0
  parallel     = 4
}
`)
	s.write("site/motd.hcl", `
directory "/srv/flow" {
  mode = "0755"
}

file "/srv/flow/motd" {
  content = "${node.site.greeting} from the ${node.site.owner}\n"
  mode    = "0644"
}
`)
	r := s.toque("fleet", "plan", "-out=fleet.plan")
	s.want(r, 0, "Fleet plan of 8 hosts: 8 hosts with changes (2 different sets of changes).",
		"7 hosts, the same changes: web-01, web-02, web-04, web-05, web-06, db-01, db-02",
		"1 host differs: web-03", `+ file "/srv/flow/motd"`, "Saved the fleet plan to fleet.plan.")
	for _, h := range labHosts {
		if _, ok := s.content(h, "/srv/flow/motd"); ok {
			t.Fatalf("fleet plan changed %s", h)
		}
	}

	// The bundle: a manifest and each host's plan.out, which toque show
	// reads as it reads any plan.
	entries := bundleEntries(t, filepath.Join(s.dir, "fleet.plan"))
	if len(entries) != 9 {
		t.Fatalf("the bundle holds %d entries, want a manifest and 8 plans", len(entries))
	}
	b, err := fleet.ReadBundle(filepath.Join(s.dir, "fleet.plan"), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Manifest.Hosts {
		h := s.host(e.Alias)
		if e.Status != fleet.StatusChanges || e.MachineID != h.MachineID || e.Hostname != h.Hostname || !strings.HasPrefix(e.HostKey, "ssh-ed25519 SHA256:") {
			t.Errorf("manifest entry %+v", e)
		}
	}
	planFile := filepath.Join(s.dir, "web-03.plan")
	if err := os.WriteFile(planFile, entries["hosts/web-03/plan.out"], 0o600); err != nil {
		t.Fatal(err)
	}
	r = s.local("show", "-json", planFile)
	s.want(r, 0, b.Host("web-03").PlanDigest)
	var shown struct {
		Attributes []struct {
			Path   string `json:"path"`
			Level  string `json:"level"`
			Source string `json:"source"`
		} `json:"attributes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{}
	for _, a := range shown.Attributes {
		sources[a.Path] = a.Level + " " + a.Source
	}
	// Provenance points at the inventory's lines.
	if got := sources["site.greeting"]; got != "normal -attr-file fleet.hcl#host.web-03:13" {
		t.Errorf("site.greeting comes from %q", got)
	}
	if got := sources["site.owner"]; got != "normal -attr-file fleet.hcl#group.web:22" {
		t.Errorf("site.owner comes from %q", got)
	}

	r = s.local("fleet", "show", "-markdown", "fleet.plan")
	s.want(r, 0, "#### 7 hosts, the same changes", "#### 1 host differs", "`web-03`")

	// Apply: a canary, then half, then the rest.
	r = s.toque("fleet", "apply", "fleet.plan")
	s.want(r, 0, "Batch 1 of 3: web-01\n", "Batch 2 of 3: ", "Batch 3 of 3: ", "Fleet apply: 8 applied.", "Result: fleet.result.")
	for _, h := range labHosts {
		want := "hello from the web team\n"
		if h == "web-03" {
			want = "bonjour from the web team\n"
		}
		if got, _ := s.content(h, "/srv/flow/motd"); got != want {
			t.Errorf("%s: /srv/flow/motd is %q, want %q", h, got, want)
		}
	}
	if _, err := os.Stat("/srv/flow"); err == nil {
		t.Fatal("the machine's own /srv/flow was written")
	}
	res, err := fleet.ReadResult(filepath.Join(s.dir, "fleet.result"))
	if err != nil {
		t.Fatal(err)
	}
	batches := map[int]int{}
	for _, h := range res.Hosts {
		batches[h.Batch]++
	}
	if batches[1] != 1 || batches[2] != 4 || batches[3] != 3 {
		t.Errorf("batches %v, want 1, 4 and 3 hosts", batches)
	}

	// Applied once: the hosts' journals refuse it again.
	r = s.toque("fleet", "apply", "-limit", "web-01,db-*", "fleet.plan")
	s.want(r, 0, "web-01: already-applied", "db-01: already-applied", "Fleet apply: 3 already-applied.")

	// Converged: a drift check passes, until a host drifts.
	r = s.toque("fleet", "plan", "-detailed-exitcode")
	s.want(r, 0, "8 hosts without changes")
	if out, err := s.host("db-02").Exec("echo edited > /srv/flow/motd"); err != nil {
		t.Fatal(err, out)
	}
	r = s.toque("fleet", "plan", "-detailed-exitcode")
	s.want(r, 2, "1 host has changes: db-02", "7 hosts without changes")
}

// A canary that fails stops the rollout: no other host is touched. Once
// it is mended, -limit @fleet.result takes up the hosts that did not
// succeed, and the canary's apply resumes where it failed.
func TestFleetFailingCanaryStopsTheRollout(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
`+hostEnv+`
hosts = ["web-04", "web-05", "web-06", "db-01"]

rollout {
  batches      = [1, "100%"]
  max_failures = 0
}
`)
	s.write("site/canary.hcl", `
file "/srv/canary/before" {
  content = "before\n"
}

execute "health" {
  command = "test ! -e /srv/canary-broken"
}

file "/srv/canary/after" {
  content = "after\n"
}
`)
	for _, h := range []string{"web-04", "web-05", "web-06", "db-01"} {
		if out, err := s.host(h).Exec("mkdir -p /srv/canary"); err != nil {
			t.Fatal(err, out)
		}
	}
	r := s.toque("fleet", "plan", "-out=fleet.plan")
	s.want(r, 0, "4 hosts, the same changes")
	// The canary (the first host) breaks after the review.
	if out, err := s.host("web-04").Exec("touch /srv/canary-broken"); err != nil {
		t.Fatal(err, out)
	}
	r = s.toque("fleet", "apply", "fleet.plan")
	s.want(r, 7, "Batch 1 of 2: web-04", "web-04: failed in ", "execute[health]: exited with code 1",
		"1 host failed, more than max_failures = 0 allows: no further host is started.",
		"web-05: not-started", "Fleet apply: 1 failed, 3 not-started.",
		"To go on with the 4 hosts that did not succeed: toque fleet apply -limit @fleet.result fleet.plan")
	if strings.Contains(r.stdout, "Batch 2") {
		t.Fatalf("a second batch started:\n%s", r)
	}
	for _, h := range []string{"web-05", "web-06", "db-01"} {
		if _, ok := s.content(h, "/srv/canary/before"); ok {
			t.Fatalf("%s was changed after the canary failed", h)
		}
	}
	if _, ok := s.content("web-04", "/srv/canary/after"); ok {
		t.Fatal("the canary went past its failed resource")
	}

	// Mended, the rollout takes up where it stopped.
	if out, err := s.host("web-04").Exec("rm /srv/canary-broken"); err != nil {
		t.Fatal(err, out)
	}
	r = s.toque("fleet", "apply", "-limit", "@fleet.result:failed", "fleet.plan")
	s.want(r, 0, "web-04: applied", "resumed an earlier, unfinished apply of its plan", "Fleet apply: 1 applied.")
	// The result file keeps the others' outcomes: the rest go on.
	r = s.toque("fleet", "apply", "-limit", "@fleet.result", "fleet.plan")
	s.want(r, 0, "Batch 1 of 2: web-05\n", "Fleet apply: 3 applied.")
	r = s.toque("fleet", "apply", "-limit", "@fleet.result", "fleet.plan")
	s.want(r, 1, "-limit @fleet.result: no host of fleet.result did not succeed")
	for _, h := range []string{"web-04", "web-05", "web-06", "db-01"} {
		if got, _ := s.content(h, "/srv/canary/after"); got != "after\n" {
			t.Errorf("%s: /srv/canary/after is %q", h, got)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Hosts toque cannot reach, or must not trust, are reported by name and
// why, from what ssh said (never from its exit status alone); the other
// hosts are planned. Nothing is sent to a host whose key is not the one
// known_hosts holds, and accept-new only when the inventory says so.
func TestFleetUnreachableHosts(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	if err := f.lab.AddAlias("ghost", "nowhere.invalid"); err != nil {
		t.Fatal(err)
	}
	s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
`+hostEnv+`
hosts = ["web-01", "web-02", "web-05", "web-06", "ghost"]

host "db-01" {
  options = { StrictHostKeyChecking = "accept-new" }
}
`)
	s.write("site/a.hcl", `
file "/srv/unreachable.txt" {
  content = "x\n"
}
`)
	web02, web05, web06, db01 := s.host("web-02"), s.host("web-05"), s.host("web-06"), s.host("db-01")
	web02.StopSSHD()
	defer web02.StartSSHD()
	if err := web05.NewHostKey(); err != nil {
		t.Fatal(err)
	}
	if err := f.lab.ForgetHostKey(web06); err != nil {
		t.Fatal(err)
	}
	if err := f.lab.ForgetHostKey(db01); err != nil {
		t.Fatal(err)
	}
	defer f.lab.RememberHostKeys()

	r := s.toque("fleet", "plan", "-out=fleet.plan", "-detailed-exitcode")
	s.want(r, 1, "Fleet plan of 6 hosts: 2 hosts with changes, 4 hosts unreachable.",
		"2 hosts, the same changes: web-01, db-01",
		"web-02: connection refused: ssh: connect to host 10.231.2.2 port 22: Connection refused",
		"web-05: host key changed: the host presented key SHA256:", "not the one known_hosts holds for it (ED25519 key in "+f.lab.KnownHosts+":5), so ssh refused it",
		"web-06: host key unknown: No ED25519 host key is known for 10.231.6.2 and you have requested strict checking.",
		"ghost: cannot resolve: ssh: Could not resolve hostname nowhere.invalid")
	for _, h := range []string{"web-02", "web-05", "web-06"} {
		if out, _ := s.host(h).Exec("ls /var/cache/toque/fleet/agents 2>&1; ls /srv"); strings.Contains(out, "unreachable.txt") {
			t.Fatalf("%s was planned", h)
		}
	}
	if kh := readFile(t, f.lab.KnownHosts); !strings.Contains(kh, db01.Addr+" ") || strings.Contains(kh, s.host("web-06").Addr+" ") {
		t.Fatalf("accept-new should have added db-01's key, and only it:\n%s", kh)
	}

	// Applying the bundle touches the planned hosts only.
	r = s.toque("fleet", "apply", "fleet.plan")
	s.want(r, 0, "web-01: applied", "db-01: applied", "web-02: not-planned: fleet plan could not plan it (connection refused)", "Fleet apply: 2 applied, 4 not-planned.")

	// fleet hosts shows what ssh makes of each alias.
	r = s.toque("fleet", "hosts", "-limit", "web-0[12]")
	s.want(r, 0, "web-01\n  recipes:     site\n", "  ssh hostname               10.231.1.2\n", "  ssh user                   root\n", "  ssh stricthostkeychecking  true\n", "  ssh connecttimeout         5\n")
	if err := web05.NewHostKey(); err != nil { // any new key: known_hosts is written again
		t.Fatal(err)
	}
}

// A plan goes only to the host it was made on: an alias that now leads
// to another host (another key), or to a clone with the same key (another
// machine id), is refused before anything is sent.
func TestFleetPlanShippedToTheWrongHost(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
`+hostEnv+`
hosts = ["web-01", "web-02"]
`)
	s.write("site/a.hcl", `
file "/srv/wrong-host.txt" {
  content = "${host.hostname}\n"
}
`)
	r := s.toque("fleet", "plan", "-out=fleet.plan")
	s.want(r, 0, "2 hosts with changes")
	web01, web02, web03 := s.host("web-01"), s.host("web-02"), s.host("web-03")

	// web-01's alias now leads to web-03.
	if err := f.lab.SetAddr("web-01", web03.Addr); err != nil {
		t.Fatal(err)
	}
	defer f.lab.SetAddr("web-01", web01.Addr)
	r = s.toque("fleet", "apply", "-limit=web-01", "fleet.plan")
	s.want(r, 7, "web-01: refused", "web-01 answers with host key ssh-ed25519 SHA256:", "this is not the host the plan is for", "nothing was sent")

	// web-03 is a clone of web-02: the same host key.
	if err := web03.CopyHostKey(web02); err != nil {
		t.Fatal(err)
	}
	if err := f.lab.RememberHostKeys(); err != nil {
		t.Fatal(err)
	}
	defer f.lab.RememberHostKeys()
	defer web03.NewHostKey()
	if err := f.lab.SetAddr("web-02", web03.Addr); err != nil {
		t.Fatal(err)
	}
	defer f.lab.SetAddr("web-02", web02.Addr)
	r = s.toque("fleet", "apply", "-limit=web-02", "fleet.plan")
	s.want(r, 7, "web-02: refused", `web-02 is now host "web-03" with machine id "`+web03.MachineID+`", but its plan was made on "web-02" with machine id "`+web02.MachineID+`"`)
	for _, h := range []string{"web-01", "web-02", "web-03"} {
		if _, ok := s.content(h, "/srv/wrong-host.txt"); ok {
			t.Fatalf("%s was changed", h)
		}
	}
}

// A connection lost while a host applies leaves its outcome unknown;
// the host's apply goes on without toque, and its journal tells the next
// fleet apply what became of it.
func TestFleetConnectionDroppedMidApply(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
`+hostEnv+`
hosts = ["db-02"]
`)
	s.write("site/a.hcl", `
directory "/srv/dropped" {}

file "/srv/dropped/first" {
  content = "1\n"
}

execute "slow" {
  command = "sleep 2"
}

file "/srv/dropped/last" {
  content = "2\n"
}
`)
	r := s.toque("fleet", "plan", "-out=fleet.plan")
	s.want(r, 0, "1 host has changes")
	db02 := s.host("db-02")
	cmd := s.toqueCmd("fleet", "apply", "fleet.plan")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, ok := s.content("db-02", "/srv/dropped/first")
		if !ok && cmd.ProcessState != nil {
			t.Fatalf("fleet apply ended:\n%s", out.String())
		}
		return ok
	})
	if n := db02.DropConnections(); n == 0 {
		t.Fatal("no connection to drop")
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("want exit 7, got %v:\n%s", err, out.String())
	}
	for _, w := range []string{"db-02: unknown", "the connection was lost", "the apply may have finished or not", "Fleet apply: 1 unknown."} {
		if !strings.Contains(out.String(), w) {
			t.Fatalf("output lacks %q:\n%s", w, out.String())
		}
	}
	// The host went on, and finished.
	waitFor(t, func() bool { _, ok := s.content("db-02", "/srv/dropped/last"); return ok })
	waitFor(t, func() bool {
		out, _ := db02.Exec("pgrep -f '[a]pply -json' || true")
		return strings.TrimSpace(out) == ""
	})
	r = s.toque("fleet", "apply", "-limit", "@fleet.result:unknown", "fleet.plan")
	s.want(r, 0, "db-02: already-applied", "its journal says an apply of this plan finished already")
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("timed out waiting")
}

// Ctrl-C starts no further host, and lets the hosts applying finish the
// resource in hand: they stop there, and applying again resumes them.
func TestFleetInterrupt(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
`+hostEnv+`
hosts = ["web-01", "web-02", "web-03"]

rollout {
  batches  = [1, "100%"]
  parallel = 1
}
`)
	s.write("site/a.hcl", `
directory "/srv/interrupt" {}

execute "slow" {
  # Slow on the canary only, where the test interrupts it.
  command = "touch /srv/interrupt/started && if [ \"$(hostname)\" = web-01 ]; then sleep 2; fi"
}

file "/srv/interrupt/after" {
  content = "after\n"
}
`)
	r := s.toque("fleet", "plan", "-out=fleet.plan")
	s.want(r, 0, "3 hosts, the same changes")
	cmd := s.toqueCmd("fleet", "apply", "fleet.plan")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, ok := s.content("web-01", "/srv/interrupt/started"); return ok })
	interrupt(cmd)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 {
		t.Fatalf("want exit 5, got %v:\n%s", err, out.String())
	}
	for _, w := range []string{"Interrupt received: no further host is started", "web-01: interrupted", "web-02: not-started", "web-03: not-started", "Fleet apply: 1 interrupted, 2 not-started."} {
		if !strings.Contains(out.String(), w) {
			t.Fatalf("output lacks %q:\n%s", w, out.String())
		}
	}
	if _, ok := s.content("web-01", "/srv/interrupt/after"); ok {
		t.Fatal("web-01 went past the resource in hand")
	}
	if _, ok := s.content("web-02", "/srv/interrupt"); ok {
		t.Fatal("web-02 was started after the interrupt")
	}
	r = s.toque("fleet", "apply", "-limit", "@fleet.result", "fleet.plan")
	s.want(r, 0, "web-01: applied", "resumed an earlier, unfinished apply", "Fleet apply: 3 applied.")
}

// become = "sudo": toque runs as root through sudo -n, with a root-owned
// cache; a host whose sudo wants a password is an error naming it, and
// nothing is changed there.
func TestFleetBecomeSudo(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	for alias, rule := range map[string]string{"db-01": "NOPASSWD: ALL", "web-06": "ALL"} {
		h := s.host(alias)
		script := `grep -q '^deploy:' /etc/passwd || {
  echo 'deploy:x:1500:1500::/home/deploy:/bin/sh' >> /etc/passwd
  echo 'deploy:x:1500:' >> /etc/group
  echo 'deploy:*:19000:0:99999:7:::' >> /etc/shadow
  mkdir -p /home/deploy && chown 1500:1500 /home/deploy
}
echo 'deploy ALL=(ALL) ` + rule + `' > /etc/sudoers.d/deploy && chmod 0440 /etc/sudoers.d/deploy`
		if out, err := h.Exec(script); err != nil {
			t.Fatal(err, out)
		}
		if err := f.lab.AddAlias(alias+"-deploy", h.Addr, "User deploy"); err != nil {
			t.Fatal(err)
		}
	}
	s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
become     = "sudo"
`+hostEnv+`
hosts = ["db-01-deploy", "web-06-deploy"]
`)
	s.write("site/a.hcl", `
file "/srv/become.txt" {
  content = "as root\n"
  owner   = "root"
}
`)
	r := s.toque("fleet", "plan", "-out=fleet.plan")
	s.want(r, 1, "1 host has changes: db-01-deploy",
		"web-06-deploy: sudo asks for a password, and toque runs sudo -n, which never prompts")
	if out, err := s.host("db-01").Exec("stat -c '%U %a' /var/cache/toque/fleet"); err != nil || out != "root 700\n" {
		t.Fatalf("the cache under become: %q %v", out, err)
	}
	if out, _ := s.host("web-06").Exec("ls -A /home/deploy"); strings.TrimSpace(out) != "" {
		t.Fatalf("something was left in deploy's home on web-06: %s", out)
	}
	r = s.toque("fleet", "apply", "fleet.plan")
	s.want(r, 0, "db-01-deploy: applied", "web-06-deploy: not-planned")
	if out, err := s.host("db-01").Exec("stat -c '%U' /srv/become.txt"); err != nil || out != "root\n" {
		t.Fatalf("/srv/become.txt: %q %v", out, err)
	}
}

// A signed bundle: fleet apply -verify-key refuses any other, and a host
// with verify_key applies only plans signed by a key it trusts, whatever
// the machine running toque fleet sends it. An edited bundle is refused
// before any host is contacted.
func TestFleetSignedBundle(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
`+hostEnv+`
host "web-04" {
  verify_key = "/etc/toque/trusted.pub"
}
`)
	s.write("site/a.hcl", `
file "/srv/signed.txt" {
  content = "signed\n"
}
`)
	s.want(s.local("keygen", "ci.key"), 0)
	pub := readFile(t, filepath.Join(s.dir, "ci.key.pub"))
	if out, err := s.host("web-04").Exec("mkdir -p /etc/toque && printf '%s' '" + pub + "' > /etc/toque/trusted.pub && chmod 644 /etc/toque/trusted.pub"); err != nil {
		t.Fatal(err, out)
	}

	// Unsigned: the host refuses its plan.
	r := s.toque("fleet", "plan", "-out=unsigned.plan")
	s.want(r, 0, "Not signed.")
	r = s.toque("fleet", "apply", "unsigned.plan")
	s.want(r, 7, "web-04: refused", "carries no signature, and this host applies only plans signed by a key in /etc/toque/trusted.pub")
	if _, ok := s.content("web-04", "/srv/signed.txt"); ok {
		t.Fatal("web-04 applied an unsigned plan")
	}
	r = s.toque("fleet", "apply", "-verify-key=ci.key.pub", "unsigned.plan")
	s.want(r, 1, "carries no signature, and only fleet plans signed by a key in ci.key.pub are accepted")

	// Signed: the bundle and the host's plan.
	r = s.toque("fleet", "plan", "-sign-key=ci.key", "-out=fleet.plan")
	s.want(r, 0, "Signed by key SHA256:")
	entries := bundleEntries(t, filepath.Join(s.dir, "fleet.plan"))
	planFile := filepath.Join(s.dir, "web-04.plan")
	if err := os.WriteFile(planFile, entries["hosts/web-04/plan.out"], 0o600); err != nil {
		t.Fatal(err)
	}
	s.want(s.local("show", "-verify-key=ci.key.pub", planFile), 0, "Signed by key SHA256:", "one of the trusted keys")

	// Edited after signing: one byte of the host's plan.
	data, err := os.ReadFile(filepath.Join(s.dir, "fleet.plan"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(`signed\n`))
	if i < 0 {
		t.Fatal("the plan's content is not in the bundle")
	}
	edited := append([]byte(nil), data...)
	edited[i] = 'S'
	if err := os.WriteFile(filepath.Join(s.dir, "edited.plan"), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	r = s.toque("fleet", "apply", "-verify-key=ci.key.pub", "edited.plan")
	s.want(r, 1, "the fleet plan was edited or damaged", "the plan of web-04 does not match the manifest")

	r = s.toque("fleet", "apply", "-verify-key=ci.key.pub", "fleet.plan")
	s.want(r, 0, "web-04: applied")
	if got, _ := s.content("web-04", "/srv/signed.txt"); got != "signed\n" {
		t.Fatalf("web-04: %q", got)
	}
}

// A host whose cache has no room: an error naming the host, and nothing
// of toque's left half-written there.
func TestFleetRemoteCacheFull(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	h := s.host("web-05")
	if out, err := h.Exec("mkdir -p /var/cache/toque && mount -t tmpfs -o size=64k tmpfs /var/cache/toque"); err != nil {
		t.Fatal(err, out)
	}
	defer h.Exec("umount /var/cache/toque")
	s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
`+hostEnv+`
hosts = ["web-05"]
`)
	s.write("site/a.hcl", `
file "/srv/full.txt" {
  content = "x\n"
}
`)
	r := s.toque("fleet", "plan", "-out=fleet.plan")
	s.want(r, 1, "web-05: planning failed (cache): cannot store the toque agent in its cache: cannot write to /var/cache/toque/fleet/agents", "No space left on device")
	if out, _ := h.Exec("ls -A /var/cache/toque/fleet/agents"); strings.TrimSpace(out) != "" {
		t.Fatalf("left in the cache: %s", out)
	}
}

// A master outlives the command that started it: the next command reuses
// it (and what ssh -G said of the alias) and opens no connection, until what it was trusted under changes
// (known_hosts) or the inventory says ControlPersist = "no".
func TestFleetMastersPersist(t *testing.T) {
	f := lab(t)
	s := f.scenario(t)
	s.env = append(s.env, "TOQUE_LOG=debug")
	inventory := func(web02 string) {
		s.write("fleet.hcl", `
ssh_config = "@SSHCONFIG@"
recipes    = "site"
`+hostEnv+`
hosts = ["web-01"]

host "web-02" {
`+web02+`
}
`)
	}
	inventory("")
	s.write("site/a.hcl", `
file "/srv/persist.txt" {
  content = "x\n"
}
`)
	controlDir := filepath.Join(s.run, "toque-fleet")
	// plan runs it and says how many masters it started and how many
	// commands it ran.
	plan := func() (started, commands int) {
		t.Helper()
		r := s.toque("fleet", "plan", "-out=fleet.plan")
		s.want(r, 0, "2 hosts with changes")
		s.last = r
		return strings.Count(r.stderr, "ssh ran: op=master"), strings.Count(r.stderr, "ssh ran: op=command")
	}
	pids := func() map[string]string {
		out := map[string]string{}
		for _, sock := range masters(controlDir) {
			b, _ := exec.Command("ssh", "-o", "ControlPath="+sock, "-O", "check", "x").CombinedOutput()
			out[filepath.Base(sock)] = strings.TrimSpace(string(b))
		}
		return out
	}
	if started, _ := plan(); started != 2 {
		t.Fatalf("the first plan started %d masters, want 2", started)
	}
	before := pids()
	if len(before) != 2 {
		t.Fatalf("want the 2 masters up after the plan, got %v", before)
	}
	if started, commands := plan(); started != 0 || commands != 2 {
		t.Fatalf("a warm plan started %d masters and ran %d commands, want 0 and 2 (one round trip a host)", started, commands)
	}
	// The hosts' platforms are known from the first plan over these
	// masters: each host's agent ran at once and detected the host itself.
	if n := strings.Count(s.last.stderr, "ssh ran: op=resolve"); n != 0 {
		t.Fatalf("a warm plan ran ssh -G %d times, want none (the configuration did not change)", n)
	}
	if n := strings.Count(s.last.stderr, "reused_master=true detected_by_agent=true"); n != 2 {
		t.Fatalf("want both hosts planned over a reused master by an agent run at once, got %d:\n%s", n, s.last.stderr)
	}
	if after := pids(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the warm plan did not reuse the masters: %v, then %v", before, after)
	}

	// known_hosts changes: every master is verified again.
	kh := readFile(t, f.lab.KnownHosts)
	if err := os.WriteFile(f.lab.KnownHosts, []byte(kh+"# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer f.lab.RememberHostKeys()
	if started, _ := plan(); started != 2 {
		t.Fatalf("after known_hosts changed, the plan started %d masters, want 2", started)
	}
	after := pids()
	for sock, pid := range before {
		if after[sock] == "" || after[sock] == pid {
			t.Fatalf("the masters verified under the old known_hosts should have been replaced: %v, then %v", before, after)
		}
	}

	// ControlPersist = "no": web-02's master is started and closed.
	inventory(`  options = { ControlPersist = "no" }`)
	before = pids()
	if started, _ := plan(); started != 1 {
		t.Fatalf("with ControlPersist = no for web-02, the plan started %d masters, want 1", started)
	}
	if after := pids(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("web-02's master should be closed at the end and web-01's reused: %v, then %v", before, after)
	}
}
