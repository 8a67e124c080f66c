package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// envOf parses `env -0` output.
func envOf(out string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// The environment execute and script resources give their process (issue
// 11.4): toque's own, without TOQUE_*, for toque's user; a clean login
// environment for another user. Each case dumps the child's environment.
func TestRunnerChildEnvironment(t *testing.T) {
	t.Setenv("TOQUE_POLICY_TOKEN", "s3cret")
	t.Setenv("TOQUE_LOG", "trace")
	t.Setenv("DEPLOY_KEY", "from-toque")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TZ", "UTC")
	cases := []struct {
		name string
		typ  resources.Type
		vals map[string]any
		root bool
		// want: variables and their values; "" means must be absent.
		want map[string]string
	}{
		{"execute as toque's user", ExecuteType(), map[string]any{"command": []string{"env", "-0"}, "environment": map[string]string{"APP": "1"}}, false,
			map[string]string{"TOQUE_POLICY_TOKEN": "", "TOQUE_LOG": "", "DEPLOY_KEY": "from-toque", "APP": "1", "LANG": "C.UTF-8", "PATH": os.Getenv("PATH")}},
		{"bash as toque's user", BashType(), map[string]any{"code": "env -0"}, false,
			map[string]string{"TOQUE_POLICY_TOKEN": "", "DEPLOY_KEY": "from-toque"}},
		{"execute as nobody", ExecuteType(), map[string]any{"command": "env -0", "user": "nobody", "cwd": "/", "environment": map[string]string{"APP": "1"}}, true,
			map[string]string{"TOQUE_POLICY_TOKEN": "", "TOQUE_LOG": "", "DEPLOY_KEY": "", "APP": "1", "HOME": "/nonexistent", "USER": "nobody", "LOGNAME": "nobody",
				"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "TZ": "UTC"}},
		{"python as nobody", PythonType(), map[string]any{"code": "import os, sys; sys.stdout.write(''.join(k + '=' + v + '\\0' for k, v in os.environ.items()))", "user": "nobody", "cwd": "/"}, true,
			map[string]string{"TOQUE_POLICY_TOKEN": "", "DEPLOY_KEY": "", "HOME": "/nonexistent", "USER": "nobody"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				resourcetest.RequireRoot(t)
			}
			got := envOf(stdout(t, c.typ, resourcetest.RunRes(t, c.typ, "x", c.vals)))
			for k, v := range c.want {
				g, ok := got[k]
				switch {
				case v == "" && ok:
					t.Errorf("the child got %s=%s", k, g)
				case v != "" && g != v:
					t.Errorf("%s = %q, want %q", k, g, v)
				}
			}
		})
	}
}

// powershell_script looks for pwsh in the PATH its process will have: a
// child run as another user does not get toque's PATH.
func TestPowerShellInterpreterChoiceAsAnotherUser(t *testing.T) {
	resourcetest.RequireRoot(t)
	only := t.TempDir()
	resourcetest.WriteFile(t, filepath.Join(only, "powershell"), "#!/bin/sh\nexit 0\n", 0o755)
	t.Setenv("PATH", only+":"+os.Getenv("PATH"))
	typ := PowerShellScriptType()
	for user, want := range map[string]string{"": "powershell", "nobody": "pwsh"} {
		vals := map[string]any{"code": "1"}
		if user != "" {
			vals["user"] = user
		}
		spec, err := typ.(resources.Runner).CommandSpec(resourcetest.RunRes(t, typ, "p", vals))
		if err != nil {
			t.Fatal(err)
		}
		if spec.Interpreter[0] != want {
			t.Errorf("user %q: interpreter %q, want %q", user, spec.Interpreter[0], want)
		}
	}
}
