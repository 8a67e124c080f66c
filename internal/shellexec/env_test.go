package shellexec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

// needRoot skips a test that switches users when toque's tests do not run
// as root.
func needRoot(t *testing.T) {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Nobody)
}

// childEnvOf runs `env` as s describes and returns what the child really
// started with, NAME → value.
func childEnvOf(t *testing.T, s Spec) map[string]string {
	t.Helper()
	s.Argv = []string{"/usr/bin/env", "-0"}
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("%v (%+v)", err, res)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(res.Stdout, "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	// Environ says what Run gives, without running anything.
	env, err := Environ(s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	if !mapsEqual(out, want) {
		t.Errorf("Environ says %v, the child got %v", want, out)
	}
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// toque's environment as a host's root shell might hold it: a policy
// token, toque's settings, other credentials, the locale.
var hostEnv = map[string]string{
	"TOQUE_POLICY_TOKEN":    "s3cret-policy-token",
	"TOQUE_LOG":             "trace",
	"TOQUE_STATE_DIR":       "/var/lib/toque",
	"AWS_SECRET_ACCESS_KEY": "aws-secret",
	"SSH_AUTH_SOCK":         "/tmp/ssh-agent.sock",
	"HTTPS_PROXY":           "http://user:pw@proxy:3128",
	"SUDO_USER":             "alice",
	"HOME":                  "/root",
	"USER":                  "root",
	"SHELL":                 "/bin/bash",
	"PATH":                  "/root/bin:/usr/bin:/bin",
	"LANG":                  "C.UTF-8",
	"LC_TIME":               "en_GB.UTF-8",
	"TZ":                    "Europe/Paris",
}

func setHostEnv(t *testing.T) {
	for k, v := range hostEnv {
		t.Setenv(k, v)
	}
}

// A child run as toque's own user inherits toque's environment, as Chef's
// do, except toque's own TOQUE_* variables; the recipe may still set one.
func TestChildEnvOwnUser(t *testing.T) {
	setHostEnv(t)
	got := childEnvOf(t, Spec{Env: map[string]string{"APP": "1", "TOQUE_FOR_CHILD": "explicit"}})
	for k := range got {
		if strings.HasPrefix(k, "TOQUE_") && k != "TOQUE_FOR_CHILD" {
			t.Errorf("the child inherited %s=%s", k, got[k])
		}
	}
	for _, k := range []string{"AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "HOME", "PATH", "LANG", "TZ"} {
		if got[k] != hostEnv[k] {
			t.Errorf("%s = %q, want toque's %q", k, got[k], hostEnv[k])
		}
	}
	if got["APP"] != "1" || got["TOQUE_FOR_CHILD"] != "explicit" {
		t.Errorf("the recipe's variables are missing: %v", got)
	}

	// BaseEnv stands for toque's environment and is filtered the same way.
	got = childEnvOf(t, Spec{BaseEnv: []string{"TOQUE_POLICY_TOKEN=x", "KEEP=1", "PATH=/bin"}})
	if _, ok := got["TOQUE_POLICY_TOKEN"]; ok || got["KEEP"] != "1" {
		t.Errorf("BaseEnv: %v", got)
	}
}

// A child run as another user gets a clean login-like environment: that
// user's HOME, USER, LOGNAME, SHELL, a standard PATH, the locale and TZ,
// and what the recipe sets — nothing else of toque's.
func TestChildEnvOtherUser(t *testing.T) {
	needRoot(t)
	setHostEnv(t)
	got := childEnvOf(t, Spec{User: "nobody", Env: map[string]string{"APP": "1"}, Path: []string{"/opt/app/bin"}})
	want := map[string]string{
		"HOME":    "/nonexistent",
		"USER":    "nobody",
		"LOGNAME": "nobody",
		"SHELL":   loginShell("/etc/passwd", "nobody", "65534"),
		"PATH":    "/opt/app/bin:" + defaultPATH,
		"LANG":    "C.UTF-8",
		"LC_TIME": "en_GB.UTF-8",
		"TZ":      "Europe/Paris",
		"APP":     "1",
	}
	if !mapsEqual(got, want) {
		t.Errorf("as nobody the child got\n%v\nwant\n%v", got, want)
	}

	// The recipe's environment wins over the login variables.
	got = childEnvOf(t, Spec{User: "nobody", Env: map[string]string{"HOME": "/srv/app", "PATH": "/usr/bin:/bin"}})
	if got["HOME"] != "/srv/app" || got["PATH"] != "/usr/bin:/bin" {
		t.Errorf("recipe environment lost: %v", got)
	}

	// A bare uid with no passwd entry: HOME=/ and SHELL=/bin/sh.
	got = childEnvOf(t, Spec{User: "54321", Group: "54321"})
	want = map[string]string{"HOME": "/", "SHELL": "/bin/sh", "PATH": defaultPATH, "LANG": "C.UTF-8", "LC_TIME": "en_GB.UTF-8", "TZ": "Europe/Paris"}
	if !mapsEqual(got, want) {
		t.Errorf("as a bare uid the child got\n%v\nwant\n%v", got, want)
	}
}

// Naming toque's own user, or only a group, keeps toque's environment
// (without TOQUE_*); naming the user sets its login variables.
func TestChildEnvOwnUserNamed(t *testing.T) {
	needRoot(t)
	setHostEnv(t)
	t.Setenv("HOME", "/home/alice") // as under sudo without -H
	got := childEnvOf(t, Spec{User: "root"})
	if got["HOME"] != "/root" || got["USER"] != "root" || got["AWS_SECRET_ACCESS_KEY"] != "aws-secret" || got["PATH"] != hostEnv["PATH"] {
		t.Errorf("as root by name: %v", got)
	}
	if _, ok := got["TOQUE_POLICY_TOKEN"]; ok {
		t.Error("TOQUE_POLICY_TOKEN passed to a child run as root by name")
	}
	got = childEnvOf(t, Spec{Group: "nogroup"})
	if got["HOME"] != "/home/alice" || got["SSH_AUTH_SOCK"] != hostEnv["SSH_AUTH_SOCK"] {
		t.Errorf("with a group only: %v", got)
	}
	if _, ok := got["TOQUE_LOG"]; ok {
		t.Error("TOQUE_LOG passed to a child run with another group")
	}
}

func TestLoginShell(t *testing.T) {
	file := filepath.Join(t.TempDir(), "passwd")
	passwd := strings.Join([]string{
		"root:x:0:0:root:/root:/bin/bash",
		"svc:x:998:998::/srv/svc:",
		"odd:x:997:997::/home/odd:/usr/bin/zsh",
		"broken line",
		"twin:x:996:996::/home/twin:/bin/dash",
		"twin:x:995:995::/home/twin:/bin/ksh",
	}, "\n")
	if err := os.WriteFile(file, []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, uid, want string }{
		{"root", "0", "/bin/bash"},
		{"svc", "998", "/bin/sh"}, // empty field: login's default
		{"odd", "997", "/usr/bin/zsh"},
		{"twin", "995", "/bin/ksh"},      // the entry with the user's uid
		{"ldap-user", "5000", "/bin/sh"}, // not in the file
	}
	for _, c := range cases {
		if got := loginShell(file, c.name, c.uid); got != c.want {
			t.Errorf("loginShell(%s) = %q, want %q", c.name, got, c.want)
		}
	}
	if got := loginShell(filepath.Join(t.TempDir(), "none"), "root", "0"); got != "/bin/sh" {
		t.Errorf("without a passwd file: %q", got)
	}
}

func TestInherited(t *testing.T) {
	base := []string{"TOQUE_POLICY_TOKEN=t", "TOQUE_=x", "toque_lower=kept", "LANG=C", "LC_ALL=C", "LCX=no", "TZ=UTC", "HOME=/root", "PATH=/bin"}
	own := inherited(base, false)
	if want := []string{"toque_lower=kept", "LANG=C", "LC_ALL=C", "LCX=no", "TZ=UTC", "HOME=/root", "PATH=/bin"}; !slices.Equal(own, want) {
		t.Errorf("own user: %q, want %q", own, want)
	}
	other := inherited(base, true)
	if want := []string{"LANG=C", "LC_ALL=C", "TZ=UTC"}; !slices.Equal(other, want) {
		t.Errorf("other user: %q, want %q", other, want)
	}
}
