package fleet

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/plan"
)

// planFile is the bytes of a plan file for host.
func planFile(t testing.TB, host string) []byte {
	t.Helper()
	p := &plan.Plan{FormatVersion: plan.FormatVersion, Host: plan.Host{Hostname: host, MachineID: "id-" + host}}
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := plan.Write(path, p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testManifest(hosts ...string) Manifest {
	m := Manifest{ToqueVersion: "test", PlanFormat: plan.FormatVersion}
	for _, h := range hosts {
		m.Hosts = append(m.Hosts, HostEntry{Alias: h, Status: StatusChanges, Hostname: h})
	}
	return m
}

// rewriteEntry rewrites a bundle with one entry changed by edit.
func rewriteEntry(t *testing.T, src, dst, name string, edit func([]byte) []byte) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if hdr.Name == name {
			data = edit(data)
			if data == nil {
				continue
			}
		}
		hdr.Size = int64(len(data))
		tw.WriteHeader(hdr)
		tw.Write(data)
	}
	tw.Close()
	if err := os.WriteFile(dst, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestBundleRoundTripAndTampering(t *testing.T) {
	dir := t.TempDir()
	key, err := plan.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := plan.GenerateKey(rand.Reader)
	plans := map[string][]byte{"web-01": planFile(t, "web-01"), "web-02": planFile(t, "web-02")}
	m := testManifest("web-01", "web-02", "web-03")
	m.Hosts[2].Status, m.Hosts[2].Failure = StatusUnreachable, string(FailRefused)
	signed := filepath.Join(dir, "signed.plan")
	digest, err := WriteBundle(signed, m, plans, key)
	if err != nil {
		t.Fatal(err)
	}
	trusted := []plan.PublicKey{plan.PublicKeyOf(key, "ci")}
	b, err := ReadBundle(signed, trusted, "ci.pub")
	if err != nil {
		t.Fatal(err)
	}
	if b.Digest != digest || b.Signer == nil || !bytes.Equal(b.Plans["web-02"], plans["web-02"]) || b.Host("web-03").Plan != "" {
		t.Fatalf("read back %+v", b.Manifest)
	}
	if d, _ := PlanFileDigest(plans["web-01"]); b.Host("web-01").PlanDigest != d {
		t.Errorf("plan digest %s, want %s", b.Host("web-01").PlanDigest, d)
	}
	unsigned := filepath.Join(dir, "unsigned.plan")
	if _, err := WriteBundle(unsigned, m, plans, nil); err != nil {
		t.Fatal(err)
	}

	edited := filepath.Join(dir, "edited.plan")
	for _, c := range []struct {
		name    string
		src     string
		entry   string
		edit    func([]byte) []byte
		trusted []plan.PublicKey
		is      error
		says    string
	}{
		{"a plan edited", signed, "hosts/web-01/plan.out", func(b []byte) []byte { return bytes.Replace(b, []byte("web-01"), []byte("web-99"), 1) }, nil, ErrBundleEdited, "the plan of web-01 does not match the manifest"},
		{"a plan left out", signed, "hosts/web-02/plan.out", func([]byte) []byte { return nil }, nil, ErrBundleEdited, "lacks hosts/web-02/plan.out"},
		{"the manifest edited", signed, "manifest.json", func(b []byte) []byte { return bytes.Replace(b, []byte(`"unreachable"`), []byte(`"changes"    `), 1) }, nil, ErrBundleEdited, "does not match its checksum"},
		{"the manifest edited and checksummed again", signed, "manifest.json", func(b []byte) []byte {
			return resum(t, bytes.Replace(b, []byte(`"toque_version":"test"`), []byte(`"toque_version":"evil"`), 1))
		}, nil, plan.ErrSignature, "changed after it was signed"},
		{"unsigned under trusted keys", unsigned, "", nil, trusted, plan.ErrUnsigned, "carries no signature"},
		{"signed by another key", signed, "", nil, []plan.PublicKey{plan.PublicKeyOf(other, "")}, plan.ErrUntrusted, "not one of the 1 key(s)"},
		{"another format", signed, "manifest.json", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"toque_fleet_plan":1`), []byte(`"toque_fleet_plan":9`), 1)
		}, nil, ErrBundleVersion, "format 9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.src
			if c.edit != nil {
				rewriteEntry(t, c.src, edited, c.entry, c.edit)
				path = edited
			}
			_, err := ReadBundle(path, c.trusted, "ci.pub")
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %v, want %v saying %q", err, c.is, c.says)
			}
		})
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBundle(filepath.Join(dir, "notes.txt"), nil, ""); !errors.Is(err, ErrNotBundle) {
		t.Errorf("a text file: %v", err)
	}
	if err := RemoveStaleBundle(filepath.Join(dir, "notes.txt")); err == nil {
		t.Error("RemoveStaleBundle removed a file that is not a bundle")
	}
	if err := RemoveStaleBundle(unsigned); err != nil {
		t.Error(err)
	}
}

// resum computes a manifest envelope's checksum again, as someone
// editing it would.
func resum(t *testing.T, env []byte) []byte {
	t.Helper()
	i := bytes.Index(env, []byte(`"manifest":`))
	body := env[i+len(`"manifest":`) : len(env)-2]
	j := bytes.Index(env, []byte(`"checksum":"`)) + len(`"checksum":"`)
	k := j + bytes.IndexByte(env[j:], '"')
	out := append([]byte(nil), env[:j]...)
	out = append(out, "sha256:"+hexSum(body)...)
	return append(out, env[k:]...)
}

func TestSignPlanFileIsWhatPlanSignKeyWrites(t *testing.T) {
	key, _ := plan.GenerateKey(rand.Reader)
	p := &plan.Plan{FormatVersion: plan.FormatVersion, Host: plan.Host{Hostname: "a", MachineID: "m"}}
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := plan.WriteEncoded(filepath.Join(dir, "unsigned"), enc); err != nil {
		t.Fatal(err)
	}
	if err := enc.Sign(key); err != nil {
		t.Fatal(err)
	}
	if err := plan.WriteEncoded(filepath.Join(dir, "signed"), enc); err != nil {
		t.Fatal(err)
	}
	unsigned, _ := os.ReadFile(filepath.Join(dir, "unsigned"))
	want, _ := os.ReadFile(filepath.Join(dir, "signed"))
	got, err := SignPlanFile(unsigned, key)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("SignPlanFile: %v\n%s\nwant\n%s", err, got, want)
	}
	if _, err := SignPlanFile(bytes.Replace(unsigned, []byte(`"a"`), []byte(`"b"`), 1), key); !errors.Is(err, plan.ErrChecksum) {
		t.Errorf("signing an edited plan: %v", err)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		log  string
		want Failure
	}{
		{"debug1: x\nssh: connect to host 10.0.0.1 port 22: Connection refused\n", FailRefused},
		{"ssh: connect to host 10.0.0.1 port 22: Connection timed out\n", FailTimeout},
		{"Connection timed out during banner exchange\nConnection to 10.0.0.1 port 22 timed out\n", FailTimeout},
		{"root@10.0.0.1: Permission denied (publickey).\n", FailAuth},
		{"@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nSHA256:abc.\nOffending ED25519 key in /k:3\n", FailHostKeyChanged},
		{"No ED25519 host key is known for 10.0.0.1 and you have requested strict checking.\nHost key verification failed.\n", FailHostKeyUnknown},
		{"ssh: Could not resolve hostname x: Name or service not known\n", FailResolve},
		{"ssh: connect to host 10.0.0.1 port 22: No route to host\n", FailUnreachable},
		{"kex_exchange_identification: Connection closed by remote host\n", FailClosed},
		{"something new\n", FailOther},
		{"", FailOther},
	} {
		if got, _ := classify(c.log); got != c.want {
			t.Errorf("%q: %s, want %s", c.log, got, c.want)
		}
	}
	_, detail := classify("@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nThe fingerprint for the ED25519 key sent by the remote host is\nSHA256:abc.\nOffending ED25519 key in /k:3\n")
	if !strings.Contains(detail, "the host presented key SHA256:abc, not the one known_hosts holds for it (ED25519 key in /k:3)") {
		t.Errorf("detail %q", detail)
	}
}

func TestRecipesArchiveIsReproducible(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"a.hcl": "x", "sub/b.tpl": "y", ".git/config": "z", ".hidden.hcl": "w"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := PackRecipes(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(dir, "a.hcl"), bundleTime, bundleTime)
	b, err := PackRecipes(dir)
	if err != nil || a.Digest != b.Digest || a.Files != 2 {
		t.Fatalf("digests %s %s, %d files, %v", a.Digest, b.Digest, a.Files, err)
	}
	out := t.TempDir()
	if err := UnpackRecipes(a.Data, a.Digest, out); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "sub", "b.tpl")); string(got) != "y" {
		t.Errorf("unpacked %q", got)
	}
	if _, err := os.Stat(filepath.Join(out, ".git")); err == nil {
		t.Error(".git was shipped")
	}
	if err := UnpackRecipes(a.Data, b.Digest[:63]+"0", t.TempDir()); err == nil {
		t.Error("unpacked a bundle that does not match its digest")
	}
}

// A manifest's fields reach the hosts' shell scripts: a bundle whose
// checksum is right (an unsigned bundle can be rewritten whole) but
// whose digests are not digests, whose plan digest is not its plan's, or
// whose status lacks its plan, is refused before any host is contacted.
func TestBundleManifestFieldsChecked(t *testing.T) {
	dir := t.TempDir()
	plans := map[string][]byte{"web-01": planFile(t, "web-01")}
	good, _ := PlanFileDigest(plans["web-01"])
	for name, edit := range map[string]func(h *HostEntry){
		"shell in plan_digest": func(h *HostEntry) { h.PlanDigest = "x; touch /tmp/pwned" },
		"another plan digest":  func(h *HostEntry) { h.PlanDigest = "sha256:" + strings.Repeat("0", 64) },
		"unknown status":       func(h *HostEntry) { h.Status = "$(reboot)" },
	} {
		m := testManifest("web-01")
		m.Hosts[0].PlanDigest = good
		edit(&m.Hosts[0])
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".plan")
		if _, err := WriteBundle(p, m, plans, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadBundle(p, nil, ""); !errors.Is(err, ErrBundleEdited) {
			t.Errorf("%s: %v, want ErrBundleEdited", name, err)
		}
	}
	for _, h := range []HostEntry{
		{Alias: "a", Status: StatusChanges, Plan: "hosts/a/plan.out", PlanSHA256: "$(id)", PlanDigest: good},
		{Alias: "a", Status: StatusChanges},
		{Alias: "a", Status: StatusUnreachable, PlanSHA256: strings.Repeat("a", 64)},
		{Alias: "a", Status: "$(reboot)"},
	} {
		if err := checkEntry(&h); err == nil {
			t.Errorf("%+v accepted", h)
		}
	}
}
