package system

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/crypto/ssh"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// sshServer serves SSH's key exchange on loopback with a new ed25519 host
// key, for ssh-keyscan to read: the only server the tests scan. It
// returns the port and the host key.
func sshServer(t *testing.T) (int, ssh.PublicKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{NoClientAuth: true}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if sc, _, _, err := ssh.NewServerConn(c, cfg); err == nil {
					sc.Close()
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, signer.PublicKey()
}

const testHostKey = "AAAAC3NzaC1lZDI1NTE5AAAAIGQFUlnq1WoLK8//9BeNG0ad7TpIYBPSbg9xqWBfTk+3"

func knownRes(t *testing.T, vals map[string]any) *resources.Resource {
	t.Helper()
	return resourcetest.NewRes(t, newKnownHostsType(""), "create", vals)
}

// With no key, the plan asks the host with ssh-keyscan and shows the
// key and its fingerprint; apply writes the very line (and the file,
// root's 0644); ssh-keygen -F finds it; the next plan is a no-op.
func TestKnownHostsKeyscan(t *testing.T) {
	testenv.MustHave(t, testenv.SSHKeygen)
	port, pub := sshServer(t)
	file := filepath.Join(t.TempDir(), "ssh_known_hosts")
	typ := newKnownHostsType("")
	me, _, grp, _ := resourcetest.Whoami(t)
	r := knownRes(t, map[string]any{"host": "127.0.0.1", "port": port, "key_type": "ed25519", "file_location": file, "timeout": 5, "owner": me, "group": grp})
	_, step := resourcetest.Plan(t, typ, r)
	want := "[127.0.0.1]:" + strconv.Itoa(port) + " ssh-ed25519 " + strings.Fields(string(ssh.MarshalAuthorizedKey(pub)))[1] + "\n"
	c := step.Change("entry")
	if step.Kind != resources.Create || c == nil || c.After.AsString() != want || !strings.Contains(c.Note, ssh.FingerprintSHA256(pub)) || !strings.Contains(c.Note, "ssh-keyscan") {
		t.Fatalf("plan %s %+v, want entry %q", step.Kind, step.Changes, want)
	}
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "entry,mode,owner,group" {
		t.Errorf("create changes %s", got)
	}
	resourcetest.Apply(t, typ, resourcetest.TestEnv(t), r, resources.Create)
	if got := resourcetest.ReadFile(t, file); got != want {
		t.Errorf("file %q, want %q", got, want)
	}
	if m := resourcetest.PermOf(t, file); m != 0o644 {
		t.Errorf("mode %04o", m)
	}
	out, err := exec.Command("ssh-keygen", "-F", "[127.0.0.1]:"+strconv.Itoa(port), "-f", file).Output()
	if err != nil || !strings.Contains(string(out), strings.TrimSpace(want)) {
		t.Errorf("ssh-keygen -F: %v %s", err, out)
	}
	if os.Geteuid() != 0 {
		// As another user than root, a file for root is refused at plan.
		r := knownRes(t, map[string]any{"host": "127.0.0.1", "port": port, "key_type": "ed25519", "file_location": file + "2", "timeout": 5})
		resourcetest.PlanErr(t, typ, r, "needs root")
	}
	// A server with no key of the type asked is a plan error.
	r = knownRes(t, map[string]any{"host": "127.0.0.1", "port": port, "file_location": file, "timeout": 5})
	if _, err := typ.Load(t.Context(), r.LoadView()); err == nil || !strings.Contains(err.Error(), "ssh-keyscan found no ssh-rsa key at 127.0.0.1 port") {
		t.Errorf("rsa of an ed25519-only server: %v", err)
	}
}

// A key in the recipe: no ssh-keyscan at all. The host's stale key of
// the type goes (its name taken off a line that names others too), its
// key of another type and every other line stay byte for byte.
func TestKnownHostsGivenKey(t *testing.T) {
	old := keyscanTool
	keyscanTool = "/nonexistent/ssh-keyscan"
	defer func() { keyscanTool = old }()
	file := filepath.Join(t.TempDir(), "known_hosts")
	stale := "AAAAC3NzaC1lZDI1NTE5AAAAIO1wLPVJPLdZ+GvMdUO2TYA7Rkz6dHK8XiRZLkQ0T+Pw"
	text := "# hosts\n" +
		"github.com,140.82.121.4 ssh-ed25519 " + stale + "\n" +
		"github.com ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w0WZ2YB/++Tpockg=\n" +
		"*.example.com  ssh-ed25519 " + stale + "\n"
	resourcetest.WriteFile(t, file, text, 0o600)
	typ := newKnownHostsType("")
	r := knownRes(t, map[string]any{"host": "GitHub.com", "key": "ssh-ed25519 " + testHostKey + " comment dropped", "file_location": file})
	_, step := resourcetest.Plan(t, typ, r)
	c := step.Change("entry")
	if c == nil || c.Before.AsString() != "github.com,140.82.121.4 ssh-ed25519 "+stale+"\n" || c.After.AsString() != "140.82.121.4 ssh-ed25519 "+stale+"\ngithub.com ssh-ed25519 "+testHostKey+"\n" {
		t.Fatalf("changes %+v", step.Changes)
	}
	if len(step.Changes) != 1 || step.Kind != resources.Update {
		t.Errorf("an existing file's mode or owner is left alone: %s %v", step.Kind, resourcetest.ChangedProps(step))
	}
	resourcetest.Apply(t, typ, resourcetest.TestEnv(t), r, resources.Update)
	want := strings.Replace(text, "github.com,140.82.121.4", "140.82.121.4", 1) + "github.com ssh-ed25519 " + testHostKey + "\n"
	if got := resourcetest.ReadFile(t, file); got != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	if m := resourcetest.PermOf(t, file); m != 0o600 {
		t.Errorf("mode %04o: an existing file keeps its mode", m)
	}
}

// hash_entries writes the name as ssh-keygen -H does, with a salt that
// is the same for the plan and its apply (the plan is exact); ssh finds
// it; a plain line of the same key is replaced by the hashed one.
func TestKnownHostsHashed(t *testing.T) {
	testenv.MustHave(t, testenv.SSHKeygen)
	dir := t.TempDir()
	file, id := filepath.Join(dir, "known_hosts"), filepath.Join(dir, "machine-id")
	resourcetest.WriteFile(t, id, "0123456789abcdef0123456789abcdef\n", 0o444)
	resourcetest.WriteFile(t, file, "git.example.com ssh-ed25519 "+testHostKey+"\n", 0o644)
	typ := newKnownHostsType(id)
	r := knownRes(t, map[string]any{"host": "git.example.com", "key": testHostKey, "hash_entries": true, "file_location": file})
	_, a := resourcetest.Plan(t, typ, r)
	_, b := resourcetest.Plan(t, typ, r)
	if a.Change("entry") == nil || !a.Change("entry").After.RawEquals(b.Change("entry").After) || !strings.HasPrefix(a.Change("entry").After.AsString(), "|1|") {
		t.Fatalf("hashed entries: %+v / %+v", a.Changes, b.Changes)
	}
	resourcetest.Apply(t, typ, resourcetest.TestEnv(t), r, resources.Update)
	got := resourcetest.ReadFile(t, file)
	if strings.Contains(got, "git.example.com") || strings.Count(got, "\n") != 1 {
		t.Errorf("file %q", got)
	}
	if out, err := exec.Command("ssh-keygen", "-F", "git.example.com", "-f", file).Output(); err != nil || !strings.Contains(string(out), testHostKey) {
		t.Errorf("ssh-keygen -F: %v %s", err, out)
	}
	// Another host's salt differs.
	if other := (&resources.State{Extra: map[string]string{"key": testHostKey, "salt": typ.salt(knownRes(t, map[string]any{"host": "git2.example.com", "file_location": file}))}}); strings.Contains(typ.line(r, other), strings.Split(got, "|")[2]) {
		t.Errorf("two hosts share a salt")
	}
}

// The plan refuses a file it could be tricked into: a symbolic link.
func TestKnownHostsRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	resourcetest.WriteFile(t, target, "", 0o644)
	link := filepath.Join(dir, "known_hosts")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	resourcetest.PlanErr(t, newKnownHostsType(""), knownRes(t, map[string]any{"host": "h", "key": testHostKey, "file_location": link}), "is a symbolic link")
	missing := filepath.Join(dir, "no", "known_hosts")
	me, _, grp, _ := resourcetest.Whoami(t)
	_, step := resourcetest.Plan(t, newKnownHostsType(""), knownRes(t, map[string]any{"host": "h", "key": testHostKey, "file_location": missing, "owner": me, "group": grp}))
	if len(step.Needs) != 1 || step.Needs[0].Value != filepath.Dir(missing) {
		t.Errorf("needs %v", step.Needs)
	}
}

