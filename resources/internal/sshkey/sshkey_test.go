package sshkey

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

// Keys made with ssh-keygen (OpenSSH 9.2).
const (
	ed25519Pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGQFUlnq1WoLK8//9BeNG0ad7TpIYBPSbg9xqWBfTk+3 me@host"
	ecdsaPub   = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBPNHn9YWJuYZD0Hk7gA359e5pAn/8jtCdTE+4fpZ6/BI5uKhWg5v+zPLl6DtIilStMYzc3WUJHy82EMtwQh0l/4= root@vm"
)

func TestParse(t *testing.T) {
	k, err := Parse(ed25519Pub)
	if err != nil || k.Type != "ssh-ed25519" || k.Comment != "me@host" || k.String() != ed25519Pub {
		t.Fatalf("%+v %v", k, err)
	}
	edBlob := strings.Fields(ed25519Pub)[1]
	ecBlob := strings.Fields(ecdsaPub)[1]
	// A point off the curve: the last byte of the key flipped.
	raw, _ := base64.StdEncoding.DecodeString(ecBlob)
	raw[len(raw)-1] ^= 1
	offCurve := base64.StdEncoding.EncodeToString(raw)
	for _, c := range []struct{ in, want string }{
		{ecdsaPub, ""},
		{"ssh-rsa " + edBlob, "it says ssh-rsa, but the key itself is ssh-ed25519"},
		{"ssh-ed25519 " + edBlob[:len(edBlob)-8], "key data does not parse: short read"},
		{"ssh-ed25519 " + edBlob[:len(edBlob)-7], "not base64"},
		{"ssh-ed25519 " + edBlob[:40] + "AAAA", "key data does not parse"},
		{"ecdsa-sha2-nistp256 " + offCurve, "key data does not parse"},
		{"ssh-ed25519 not-base64!", "not base64"},
		{"ssh-ed25519", "not TYPE BASE64"},
		{ed25519Pub + "\nssh-rsa AAAA", "not one line"},
		{"ssh-ed25519 " + edBlob + "\n", "not one line"},
	} {
		_, err := Parse(c.in)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	if fp := k.Fingerprint(); !strings.HasPrefix(fp, "SHA256:") {
		t.Errorf("fingerprint %q", fp)
	}
}

// Every key type ssh-keygen makes is read, with the fingerprint
// ssh-keygen -l prints.
func TestParseKeygenKeys(t *testing.T) {
	testenv.MustHave(t, testenv.SSHKeygen)
	dir := t.TempDir()
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		f := filepath.Join(dir, typ)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", typ, "-N", "", "-C", "c", "-f", f).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		pub, _ := os.ReadFile(f + ".pub")
		k, err := Parse(strings.TrimSpace(string(pub)))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		out, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", f+".pub").Output()
		if err != nil || !strings.Contains(string(out), k.Fingerprint()) {
			t.Errorf("%s: fingerprint %s, ssh-keygen says %s (%v)", typ, k.Fingerprint(), out, err)
		}
	}
}

// A hashed name is found by ssh-keygen -F, which hashes as ssh does.
func TestHashHost(t *testing.T) {
	testenv.MustHave(t, testenv.SSHKeygen)
	dir := t.TempDir()
	file := filepath.Join(dir, "known_hosts")
	name := HostField("git.example.com", 2222)
	line := HashHost(name, []byte("0123456789abcdefghij")) + " " + ed25519Pub[:strings.LastIndex(ed25519Pub, " ")]
	if err := os.WriteFile(file, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ssh-keygen", "-F", name, "-f", file).Output()
	if err != nil || !strings.Contains(string(out), line) {
		t.Errorf("ssh-keygen -F %s: %v %s", name, err, out)
	}
	l := ParseKnownHostsLine(line)
	if !l.OK || !l.Names(name) || l.Names("git.example.com") || l.Names("[git.example.com]:22") {
		t.Errorf("%+v", l)
	}
	if p := ParseKnownHostsLine("@cert-authority *.example.com " + ed25519Pub); !p.OK || p.Marker != "@cert-authority" || p.Names("a.example.com") {
		t.Errorf("marker line %+v", p)
	}
	for _, l := range []string{"", "# comment", "host ssh-rsa"} {
		if ParseKnownHostsLine(l).OK {
			t.Errorf("%q is an entry", l)
		}
	}
}
