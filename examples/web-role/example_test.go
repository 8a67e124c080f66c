// The web role example, planned from nothing with zero, one and three
// sites, applied, and planned again: the second plan has no changes.
package webrole_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/command"
	"github.com/toquehq/toque/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.IsolateToqueState(m)) }

// toque runs toque in-process in this directory, with its state and
// host-wide lock under scratch.
func toque(t *testing.T, scratch string, args ...string) (int, string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"TOQUE_STATE_DIR":   filepath.Join(scratch, "state"),
		command.HostLockEnv: filepath.Join(scratch, "host.lock"),
		"TOQUE_CACHE_DIR":   filepath.Join(scratch, "cache"),
		"NO_COLOR":          "1",
		"TOQUE_LOG":         "",
		"WEB_ROLE_ROOT":     "", // the test gives web.root with -attr
	}
	env := command.Env{Dir: dir, LookupEnv: func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, v != ""
		}
		return os.LookupEnv(k)
	}}
	var out, errs bytes.Buffer
	code := command.Run(context.Background(), nil, args, command.Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errs, Env: env})
	return code, out.String() + errs.String()
}

func TestWebRole(t *testing.T) {
	cases := []struct {
		name  string
		attrs []string
		// summary is the first plan's; shows are lines it holds.
		summary string
		shows   []string
		files   []string // written by the apply, under the root
		// certs are the sites whose certificate is deployed (ROOT/tls/NAME.pem)
		// before the first plan.
		certs []string
	}{
		{
			name:    "no site",
			summary: "Plan: 7 to create, 0 to update, 0 to delete, 1 to run, 0 skipped, 0 unchanged.",
			shows: []string{
				"# resource_group[hardening]: the guards of its 2 resources\n  #   only_if node.web.hardening is true\n",
				`# directory[layout]["www"] will be created`,
				"# execute[reload] will run: notified by template[server.conf], file[security.conf] and file[robots] (delayed)",
			},
			files: []string{"server.conf", "sites/00-security.conf", "run/reloaded"},
		},
		{
			name:    "one site, from an attribute file",
			attrs:   []string{"-attr-file=envs/one.attrs"},
			summary: "Plan: 10 to create, 0 to update, 0 to delete, 1 to run, 0 skipped, 0 unchanged.",
			shows: []string{
				`# template[vhost]["example.com"] will be created`,
				"+    server_name example.com www.example.com;",
			},
			files: []string{"sites/example.com.conf", "www/example.com/index.html"},
		},
		{
			name:    "one site, from -attr",
			attrs:   []string{`-attr=web.vhosts={"example.net" = { port = 8081 }}`},
			summary: "Plan: 10 to create, 0 to update, 0 to delete, 1 to run, 0 skipped, 0 unchanged.",
			shows:   []string{"+    listen 8081;"},
			files:   []string{"sites/example.net.conf"},
		},
		{
			name:    "three sites, no hardening",
			attrs:   []string{"-attr-file=envs/three.attrs"},
			summary: "Plan: 14 to create, 0 to update, 0 to delete, 1 to run, 2 skipped, 0 unchanged.",
			shows: []string{
				"# resource_group[hardening] skipped: only_if node.web.hardening is false\n  #   skips its 2 resources: file[security.conf] and file[robots]\n",
				`# file[index]["shop.example.com"] will be created`,
				`# execute[reload] will run: notified by template[server.conf], template[vhost]["example.com"], template[vhost]["example.org"] and template[vhost]["shop.example.com"] (delayed)`,
			},
			files: []string{"sites/shop.example.com.conf", "sites/example.org.conf", "www/example.com/index.html"},
		},
		{
			name:  "three sites, one with its certificate deployed",
			attrs: []string{"-attr-file=envs/three.attrs"},
			certs: []string{"shop.example.com"},
			// (The root exists: the certificate is in it.)
			summary: "Plan: 13 to create, 0 to update, 0 to delete, 1 to run, 2 skipped, 1 unchanged.",
			shows: []string{
				"  # data.files.certificates read in ",
				"#   answer: a map of 1 element, sha256:",
				"+    listen 443 ssl;",
			},
			files: []string{"sites/shop.example.com.conf"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scratch := t.TempDir()
			root := filepath.Join(scratch, "root")
			attrs := append([]string{"-attr=web.root=" + root}, c.attrs...)
			planFile := filepath.Join(scratch, "plan.out")
			for _, site := range c.certs {
				if err := os.MkdirAll(filepath.Join(root, "tls"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "tls", site+".pem"), []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			code, out := toque(t, scratch, append(append([]string{"plan"}, attrs...), "-out="+planFile)...)
			if code != 0 || !strings.Contains(out, "\n"+c.summary+"\n") {
				t.Fatalf("plan from nothing: exit %d, want the summary %q:\n%s", code, c.summary, out)
			}
			for _, s := range c.shows {
				if !strings.Contains(out, s) {
					t.Errorf("the plan lacks %q:\n%s", s, out)
				}
			}
			if code, out := toque(t, scratch, "apply", planFile); code != 0 {
				t.Fatalf("apply: exit %d:\n%s", code, out)
			}
			for _, f := range c.files {
				if _, err := os.Stat(filepath.Join(root, f)); err != nil {
					t.Errorf("apply did not write %s: %v", f, err)
				}
			}
			for _, site := range c.certs {
				conf, err := os.ReadFile(filepath.Join(root, "sites", site+".conf"))
				if err != nil || !strings.Contains(string(conf), "ssl_certificate "+filepath.Join(root, "tls", site+".pem")+";") {
					t.Errorf("%s does not serve TLS (%v):\n%s", site, err, conf)
				}
			}
			code, out = toque(t, scratch, append(append([]string{"plan"}, attrs...), "-detailed-exitcode")...)
			if code != 0 || !strings.HasPrefix(out, "No changes.") {
				t.Fatalf("second plan: exit %d, want No changes.:\n%s", code, out)
			}
		})
	}
}
