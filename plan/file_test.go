package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/host"
)

// samplePlan is a plan with every kind of resource, as the planner made it
// (testdata/sample.plan; plan/planner's TestSamplePlanFixture keeps the
// fixture equal to what the planner makes today, and rewrites it with
// -update).
func samplePlan(t testing.TB) *Plan {
	t.Helper()
	pl, err := Read(filepath.Join("testdata", "sample.plan"), builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestWriteReadRoundTrip(t *testing.T) {
	pl := samplePlan(t)
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := Write(path, pl); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("plan file mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := Read(path, builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest() != pl.Digest() {
		t.Errorf("digest changed across a round trip: %s → %s", pl.Digest(), got.Digest())
	}
	a, _ := pl.canonical()
	b, _ := got.canonical()
	if !bytes.Equal(a, b) {
		t.Errorf("canonical JSON changed across a round trip:\n%s\n%s", a, b)
	}
	raw, _ := os.ReadFile(path)
	if !bytes.Contains(raw, []byte(`"checksum":"`+pl.Digest()+`"`)) {
		t.Errorf("the file's checksum is not the plan's digest")
	}
	if !got.CreatedAt.Equal(pl.CreatedAt) || got.Host != pl.Host || len(got.Resources) != len(pl.Resources) {
		t.Errorf("read back %+v", got)
	}
	if v := got.Resources[0].Desired["backup"].Value; !v.RawEquals(cty.True) {
		t.Errorf("desired backup %#v", v)
	}
	// No temporary files are left next to the plan.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after Write", len(entries))
	}
	// A second write replaces the file.
	pl.ToqueVersion = "0.2.0"
	if err := Write(path, pl); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(path, builtin.Registry()); err != nil || got.ToqueVersion != "0.2.0" {
		t.Errorf("rewrite: %v %v", got, err)
	}
}

func TestWriteEmptyPlan(t *testing.T) {
	pl := &Plan{FormatVersion: FormatVersion, ToqueVersion: "0.1.0-test", Salt: "ab", Host: Host{Hostname: "web-01", MachineID: "0123456789abcdef"}, Attributes: []Attribute{}, Resources: []*Resource{}}
	path := filepath.Join(t.TempDir(), "empty.plan")
	if err := Write(path, pl); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path, builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Resources) != 0 || got.HasChanges() || got.Digest() != pl.Digest() {
		t.Errorf("empty plan read back as %+v", got)
	}
}

