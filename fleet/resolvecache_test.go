package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ssh -G's output is reused while the configuration files it read,
// included ones too, are unchanged, and never for a configuration whose
// outcome depends on more than the files.
func TestResolveCache(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	fake := filepath.Join(dir, "ssh")
	// A stand-in for ssh -G: it counts its runs and prints a setting.
	script := "#!/bin/sh\necho x >> " + count + "\nprintf 'hostname %s\\nuser root\\n' \"$(cat " + filepath.Join(dir, "target") + ")\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("target", "10.0.0.1")
	write("inc.conf", "Host web\n  Port 2222\n")
	runs := func() int {
		data, _ := os.ReadFile(count)
		return strings.Count(string(data), "x")
	}
	resolve := func(config string) *Route {
		t.Helper()
		write("config", config)
		s := &SSH{Binary: fake, ConfigFile: filepath.Join(dir, "config"), ControlDir: dir}
		r, err := s.Resolve(context.Background(), "web", nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cases := []struct {
		name   string
		config string
		change func()
		cached bool
	}{
		{"plain", "Host web\n  HostName 10.0.0.1\n", nil, true},
		{"an included file", "Include " + dir + "/inc*.conf\nHost *\n  User root\n", nil, true},
		{"an included file changed", "Include " + dir + "/inc*.conf\nHost *\n  User root\n", func() { write("inc.conf", "Host web\n  Port 2223\n") }, false},
		{"a new included file", "Include " + dir + "/inc*.conf\nHost *\n  User root\n", func() { write("inc2.conf", "Host web\n  User deploy\n") }, false},
		{"Match host", "Match host web user root\n  Port 22\nMatch all\n  User root\n", nil, true},
		{"Match exec", "Match exec \"test -f /x\"\n  Port 22\n", nil, false},
		{"Match localnetwork", "Match localnetwork 10.0.0.0/8\n  Port 22\n", nil, false},
		{"Match canonical", "Match canonical host web\n  Port 22\n", nil, false},
		{"CanonicalizeHostname", "CanonicalizeHostname yes\n", nil, false},
		{"CanonicalizeHostname=no", "CanonicalizeHostname=no\n", nil, true},
		{"Include with a variable", "Include ${HOME}/x.conf\n", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resolve(c.config)
			n := runs()
			if c.change != nil {
				c.change()
			}
			r := resolve(c.config)
			if r.Get("hostname") != "10.0.0.1" {
				t.Fatalf("hostname %q", r.Get("hostname"))
			}
			if ran := runs() > n; ran == c.cached {
				t.Fatalf("ssh -G ran again: %v, want %v", ran, !c.cached)
			}
		})
	}
	// The environment ssh gets is an input; toque's own variables are not
	// passed to ssh, so they are not.
	resolve("Host web\n")
	n := runs()
	t.Setenv("TOQUE_LOG", "debug")
	resolve("Host web\n")
	if runs() != n {
		t.Fatal("ssh -G ran again when only TOQUE_LOG changed")
	}
	t.Setenv("SSH_AUTH_SOCK", "/elsewhere")
	resolve("Host web\n")
	if runs() == n {
		t.Fatal("ssh -G did not run again when the environment changed")
	}
	// The route's key is the same, cached or not.
	resolve("Host web\n")
	a := resolve("Host web\n")
	matches, _ := filepath.Glob(filepath.Join(dir, "resolved-*"))
	for _, m := range matches {
		os.Remove(m)
	}
	if b := resolve("Host web\n"); a.Key != b.Key {
		t.Fatalf("cached key %s, ssh -G's %s", a.Key, b.Key)
	}
}
