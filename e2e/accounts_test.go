package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

const e2eHash = "$6$toquesalt$B/z3PiLDhw/N3ppNyPd9SHpsFAjF4qI6WvXWusj6bTN1w3XDVcvZeBwPDoEbUu8EbLf2og0ZQ3oC9BlluTbtB0"

// accountsRecipe is a group, a user whose primary group it is (created in
// the same apply), and a group the user is a member of; shell and the
// users' action vary.
func accountsRecipe(shell, comment string) string {
	return accountsRecipeActions(shell, comment, `["create", "lock"]`)
}

func accountsRecipeActions(shell, comment, actions string) string {
	return `group "toqgrp" {
  gid = 4300
}

user "toq" {
  uid         = 4242
  gid         = "toqgrp"
  comment     = "` + comment + `"
  home        = "/home/toq"
  shell       = "` + shell + `"
  password    = "` + e2eHash + `"
  manage_home = true
  action      = ` + actions + `
}

group "crew" {
  members = ["toq", "daemon"]
}
`
}

// Users and groups end to end, with the production command lines: a user
// whose primary group is created earlier in the same plan applies in one
// run; NSS sees the result; a second plan is a no-op; one property
// changes; someone else's change between plan and apply makes the plan
// stale; everything is removed again.
func TestE2EUsersAndGroups(t *testing.T) {
	e := newEnv(t)
	ns := newHostNS(t, e, nsOptions{})
	e.recipe("accounts.hcl", accountsRecipe("/bin/sh", "Toque Test"))

	r := ns.must(0, "plan", "-out=plan.out")
	for _, want := range []string{
		`+ group "toqgrp"`, `+ gid = 4300`,
		`# user[toq] (action create, 1 of 2) will be created`, `+ password = (sensitive)`,
		`+ manage_home = true`, // a setting: how the user is made
		`# user[toq] (action lock, 2 of 2) will be updated in place`,
		`+ members = ["daemon", "toq"]`,
		"Plan: 3 to create, 1 to update",
	} {
		// Values are aligned in columns: compare with single spaces.
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "toquesalt") {
		t.Errorf("the password hash is shown:\n%s", r)
	}
	ns.must(0, "apply", "plan.out")

	got := ns.sh("getent passwd toq; getent group toqgrp crew; id toq; stat -c '%U:%G %a' /home/toq; getent shadow toq | cut -d: -f2 | cut -c1-4")
	for _, want := range []string{
		"toq:x:4242:4300:Toque Test:/home/toq:/bin/sh\n",
		"toqgrp:x:4300:\n",
		"crew:x:", ":daemon,toq\n",
		"uid=4242(toq) gid=4300(toqgrp) groups=4300(toqgrp),",
		"toq:toqgrp 755\n",
		"!$6$\n", // locked, with its hash
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the namespace reads back %q, want %q in it", got, want)
		}
	}

	// Go's os/user (toque's owner lookups) sees the new user and group.
	e.recipe("owned.hcl", `file "ROOT/owned" {
  content = "x\n"
  owner   = "toq"
  group   = "crew"
}
`)
	ns.must(0, "plan", "-out=plan.out")
	ns.must(0, "apply", "plan.out")
	if fi, err := os.Stat(filepath.Join(e.root, "owned")); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 4242 {
		t.Errorf("owned: %v %v", fi, err)
	}

	r = ns.must(0, "plan", "-detailed-exitcode")
	if !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.stdout)
	}

	e.recipe("accounts.hcl", accountsRecipe("/bin/bash", "Toque Test"))
	r = ns.must(0, "plan", "-out=plan.out")
	if !strings.Contains(r.stdout, `~ shell = "/bin/sh" -> "/bin/bash"`) || !strings.Contains(r.stdout, "Plan: 0 to create, 1 to update") {
		t.Errorf("plan of a new shell:\n%s", r.stdout)
	}
	ns.must(0, "apply", "plan.out")
	if got := ns.sh("getent passwd toq"); !strings.HasSuffix(got, ":/bin/bash\n") {
		t.Errorf("shell: %q", got)
	}

	// Stale: someone changes the comment the plan is about to change.
	e.recipe("accounts.hcl", accountsRecipeActions("/bin/bash", "Toque Two", `"create"`))
	ns.must(0, "plan", "-out=plan.out")
	ns.sh("usermod -c 'Someone Else' toq")
	r = ns.must(3, "apply", "plan.out")
	if !strings.Contains(r.stderr, "user[toq]") || !strings.Contains(r.stderr, "comment") {
		t.Errorf("stale apply:\n%s", r)
	}
	if got := ns.sh("getent passwd toq"); !strings.Contains(got, ":Someone Else:") {
		t.Errorf("a stale apply changed the user: %q", got)
	}

	// A group: one member less is an update; someone adding a member
	// between plan and apply makes the plan stale.
	crewless := strings.Replace(accountsRecipeActions("/bin/bash", "Someone Else", `"create"`), `members = ["toq", "daemon"]`, `members = ["toq"]`, 1)
	e.recipe("accounts.hcl", crewless)
	r = ns.must(0, "plan", "-out=plan.out")
	if !strings.Contains(r.stdout, `~ members = ["daemon", "toq"] -> ["toq"]`) {
		t.Errorf("plan of fewer members:\n%s", r.stdout)
	}
	ns.sh("gpasswd -a nobody crew >/dev/null")
	if r := ns.must(3, "apply", "plan.out"); !strings.Contains(r.stderr, "group[crew]: members") {
		t.Errorf("stale apply:\n%s", r)
	}
	ns.must(0, "plan", "-out=plan.out")
	ns.must(0, "apply", "plan.out")
	if got := ns.sh("getent group crew"); !strings.HasSuffix(got, ":toq\n") {
		t.Errorf("crew: %q", got)
	}

	e.recipe("owned.hcl", "")
	e.recipe("accounts.hcl", `user "toq" {
  action      = "remove"
  manage_home = true
}
group "crew" { action = "remove" }
group "toqgrp" { action = "remove" }
`)
	r = ns.must(0, "plan", "-out=plan.out")
	if !strings.Contains(r.stdout, "3 to delete") {
		t.Errorf("removal plan:\n%s", r.stdout)
	}
	ns.must(0, "apply", "plan.out")
	if out, code := ns.shStatus("getent passwd toq; getent group toqgrp crew"); code == 0 || strings.TrimSpace(out) != "" {
		t.Errorf("still there: %q (exit %d)", out, code)
	}
	if _, err := os.Stat(filepath.Join(ns.dir, "home", "toq")); !os.IsNotExist(err) {
		t.Errorf("the home is left: %v", err)
	}
}

