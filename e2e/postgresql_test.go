package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// The yardstick for a database: a port of a published PostgreSQL role
// (examples/postgresql, geerlingguy.postgresql's tasks for Debian) makes a
// fresh Debian 12 a database server in one plan and one apply — the
// packages, a cluster whose every configuration file the plan shows, the
// service, a role and a database — and the next plan says "No changes.".
// The host is a booted container, as in TestE2EHardeningExample.
func TestE2EPostgreSQLExample(t *testing.T) {
	testenv.MustHave(t, testenv.Root, testenv.Nspawn, testenv.Nsenter, testenv.DpkgDev, testenv.DebianRootfs)
	start := time.Now()
	rootfs := debianRootfs(t)
	b := bootExample(t, rootfs, "postgresql")
	booted := time.Now()
	toque := b.exampleToque

	plan := toque(0, "plan", "-out=/root/pg.plan")
	for _, want := range []string{
		"# package[postgresql] will be created",
		"#   user postgres: created by package[postgresql] (postgresql-common ",
		"+listen_addresses = 'localhost'",
		"+host all all 127.0.0.1/32 scram-sha-256",
		"# execute[initdb] will run: creates /var/lib/postgresql/15/main/PG_VERSION does not exist",
		`# execute[database]["example_user"] will run, unless a guard decided at apply skips it`,
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("the plan:\n%s", plan)
	}
	planned := time.Now()
	apply := toque(0, "apply", "/root/pg.plan")
	if !strings.Contains(apply, "Apply complete!") || !strings.Contains(apply, " 0 failed") {
		t.Fatalf("apply:\n%s", apply)
	}
	// Every resource is as the plan said right before it converges: the
	// unit's states its package's scripts set were known only at apply,
	// and the plan said so.
	if strings.Contains(apply, "differs from plan") {
		t.Errorf("a resource differed from the plan at apply:\n%s", apply)
	}
	applied := time.Now()
	if again := toque(0, "plan", "-detailed-exitcode"); !strings.HasPrefix(again, "No changes.") {
		t.Fatalf("the second plan is not empty:\n%s", again)
	}
	for _, c := range []struct{ what, script, want string }{
		{"the server runs", "systemctl is-active postgresql@15-main", "active"},
		{"and starts at boot", "systemctl is-enabled postgresql@15-main", "enabled"},
		{"no cluster of the package's own making", "pg_lsclusters -h | wc -l", "1"},
		{"the role's options", "su postgres -c \"psql -tAc 'SHOW shared_buffers'\"", "128MB"},
		{"the database, its owner", "su postgres -c \"psql -tAc \\\"SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'example_db'\\\"\"", "example_user"},
		{"pg_hba.conf's mode", "stat -c '%a %U' /etc/postgresql/15/main/pg_hba.conf", "640 postgres"},
	} {
		if got := b.sh(c.script); got != c.want {
			t.Errorf("%s: `%s` gives %q, want %q", c.what, c.script, got, c.want)
		}
	}
	t.Logf("boot %v, plan %v, apply %v, second plan and checks %v",
		booted.Sub(start).Round(time.Millisecond), planned.Sub(booted).Round(time.Millisecond),
		applied.Sub(planned).Round(time.Millisecond), time.Since(applied).Round(time.Millisecond))
}
