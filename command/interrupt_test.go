package command

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A Ctrl-C while plan reads the host (here: while a guard runs) stops it
// at once: exit 5, no plan saved, and one diagnostic that says so — of kind
// "interrupted" in plan -json, as docs/diagnostics-json.md promises.
func TestPlanInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"text", nil},
		{"json", []string{"-json"}},
		{"saved", []string{"-out=plan.out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			started := filepath.Join(dir, "guard-started")
			recipe := fmt.Sprintf(`file %q {
  content = "x"
  only_if = "touch '%s' && sleep 60"
}
`, filepath.Join(dir, "never"), started)
			if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(recipe), 0o644); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			go func() {
				defer close(stop)
				deadline := time.Now().Add(30 * time.Second)
				for time.Now().Before(deadline) {
					if _, err := os.Stat(started); err == nil {
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
				t.Error("the guard never started")
			}()

			start := time.Now()
			code, stdout, stderr := runToque(t, dir, stop, append([]string{"plan"}, tc.args...)...)
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the interrupt took %s to stop plan", d)
			}
			const msg = "interrupted: stopped before finishing; nothing was changed and no plan was saved"
			if code != ExitInterrupted || stderr != "Error: "+msg+"\n" {
				t.Errorf("exit %d, stderr %q; want %d and the one error", code, stderr, ExitInterrupted)
			}
			if _, err := os.Stat(filepath.Join(dir, "plan.out")); !os.IsNotExist(err) {
				t.Errorf("a plan was saved: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "never")); !os.IsNotExist(err) {
				t.Errorf("plan changed the host: %v", err)
			}
			if tc.name != "json" {
				if strings.Contains(stdout, "{") {
					t.Errorf("stdout %q", stdout)
				}
				return
			}
			var doc struct {
				Errored     bool                `json:"errored"`
				Diagnostics []map[string]string `json:"diagnostics"`
			}
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("stdout is not a JSON document: %v\n%s", err, stdout)
			}
			want := map[string]string{"severity": "error", "summary": msg, "kind": "interrupted"}
			if !doc.Errored || len(doc.Diagnostics) != 1 || !maps.Equal(doc.Diagnostics[0], want) {
				t.Errorf("plan -json printed %s\nwant errored and the one diagnostic %v", stdout, want)
			}
		})
	}
}
