package accounts

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// Public keys made with ssh-keygen (OpenSSH 9.2).
const (
	keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGQFUlnq1WoLK8//9BeNG0ad7TpIYBPSbg9xqWBfTk+3 alice@laptop"
	keyB = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBPNHn9YWJuYZD0Hk7gA359e5pAn/8jtCdTE+4fpZ6/BI5uKhWg5v+zPLl6DtIilStMYzc3WUJHy82EMtwQh0l/4= deploy"
)

// keysRoot is a throwaway root whose passwd has the user toq (uid 4242,
// group toqgrp 4300) with a home it owns, /home/toq under the root.
func keysRoot(t *testing.T) (root, home string) {
	t.Helper()
	testenv.MustHave(t, testenv.Root) // files are given to another user
	root = t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	resourcetest.WriteFile(t, filepath.Join(root, "etc/passwd"), "root:x:0:0:root:/root:/bin/bash\ntoq:x:4242:4300:Toque:/home/toq:/bin/sh\nghost:x:4243:4300::/home/ghost:/bin/sh\n", 0o644)
	resourcetest.WriteFile(t, filepath.Join(root, "etc/group"), "root:x:0:\ntoqgrp:x:4300:\n", 0o644)
	home = filepath.Join(root, "home/toq")
	if err := os.MkdirAll(home, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, 4242, 4300); err != nil {
		t.Fatal(err)
	}
	return root, home
}

func ownerOf(t *testing.T, p string) (uint32, uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// A key's life: ~/.ssh and the file made the user's (0700, 0600), a
// second key added beside it, the first rewritten in its place when its
// options change, exclusive taking the other out, delete taking the key
// out; each planned again to a no-op.
func TestAuthorizedKeysLifecycle(t *testing.T) {
	root, home := keysRoot(t)
	typ := newAuthorizedKeysType(root)
	env := resourcetest.TestEnv(t)
	path := filepath.Join(home, ".ssh", "authorized_keys")
	a := map[string]any{"user": "toq", "key": keyA}
	step := resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", a), resources.Create)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "ssh_dir,entry,mode,owner,group" {
		t.Errorf("create changes %s", got)
	}
	if got := resourcetest.ReadFile(t, path); got != keyA+"\n" {
		t.Errorf("file %q", got)
	}
	for p, mode := range map[string]uint32{path: 0o600, filepath.Dir(path): 0o700} {
		if m := resourcetest.PermOf(t, p); m != mode {
			t.Errorf("%s: mode %04o, want %04o", p, m, mode)
		}
		if uid, gid := ownerOf(t, p); uid != 4242 || gid != 4300 {
			t.Errorf("%s: owner %d:%d", p, uid, gid)
		}
	}
	b := map[string]any{"user": "toq", "key": keyB, "options": []string{`from="10.0.0.0/8,192.168.0.0/16"`, "no-pty", `command="/usr/bin/rrsync -ro /srv"`}, "comment": "deploy key"}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", b), resources.Update)
	lineB := `from="10.0.0.0/8,192.168.0.0/16",no-pty,command="/usr/bin/rrsync -ro /srv" ` + strings.TrimSuffix(keyB, " deploy") + " deploy key"
	if got := resourcetest.ReadFile(t, path); got != keyA+"\n"+lineB+"\n" {
		t.Errorf("file %q", got)
	}
	a["options"] = []string{"restrict"}
	step = resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", a), resources.Update)
	if c := step.Change("entry"); c == nil || c.Before.AsString() != keyA+"\n" || c.After.AsString() != "restrict "+keyA+"\n" {
		t.Errorf("options change: %+v", step.Changes)
	}
	if got := resourcetest.ReadFile(t, path); got != "restrict "+keyA+"\n"+lineB+"\n" {
		t.Errorf("the key is not rewritten in its place: %q", got)
	}
	a["exclusive"] = true
	step = resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", a), resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "other_keys" {
		t.Errorf("exclusive changes %s", got)
	}
	if st := resourcetest.Load(t, typ, resourcetest.NewRes(t, typ, "create", a)); st.Private["other_keys"] == "" {
		t.Errorf("the lines of a 0600 file are shown: %v", st.Private)
	}
	if got := resourcetest.ReadFile(t, path); got != "restrict "+keyA+"\n" {
		t.Errorf("file %q", got)
	}
	resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "delete", map[string]any{"user": "toq", "key": keyA}), resources.Update)
	if got := resourcetest.ReadFile(t, path); got != "" {
		t.Errorf("file %q", got)
	}
	// A loosened mode and a foreign owner are put back.
	os.Chmod(path, 0o666)
	os.Chown(filepath.Dir(path), 0, 0)
	step = resourcetest.Apply(t, typ, env, resourcetest.NewRes(t, typ, "create", map[string]any{"user": "toq", "key": keyA}), resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "ssh_dir,entry,mode" {
		t.Errorf("repair changes %s", got)
	}
}