// Bad input is refused when the recipe is read.
func TestKnownHostsValidation(t *testing.T) {
	typ := newKnownHostsType("")
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"host", cty.StringVal("github.com"), ""},
		{"host", cty.StringVal("192.0.2.1"), ""},
		{"host", cty.StringVal("2001:db8::1"), ""},
		{"host", cty.StringVal("*.example.com"), "wildcard"},
		{"host", cty.StringVal("git?.example.com"), "wildcard"},
		{"host", cty.StringVal("!bad.example.com"), "wildcard"},
		{"host", cty.StringVal("a.example.com,b.example.com"), "more than one name"},
		{"host", cty.StringVal("a.example.com b.example.com"), "more than one name"},
		{"host", cty.StringVal("a.example.com\n* ssh-rsa AAAA"), "wildcard"},
		{"host", cty.StringVal("a\nb"), "control character"},
		{"host", cty.StringVal("[a.example.com]:2222"), "give the port with port"},
		{"host", cty.StringVal("|1|abc|def"), "give the port with port"},
		{"host", cty.StringVal("under_score.example.com"), "not an RFC 1123 host name"},
		{"key", cty.StringVal(testHostKey), ""},
		{"key", cty.StringVal("ssh-ed25519 " + testHostKey + " c"), ""},
		{"key", cty.StringVal("ssh-rsa " + testHostKey), "it says ssh-rsa, but the key itself is ssh-ed25519"},
		{"key", cty.StringVal(testHostKey[:40]), "not a valid OpenSSH public key"},
		{"key", cty.StringVal("hunter2"), "not a valid OpenSSH public key"},
		{"key", cty.StringVal(testHostKey + "\ngithub.com ssh-rsa AAAA"), "one line"},
		{"key_type", cty.StringVal("ed25519"), ""},
		{"key_type", cty.StringVal("ssh-ed25519"), ""},
		{"key_type", cty.StringVal("rsa1"), "is not a key type"},
		{"port", cty.NumberIntVal(0), "from 1 to 65535"},
		{"port", cty.NumberIntVal(65536), "from 1 to 65535"},
		{"entry", cty.StringVal("x"), "a recipe does not set it"},
	} {
		err := typ.schema.Property(c.prop).Validate(c.v)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
	// key_type against the key's own type.
	resourcetest.PlanErr(t, typ, knownRes(t, map[string]any{"host": "h", "key": testHostKey, "key_type": "rsa", "file_location": filepath.Join(t.TempDir(), "k")}), "key_type is ssh-rsa, but the key is ssh-ed25519")
}
