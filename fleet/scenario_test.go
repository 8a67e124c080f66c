package fleet_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			Level  string   `json:"level"`
			Source string   `json:"source"`
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
