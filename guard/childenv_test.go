package guard

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/internal/testenv"
)

// A guard's process gets the environment every child gets (issue 11.4):
// toque's own without TOQUE_* as toque's user, a clean login environment
// as another user. Each guard prints the variables that matter; the
// outcome's output is what a plan records.
func TestGuardChildEnvironment(t *testing.T) {
	t.Setenv("TOQUE_POLICY_TOKEN", "s3cret")
	t.Setenv("DEPLOY_KEY", "from-toque")
	t.Setenv("LANG", "C.UTF-8")
	show := `for v in TOQUE_POLICY_TOKEN DEPLOY_KEY HOME USER LOGNAME SHELL PATH LANG APP; do eval "echo $v=\${$v-unset}"; done`
	cases := []struct {
		name, parentType, src string
		root                  bool
		want                  []string
	}{
		{"default interpreter, toque's user", "file", `only_if = { command = "` + hclEscape(show) + `", environment = { APP = "1" } }`, false,
			[]string{"TOQUE_POLICY_TOKEN=unset", "DEPLOY_KEY=from-toque", "PATH=" + os.Getenv("PATH"), "APP=1"}},
		{"bash interpreter, toque's user", "bash", `only_if = "` + hclEscape(show) + `"`, false,
			[]string{"TOQUE_POLICY_TOKEN=unset", "DEPLOY_KEY=from-toque", "APP=unset"}},
		{"default interpreter, as nobody", "file", `only_if = { command = "` + hclEscape(show) + `", user = "nobody", cwd = "/", environment = { APP = "1" } }`, true,
			[]string{"TOQUE_POLICY_TOKEN=unset", "DEPLOY_KEY=unset", "HOME=/nonexistent", "USER=nobody", "LOGNAME=nobody",
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "APP=1"}},
		{"bash interpreter, as nobody", "bash", `not_if = { command = "` + hclEscape(show) + `", user = "nobody", cwd = "/" }`, true,
			[]string{"TOQUE_POLICY_TOKEN=unset", "DEPLOY_KEY=unset", "HOME=/nonexistent", "USER=nobody"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				testenv.MustHave(t, testenv.Root, testenv.Nobody) // a guard as another user
			}
			specs := mustDecode(t, c.parentType, nil, c.src)
			o := Run(context.Background(), testRegistry(), specs[0], hclog.NewNullLogger())
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			lines := strings.Split(o.Output, "\n")
			for _, w := range c.want {
				if !hasLine(lines, w) {
					t.Errorf("the guard's environment lacks %s:\n%s", w, o.Output)
				}
			}
		})
	}
}

// hclEscape escapes s for an HCL string.
func hclEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "${", "$${").Replace(s)
}

func hasLine(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