// Bad input is a plan error with the file, line and column of what is
// wrong, all of them at once, and nothing changes.
func TestE2EAccountsBadInput(t *testing.T) {
	e := newEnv(t)
	ns := newHostNS(t, e, nsOptions{})
	ns.sh("printf x > /home/afile")
	e.recipe("bad.hcl", `user "big" {
  uid = 4294967295
}
user "taken" {
  uid = 0
}
user "plain" {
  password = "hunter2"
}
user "noshell" {
  shell = "/bin/no-such-shell"
}
user "filehome" {
  home = "/home/afile"
}
group "crowd" {
  members = ["no-such-user"]
}
user "orphan" {
  gid = "no-such-group"
}
cron_d "late" {
  minute  = "60"
  command = "true"
}
cron_d "pct" {
  command = "date +%s"
}
cron_d "dotted.name" {
  command = "true"
}
sysctl "net.ipv4.ip_forward" {
  value = "1\n2"
}
sysctl "net.ipv4.no_such_key" {
  value = "1"
}
group "huge" {
  gid = -1
}
group "rooty" {
  gid = 0
}
`)
	r := ns.must(1, "plan")
	flat := strings.Join(strings.Fields(r.stderr), " ")
	for _, want := range []string{
		"bad.hcl:2:9", "uid 4294967295 is out of range",
		"bad.hcl:5:9", "uid 0 is taken by user root",
		"bad.hcl:8:14", "not the password itself", "mkpasswd",
		"bad.hcl:11:11", "shell /bin/no-such-shell does not exist on this host",
		"bad.hcl:14:10", "home /home/afile exists and is not a directory",
		"bad.hcl:16:1", "group[crowd] needs the user no-such-user",
		"bad.hcl:19:1", "user[orphan] needs the group no-such-group",
		"bad.hcl:23:13", "60 is out of range: minute runs from 0 to 59",
		"bad.hcl:27:13", "bare % at byte 7",
		"bad.hcl:29:8", "would silently ignore \"dotted.name\"",
		"bad.hcl:33:11", "a sysctl value must be one line",
		"bad.hcl:35:1", "this kernel has no parameter net.ipv4.no_such_key",
		"bad.hcl:39:9", "gid -1 is out of range",
		"bad.hcl:42:9", "gid 0 is taken by group root",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stderr)
		}
	}
	// Only the recipe's own line quotes it (the snippet), never a message.
	if strings.Count(r.stderr, "hunter2") != 1 {
		t.Errorf("the plain-text password is repeated:\n%s", r.stderr)
	}
	if out, code := ns.shStatus("getent passwd big taken plain noshell filehome orphan; getent group crowd; ls /etc/cron.d"); code == 0 && regexp.MustCompile(`big|plain|crowd|late|pct`).MatchString(out) {
		t.Errorf("something was made: %s", out)
	}
}

