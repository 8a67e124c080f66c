package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Unfinished reads the journals without a plan and creates nothing: an
// apply that recorded no end is "stopped", with the run whose end is
// missing; one of another host is not listed; an apply that finished after
// an unfinished one hides it (the host was converged since).
func TestUnfinishedReadsTheJournals(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if us, err := Unfinished(state, "web-01"); err != nil || us != nil {
		t.Fatalf("no state directory: %v, %v", us, err)
	}
	if _, err := os.Lstat(state); !os.IsNotExist(err) {
		t.Fatalf("Unfinished made the state directory: %v", err)
	}
	journal := func(hex, host string, lines ...string) {
		t.Helper()
		dir := filepath.Join(state, journalDirName)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(state, 0o700)
		head := `{"toque_journal":1,"plan_digest":"sha256:` + strings.Repeat(hex, 64) + `","host":"` + host + `","plan_created":"2025-01-02T03:00:00Z","created":"2025-01-02T03:04:00Z"}`
		body := head + "\n" + strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "sha256-"+strings.Repeat(hex, 64)+".jsonl"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	journal("a", "web-01",
		`{"event":"apply_start","time":"2025-01-02T03:04:05Z","pid":1,"user":"root","plan_file":"/srv/a.plan"}`,
		`{"event":"resource_end","time":"2025-01-02T03:04:06Z","index":0,"address":"file[/etc/app.conf]","kind":"update","outcome":"changed"}`,
		`{"event":"notified_start","time":"2025-01-02T03:04:07Z","index":0,"address":"execute[reload]","kind":"run"}`)
	journal("b", "db-01",
		`{"event":"apply_start","time":"2025-01-02T03:05:00Z","pid":2,"user":"root"}`,
		`{"event":"apply_end","time":"2025-01-02T03:05:01Z","outcome":"failed","finished":false}`)

	us, err := Unfinished(state, "web-01")
	if err != nil || len(us) != 1 {
		t.Fatalf("unfinished %+v, %v; want web-01's one", us, err)
	}
	u := us[0]
	if u.PlanFile != "/srv/a.plan" || u.Outcome != "stopped" || len(u.NotDone) != 1 || u.NotDone[0].Address != "execute[reload]" || !u.NotDone[0].Notified || u.NotDone[0].Outcome != "started" {
		t.Fatalf("unfinished %+v", u)
	}

	// An apply of another plan that finished later: the host was
	// converged since, and the plan says nothing more.
	journal("c", "web-01",
		`{"event":"apply_end","time":"2025-01-03T00:00:00Z","outcome":"complete","finished":true,"report":""}`)
	if us, err := Unfinished(state, "web-01"); err != nil || len(us) != 0 {
		t.Fatalf("after a finished apply: %+v, %v", us, err)
	}
}

// A state directory toque would refuse is an error, and nothing is read.
func TestUnfinishedRefusesAnUntrustedStateDir(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(state, 0o777)
	if _, err := Unfinished(state, ""); err == nil || !strings.Contains(err.Error(), "writable by") {
		t.Fatalf("got %v, want the state directory refused", err)
	}
}