// Nothing is followed or changed through a link the user could plant in
// the home it controls: ~/.ssh or authorized_keys as a symbolic link,
// authorized_keys as a hard link to a file the user may not change. The
// target stays as it was.
func TestAuthorizedKeysRefusesLinks(t *testing.T) {
	root, home := keysRoot(t)
	typ := newAuthorizedKeysType(root)
	sentinel := filepath.Join(root, "shadow")
	resourcetest.WriteFile(t, sentinel, "root:secret\n", 0o600)
	elsewhere := filepath.Join(root, "rootssh")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	r := resourcetest.NewRes(t, typ, "create", map[string]any{"user": "toq", "key": keyA})
	ssh := filepath.Join(home, ".ssh")

	os.Symlink(elsewhere, ssh)
	resourcetest.PlanErr(t, typ, r, "never follows a link in a home directory its user controls")
	os.Remove(ssh)

	os.Mkdir(ssh, 0o700)
	os.Chown(ssh, 4242, 4300)
	os.Symlink(sentinel, filepath.Join(ssh, "authorized_keys"))
	resourcetest.PlanErr(t, typ, r, "is a symbolic link to "+sentinel)
	os.Remove(filepath.Join(ssh, "authorized_keys"))

	if err := os.Link(sentinel, filepath.Join(ssh, "authorized_keys")); err != nil {
		t.Fatal(err)
	}
	resourcetest.PlanErr(t, typ, r, "has 2 names (hard links)")
	if got := resourcetest.ReadFile(t, sentinel); got != "root:secret\n" || resourcetest.PermOf(t, sentinel) != 0o600 {
		t.Errorf("the sentinel changed: %q %04o", got, resourcetest.PermOf(t, sentinel))
	}
	if uid, _ := ownerOf(t, sentinel); uid != 0 {
		t.Errorf("the sentinel's owner changed to %d", uid)
	}
}

// A user the database lacks is a need (an earlier user resource may
// make it); a home that is missing is a need too; delete of a key of a
// user that does not exist is a no-op.
func TestAuthorizedKeysNeeds(t *testing.T) {
	root, _ := keysRoot(t)
	typ := newAuthorizedKeysType(root)
	_, step := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"user": "newbie", "key": keyA}))
	if len(step.Needs) != 1 || step.Needs[0] != (resources.Need{Namespace: resources.NamespaceUser, Value: "newbie", What: "user"}) {
		t.Errorf("needs %v", step.Needs)
	}
	_, step = resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "create", map[string]any{"user": "ghost", "key": keyA}))
	if len(step.Needs) != 1 || step.Needs[0].Value != filepath.Join(root, "home/ghost") {
		t.Errorf("needs %v", step.Needs)
	}
	if _, step := resourcetest.Plan(t, typ, resourcetest.NewRes(t, typ, "delete", map[string]any{"user": "newbie", "key": keyA})); step.Kind != resources.NoOp {
		t.Errorf("delete for no user: %s", step.Kind)
	}
}

// Bad input is refused when the recipe is read.
func TestAuthorizedKeysValidation(t *testing.T) {
	typ := newAuthorizedKeysType("")
	list := func(xs ...string) cty.Value {
		vs := make([]cty.Value, len(xs))
		for i, x := range xs {
			vs[i] = cty.StringVal(x)
		}
		return cty.ListVal(vs)
	}
	edBlob := strings.Fields(keyA)[1]
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"key", cty.StringVal(keyA), ""},
		{"key", cty.StringVal(keyB), ""},
		{"key", cty.StringVal(edBlob), "not TYPE BASE64"},
		{"key", cty.StringVal("ssh-rsa " + edBlob), "it says ssh-rsa, but the key itself is ssh-ed25519"},
		{"key", cty.StringVal("ssh-ed25519 " + edBlob[:30]), "not a valid OpenSSH public key"},
		{"key", cty.StringVal(`no-pty ` + keyA), "give sshd's options with the options property"},
		{"key", cty.StringVal(keyA + "\n" + keyB), "not one line"},
		{"key", cty.StringVal("-----BEGIN OPENSSH PRIVATE KEY-----"), "not a valid OpenSSH public key"},
		{"user", cty.StringVal("../root"), "is not valid"},
		{"options", list("no-pty", "restrict", `from="10.0.0.1"`, `command="echo \"hi\""`, `environment="A=b c"`), ""},
		{"options", list("no-pty,no-agent-forwarding"), "is not an option sshd reads"},
		{"options", list(`command="/bin/sh" ssh-rsa`), "is not an option sshd reads"},
		{"options", list(`command="a"b"`), "is not an option sshd reads"},
		{"options", list("no-pty\n" + keyB), "must be one line"},
		{"options", list("no-such-option"), `sshd has no option "no-such-option"`},
		{"options", list("command"), "command takes a value"},
		{"options", list(`no-pty="x"`), "no-pty takes no value"},
		{"comment", cty.StringVal("laptop\nssh-rsa AAAA"), "must be one line"},
		{"entry", cty.StringVal("x"), "a recipe does not set it"},
	} {
		err := typ.schema.Property(c.prop).Validate(c.v)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
}

// Lines as sshd reads them: the key after the options, whose quoted
// values may hold spaces.
func TestAuthorizedKeysLines(t *testing.T) {
	blob := strings.Fields(keyA)[1]
	for line, want := range map[string]string{
		keyA:        blob,
		"  " + keyA: blob,
		`command="echo ssh-rsa x",no-pty ` + keyA: blob,
		"# " + keyA: "",
		"":          "",
		"garbage":   "",
	} {
		if got := keyOf(line); got != want {
			t.Errorf("keyOf(%q) = %q, want %q", line, got, want)
		}
	}
	text := "# keys\n" + keyB + "\n\nrestrict " + keyA + "\n" + keyA + "\n"
	if got := editKeys(text, blob, "no-pty "+keyA, true, false); got != "# keys\n"+keyB+"\n\nno-pty "+keyA+"\n" {
		t.Errorf("replace: %q", got)
	}
	if got := editKeys(text, blob, "", false, false); got != "# keys\n"+keyB+"\n\n" {
		t.Errorf("delete: %q", got)
	}
	if got := editKeys(text, blob, keyA, true, true); got != "# keys\n\n"+keyA+"\n" {
		t.Errorf("exclusive: %q", got)
	}
}
