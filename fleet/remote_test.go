package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The agent finds -detect's marker wherever the binary's chunks split it.
func TestMarkerScan(t *testing.T) {
	marker := detectMarker
	cases := []struct {
		name   string
		chunks []string
		want   bool
	}{
		{"whole", []string{"xx" + marker + "yy"}, true},
		{"split", []string{"xx" + marker[:5], marker[5:] + "yy"}, true},
		{"split in three", []string{marker[:3], marker[3:6], marker[6:]}, true},
		{"byte by byte", strings.Split(marker, ""), true},
		{"absent", []string{"toque-fleet-agent-", "detect/2"}, false},
		{"empty", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &markerScan{marker: []byte(marker)}
			for _, ch := range c.chunks {
				m.Write([]byte(ch))
			}
			if m.found != c.want {
				t.Fatalf("found = %v, want %v", m.found, c.want)
			}
		})
	}
}

// fleet agent -detect prints the line the detection script would have,
// with the digest of the agent that ran, and makes the cache.
func TestAgentDetectLine(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "fleet")
	line, err := AgentDetect(cache, strings.Repeat("a", 64))
	if err != nil {
		t.Fatal(err)
	}
	d, rest, ok := parseDetect([]byte(line + "after"))
	if !ok || string(rest) != "after" {
		t.Fatalf("cannot parse %q", line)
	}
	host, _ := os.Hostname()
	if d.Cache != cache || d.UID != os.Getuid() || !d.HaveAgent || !d.HaveRecipes || d.Ran != strings.Repeat("a", 64) || d.Hostname != host {
		t.Fatalf("detected %+v", d)
	}
	if sys, _ := d.platform(); sys != "Linux" {
		t.Fatalf("uname %q", d.Uname)
	}
	for _, dir := range append([]string{""}, cacheDirs...) {
		st, err := os.Stat(filepath.Join(cache, dir))
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", dir, st, err)
		}
	}
}