func TestReadRefuses(t *testing.T) {
	pl := samplePlan(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.plan")
	if err := Write(good, pl); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		content []byte
		check   func(error) bool
	}{
		{"edited byte", bytes.Replace(raw, []byte(`"hostname":"web-01"`), []byte(`"hostname":"web-02"`), 1), isErr(ErrChecksum)},
		{"edited value inside a string", bytes.Replace(raw, []byte(`test -d /opt`), []byte(`test -d /opX`), 1), isErr(ErrChecksum)},
		{"truncated", raw[:len(raw)/2], isErr(ErrChecksum)},
		{"checksum edited", bytes.Replace(raw, []byte(`"checksum":"sha256:`), []byte(`"checksum":"sha256:0`), 1), isErr(ErrChecksum)},
		{"no checksum", bytes.Replace(raw, []byte(`"checksum"`), []byte(`"checksun"`), 1), isErr(ErrChecksum)},
		{"newer format", bytes.Replace(raw, envelopeHead(FormatVersion), envelopeHead(FormatVersion+1), 1), isVersion(FormatVersion + 1)},
		{"older format", bytes.Replace(raw, envelopeHead(FormatVersion), envelopeHead(FormatVersion-1), 1), isVersion(FormatVersion - 1)},
		{"format 1", bytes.Replace(raw, envelopeHead(FormatVersion), envelopeHead(1), 1), func(err error) bool {
			return isVersion(1)(err) && strings.Contains(err.Error(), "cannot be trusted to be what runs")
		}},
		{"not JSON", []byte("terraform plan\x00\x01"), isErr(ErrNotPlan)},
		{"other JSON", []byte(`{"format_version":"1.0","resources":[]}`), isErr(ErrNotPlan)},
		{"version not a number", []byte(`{"toque_plan":"one","checksum":"x","plan":{}}`), isErr(ErrNotPlan)},
		{"empty", nil, isErr(ErrNotPlan)},
		{"JSON null", []byte(`null`), isErr(ErrNotPlan)},
		{"JSON array", []byte(`[1,2]`), isErr(ErrNotPlan)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if bytes.Equal(tc.content, raw) {
				t.Fatal("the case did not change the file")
			}
			path := filepath.Join(t.TempDir(), "plan.out")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Read(path, builtin.Registry())
			if err == nil || got != nil {
				t.Fatalf("Read accepted the file: %+v", got)
			}
			if !tc.check(err) {
				t.Errorf("wrong error: %v", err)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := Read(filepath.Join(dir, "nope"), builtin.Registry())
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotPlan) {
			t.Errorf("got %v", err)
		}
	})
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func isVersion(got int) func(error) bool {
	return func(err error) bool {
		var ve *VersionError
		return errors.As(err, &ve) && ve.Got == got && ve.Want == FormatVersion && strings.Contains(err.Error(), "incompatible")
	}
}

func TestVerifyHost(t *testing.T) {
	pl := &Plan{Host: Host{Hostname: "web-01", MachineID: "aaaa"}}
	cases := []struct {
		name string
		id   host.Identity
		ok   bool
	}{
		{"same host", host.Identity{Hostname: "web-01", MachineID: "aaaa"}, true},
		{"other hostname", host.Identity{Hostname: "web-02", MachineID: "aaaa"}, false},
		{"same name, other machine", host.Identity{Hostname: "web-01", MachineID: "bbbb"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyHost(pl, tc.id)
			if tc.ok {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			var he *HostError
			if !errors.As(err, &he) {
				t.Fatalf("got %v, want a HostError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, `"web-01"`) || !strings.Contains(msg, `"`+tc.id.Hostname+`"`) || !strings.Contains(msg, tc.id.MachineID) {
				t.Errorf("message does not name both hosts: %s", msg)
			}
		})
	}
	// Without a machine id on either side, a hostname would be all that is
	// checked: refused, saying what to do.
	t.Run("no machine id here", func(t *testing.T) {
		err := VerifyHost(pl, host.Identity{Hostname: "web-01"})
		if err == nil || !strings.Contains(err.Error(), "this host has no machine id") || !strings.Contains(err.Error(), "systemd-machine-id-setup") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("plan without machine id", func(t *testing.T) {
		p := &Plan{Host: Host{Hostname: "web-01"}}
		err := VerifyHost(p, host.Identity{Hostname: "web-01", MachineID: "cccc"})
		if err == nil || !strings.Contains(err.Error(), "the plan records no machine id") || !strings.Contains(err.Error(), "toque plan") {
			t.Errorf("got %v", err)
		}
	})
}

func TestApplicable(t *testing.T) {
	if err := Applicable(&Plan{}); err != nil {
		t.Error(err)
	}
	err := Applicable(&Plan{Errored: true, Errors: []string{"default.hcl:3: Cannot read file[/x]: permission denied"}})
	if !errors.Is(err, ErrErrored) || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("got %v", err)
	}
}

func FuzzRead(f *testing.F) {
	pl := samplePlan(f)
	path := filepath.Join(f.TempDir(), "seed.plan")
	if err := Write(path, pl); err != nil {
		f.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(raw[:len(raw)-10])
	f.Add([]byte(`{"toque_plan":2,"checksum":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","plan":{}}`))
	f.Add([]byte(`{"toque_plan":2}`))
	f.Add([]byte(`{"toque_plan":99999999999999999999}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"toque_plan":2,"checksum":"","plan":{"resources":[null]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "plan.out")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, digest, err := ReadWithDigest(path, builtin.Registry())
		if err != nil {
			return
		}
		checkAccepted(t, got, digest)
	})
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// checkAccepted asserts what holds for any plan Read accepts (digest is the
// checksum it verified; command/views fuzzes the renderings):
//
//  1. It can be digested: Digest is a real sha256, not the "unencodable"
//     stand-in.
//  2. Its digest survives writing it back: the file Write makes reads back
//     with the digest Digest computed, and so does the plan read from it.
//     (The verified checksum itself equals Digest only for the canonical
//     bytes toque writes: FuzzReadPlanMember checks that case.)
func checkAccepted(t *testing.T, got *Plan, digest string) {
	t.Helper()
	d := got.Digest()
	if !digestRE.MatchString(d) || !digestRE.MatchString(digest) {
		t.Fatalf("an accepted plan has no real digest: Digest %q, checksum %q", d, digest)
	}
	path := filepath.Join(t.TempDir(), "again.plan")
	if err := Write(path, got); err != nil {
		t.Fatalf("an accepted plan cannot be written back: %v", err)
	}
	again, againDigest, err := ReadWithDigest(path, builtin.Registry())
	if err != nil {
		t.Fatalf("the plan written back is refused: %v", err)
	}
	if againDigest != d || again.Digest() != d {
		t.Fatalf("the digest changed on the way back: Digest %s, file %s, read back %s", d, againDigest, again.Digest())
	}
}

// FuzzReadPlanMember wraps the fuzz bytes in a valid envelope (with the
// right checksum), so the fuzzer reaches the plan decoder and what apply
// computes from whatever it accepts.
func FuzzReadPlanMember(f *testing.F) {
	pl := samplePlan(f)
	body, err := pl.canonical()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body)
	f.Add([]byte(`{"format_version":2,"resources":[{"desired":{"x":{"value":1,"type":"number"}},"current":{"exists":true,"values":{"a":{"value":{"value":"x","type":["list","string"]}}}}}]}`))
	f.Add([]byte(`{"format_version":2,"attributes":[{"path":"a","value":{"value":[1],"type":["tuple",["number"]]}}]}`))
	if tb, err := sitePlanFor(f).canonical(); err == nil {
		f.Add(tb) // a type written in HCL and a child resource
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var buf bytes.Buffer
		buf.Write(envelopeHead(FormatVersion))
		buf.WriteString(`"checksum":"` + digestOf(body) + `","plan":`)
		buf.Write(body)
		buf.WriteString(`}`)
		path := filepath.Join(t.TempDir(), "plan.out")
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		got, digest, err := ReadWithDigest(path, builtin.Registry())
		if err != nil {
			return
		}
		checkAccepted(t, got, digest)
		if canon, err := got.canonical(); err == nil && bytes.Equal(canon, body) && digest != got.Digest() {
			t.Fatalf("canonical bytes: the verified checksum %s is not the Digest %s", digest, got.Digest())
		}
		_ = got.Counts()
		for _, r := range got.Resources {
			if r.Current != nil {
				_ = r.Current.Fingerprint()
				_ = CompareCurrent(r.Current, r.Current)
			}
		}
	})
}

// The digest ReadWithDigest returns (the verified checksum) must be the one
// Digest computes: apply and show use it instead of encoding the plan again.
func TestReadWithDigestIsDigest(t *testing.T) {
	cur := &Current{Exists: false}
	pl := &Plan{FormatVersion: FormatVersion, Host: Host{Hostname: "h"}, Salt: "s",
		Resources: []*Resource{{Address: "file[/x]", Type: "file", Name: "/x", Kind: "create", Current: cur, Fingerprint: cur.Fingerprint()}}}
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := Write(path, pl); err != nil {
		t.Fatal(err)
	}
	got, digest, err := ReadWithDigest(path, builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if digest != pl.Digest() || digest != got.Digest() {
		t.Errorf("ReadWithDigest gave %s; Digest gives %s before and %s after", digest, pl.Digest(), got.Digest())
	}
}

func TestLooksLikePlanFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "plan.out")
	if err := Write(p, &Plan{FormatVersion: FormatVersion}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !LooksLikePlanFile(p) || LooksLikePlanFile(other) || LooksLikePlanFile(dir) || LooksLikePlanFile(filepath.Join(dir, "nope")) {
		t.Errorf("LooksLikePlanFile: plan %v, text %v, dir %v, missing %v", LooksLikePlanFile(p), LooksLikePlanFile(other), LooksLikePlanFile(dir), LooksLikePlanFile(filepath.Join(dir, "nope")))
	}
}

// envelopeHead is how a plan file of format version v starts.
func envelopeHead(v int) []byte { return []byte(fmt.Sprintf(`{"toque_plan":%d,`, v)) }
