package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// End-to-end tests of the file-system types' safety: paths, symbolic
// links, backups. They run the built binary (TestMain in e2e_test.go).

func TestE2EPathsAreNormalisedOrRefusedAtValidate(t *testing.T) {
	testBadInput(t, []badInput{
		{"dot-dot in a label", "file \"/srv/../etc/motd\" {}\n", "bad.hcl:1:"},
		{"dot-dot in a property", "file \"motd\" {\n  path = \"/srv/a/..\"\n}\n", "bad.hcl:2:"},
		{"relative label", "directory \"srv/www\" {}\n", "bad.hcl:1:"},
		{"relative link", "link \"rel/link\" {\n  to = \"/x\"\n}\n", "bad.hcl:1:"},
		{"root", "directory \"//\" {}\n", "bad.hcl:1:"},
	})

	t.Run("spellings of one path plan and apply as that path", func(t *testing.T) {
		e := newEnv(t)
		e.recipe("paths.hcl", `
directory "ROOT//www/" {}
file "ROOT/./www//index.html" { content = "hi\n" }
link "ROOT/current/" { to = "ROOT/www" }
`)
		r := e.must(0, "validate")
		if strings.Contains(r.stderr, "Error") {
			t.Fatalf("validate:\n%s", r)
		}
		r = e.must(0, "plan", "-out=plan.out")
		for _, want := range []string{e.root + "/www", e.root + "/www/index.html", e.root + "/current"} {
			if !regexp.MustCompile(`(path|target_file) += "` + regexp.QuoteMeta(want) + `"`).MatchString(r.stdout) {
				t.Errorf("plan does not show the canonical path %q:\n%s", want, r.stdout)
			}
		}
		e.must(0, "apply", "plan.out")
		if got := e.read("www/index.html"); got != "hi\n" {
			t.Fatalf("index.html = %q", got)
		}
		if l, err := os.Readlink(filepath.Join(e.root, "current")); err != nil || l != e.root+"/www" {
			t.Fatalf("link = %q, %v", l, err)
		}
		r = e.must(0, "plan", "-detailed-exitcode")
		if !strings.Contains(r.stdout, "No changes.") {
			t.Fatalf("second plan:\n%s", r.stdout)
		}
	})
}