// As any user but root, the plan refuses to change accounts: the shadow
// tools run only as root. Nothing reaches apply.
func TestE2EAccountsNeedRoot(t *testing.T) {
	testenv.MustHave(t, testenv.Root, testenv.Nobody) // to run toque as nobody
	e := newEnv(t)
	os.Chmod(filepath.Dir(toqueBin), 0o755)
	home := filepath.Join(filepath.Dir(e.dir), "nobody")
	os.MkdirAll(home, 0o700)
	os.Chown(home, 65534, 65534)
	e.recipe("a.hcl", `user "toq-nobody-made" {
  shell = "/bin/sh"
}
group "toq-nobody-group" {}
`)
	before := hostFingerprint(t)
	cmd := exec.Command(toqueBin, "-chdir="+e.dir, "plan")
	cmd.Env = append(os.Environ(), "TOQUE_STATE_DIR="+filepath.Join(home, "state"), "TOQUE_HOST_LOCK="+filepath.Join(home, "host.lock"), "HOME="+home, "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1, got %v\n%s", err, out)
	}
	flat := strings.Join(strings.Fields(string(out)), " ")
	for _, want := range []string{
		"changing the user database (create user toq-nobody-made) needs root, and toque runs as uid 65534",
		"changing the group database (create group toq-nobody-group) needs root",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if after := hostFingerprint(t); after != before {
		t.Errorf("the host changed:\n%s\n%s", before, after)
	}
}

// A user created earlier in the plan can own a file and run a command of
// the same plan: the plan records the need instead of refusing an owner
// the host does not have yet, and one apply converges it all. Declared in
// the wrong order, the plan says which resource to move.
func TestE2EUserOfThePlanOwnsAndRuns(t *testing.T) {
	e := newEnv(t)
	ns := newHostNS(t, e, nsOptions{})
	e.recipe("a.hcl", `file "ROOT/owned" {
  content = "x\n"
  owner   = "toqown"
}
user "toqown" {
  uid = 4343
}
`)
	r := ns.must(1, "plan")
	if !strings.Contains(r.stderr, "user[toqown] creates it, but later") {
		t.Errorf("a user declared after its file:\n%s", r)
	}
	e.recipe("a.hcl", `user "toqown" {
  uid = 4343
}
file "ROOT/owned" {
  content = "x\n"
  owner   = "toqown"
}
execute "as-toqown" {
  command = "test \"$(id -un)\" = toqown"
  user    = "toqown"
}
`)
	ns.must(0, "plan", "-out=plan.out")
	ns.must(0, "apply", "plan.out")
	if fi, err := os.Stat(filepath.Join(e.root, "owned")); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 4343 {
		t.Errorf("owned: %v %v", fi, err)
	}
}
