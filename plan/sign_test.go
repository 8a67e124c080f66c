package plan

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources/builtin"
)

func newKey(t *testing.T) (ed25519.PrivateKey, PublicKey) {
	t.Helper()
	k, err := GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k, PublicKey{Key: k.Public().(ed25519.PublicKey)}
}

// writeSigned writes the sample plan signed with key (unsigned for nil).
func writeSigned(t *testing.T, key ed25519.PrivateKey) (string, []byte) {
	t.Helper()
	enc, err := samplePlan(t).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if key != nil {
		if err := enc.Sign(key); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := WriteEncoded(path, enc); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, raw
}

func TestSignedPlans(t *testing.T) {
	ci, ciPub := newKey(t)
	next, nextPub := newKey(t)
	_, otherPub := newKey(t)
	read := func(path string, trusted ...PublicKey) (*File, error) {
		o := ReadOptions{Types: builtin.Registry(), TrustedFrom: "trusted.pub"}
		if trusted != nil {
			o.Trusted = trusted
		}
		return ReadFile(context.Background(), path, o)
	}

	signed, raw := writeSigned(t, ci)
	unsigned, _ := writeSigned(t, nil)

	t.Run("a signature is verified and named, trusted or not", func(t *testing.T) {
		f, err := read(signed)
		if err != nil {
			t.Fatal(err)
		}
		if f.Signer == nil || f.Signer.Fingerprint() != ciPub.Fingerprint() || f.Trusted {
			t.Errorf("signer %+v trusted %v", f.Signer, f.Trusted)
		}
		if f, err = read(signed, otherPub, ciPub); err != nil || !f.Trusted {
			t.Errorf("trusted key refused: %v", err)
		}
	})
	t.Run("unsigned plans are read, and refused under trusted keys", func(t *testing.T) {
		if f, err := read(unsigned); err != nil || f.Signer != nil {
			t.Errorf("unsigned plan: %v", err)
		}
		if _, err := read(unsigned, ciPub); !errors.Is(err, ErrUnsigned) {
			t.Errorf("got %v, want ErrUnsigned", err)
		}
	})
	t.Run("another key's plan is refused", func(t *testing.T) {
		_, err := read(signed, otherPub)
		if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), ciPub.Fingerprint()) || !strings.Contains(err.Error(), "trusted.pub") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("an edited plan with its checksum computed again is refused", func(t *testing.T) {
		edited := reseal(t, raw, func(p *Plan) { p.Resources[0].Desired["content"] = p.Resources[1].Desired["content"] })
		for _, trusted := range [][]PublicKey{nil, {ciPub}} {
			if _, err := read(writeTemp(t, edited), trusted...); !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "changed after it was signed") {
				t.Errorf("got %v, want ErrSignature", err)
			}
		}
	})
	t.Run("a signature copied onto another plan is refused", func(t *testing.T) {
		var env envelope
		mustUnmarshal(t, raw, &env)
		_, unsignedRaw := writeSigned(t, nil)
		other := reseal(t, unsignedRaw, func(p *Plan) { p.ToqueVersion = "0.0.1-other" })
		copied := bytes.Replace(other, []byte(`,"plan":`), append(append([]byte(`,"signature":`), env.Signature...), []byte(`,"plan":`)...), 1)
		if _, err := read(writeTemp(t, copied), ciPub); !errors.Is(err, ErrSignature) {
			t.Errorf("got %v, want ErrSignature", err)
		}
	})
	t.Run("the signature is checked before the plan is decoded", func(t *testing.T) {
		foreign := reseal(t, raw, func(p *Plan) {})
		foreign = bytes.Replace(foreign, []byte(`"plan":{`), []byte(`"plan":{"resources":"not a list",`), 1)
		// Still signed by ci (the checksum is recomputed below), so under
		// another key it is refused as untrusted, not as undecodable.
		var env envelope
		mustUnmarshal(t, foreign, &env)
		enc := &Encoded{FormatVersion: FormatVersion, Body: env.Plan, Digest: digestOf(env.Plan)}
		if err := enc.Sign(ci); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "plan.out")
		if err := WriteEncoded(path, enc); err != nil {
			t.Fatal(err)
		}
		if _, err := read(path, otherPub); !errors.Is(err, ErrUntrusted) {
			t.Errorf("got %v, want ErrUntrusted", err)
		}
		if _, err := read(path, ciPub); !errors.Is(err, ErrNotPlan) {
			t.Errorf("got %v, want ErrNotPlan once trusted", err)
		}
	})
	t.Run("rotation: plans of either listed key are accepted", func(t *testing.T) {
		byNext, _ := writeSigned(t, next)
		for _, p := range []string{signed, byNext} {
			if f, err := read(p, ciPub, nextPub); err != nil || !f.Trusted {
				t.Errorf("%s: %v", p, err)
			}
		}
		if _, err := read(signed, nextPub); !errors.Is(err, ErrUntrusted) {
			t.Errorf("the retired key is still trusted: %v", err)
		}
	})
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	key, pub := newKey(t)
	pub.Comment = "ci 2025"
	data, err := MarshalPrivateKey(key, pub.Comment)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(pub.Fingerprint())) || !bytes.Contains(data, []byte("-----BEGIN PRIVATE KEY-----")) {
		t.Errorf("private key file:\n%s", data)
	}
	priv := filepath.Join(dir, "key")
	if err := os.WriteFile(priv, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSigningKey(priv)
	if err != nil || !got.Equal(key) {
		t.Fatalf("load: %v", err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o644} {
		os.Chmod(priv, mode)
		if _, err := LoadSigningKey(priv); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %04o: got %v", mode, err)
		}
	}
	os.Chmod(priv, 0o400)
	if _, err := LoadSigningKey(priv); err != nil {
		t.Errorf("mode 0400: %v", err)
	}
	for name, content := range map[string]string{
		"not PEM":        "hello",
		"public PEM":     "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
		"damaged PKCS#8": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	} {
		if _, err := ParsePrivateKey([]byte(content)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	_, otherPub := newKey(t)
	trusted := filepath.Join(dir, "trusted.pub")
	lines := "# CI keys\n\n" + pub.String() + "\n  " + otherPub.String() + "  \n"
	if err := os.WriteFile(trusted, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadTrustedKeys(trusted)
	if err != nil || len(keys) != 2 || keys[0].Comment != "ci 2025" || !bytes.Equal(keys[1].Key, otherPub.Key) {
		t.Fatalf("keys %+v, %v", keys, err)
	}
	os.Chmod(trusted, 0o664)
	if _, err := LoadTrustedKeys(trusted); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), "may have their plans applied") {
		t.Errorf("group-writable trusted keys: %v", err)
	}
	os.Chmod(trusted, 0o644)
	for name, content := range map[string]string{
		"empty":       "# nothing\n",
		"other type":  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE\n",
		"short key":   PublicKeyType + " AAAA\n",
		"no key":      PublicKeyType + "\n",
		"not base64":  PublicKeyType + " !!!\n",
		"private key": string(data),
	} {
		os.WriteFile(trusted, []byte(content), 0o644)
		if _, err := LoadTrustedKeys(trusted); !errors.Is(err, ErrKey) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	if _, err := LoadTrustedKeys(filepath.Join(dir, "missing")); !errors.Is(err, ErrKey) {
		t.Errorf("missing file: %v", err)
	}
}

// A trusted-keys file says whose plans root applies: one another user could
// replace (owning it, or a directory above it, or able to write one) is
// refused by the rules the state directory follows (internal/trust).
func TestLoadTrustedKeysRefusesReplaceableFile(t *testing.T) {
	_, pub := newKey(t)
	line := []byte(pub.String() + "\n")
	write := func(t *testing.T, path string) {
		t.Helper()
		if err := os.WriteFile(path, line, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(t *testing.T, dir string, mode os.FileMode) {
		t.Helper()
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		root bool // needs root to give a file to another user
		// setup returns the file to load.
		setup  func(t *testing.T, base string) string
		reason string
	}{
		{"in a directory every user can write", false, func(t *testing.T, base string) string {
			d := filepath.Join(base, "shared")
			mkdir(t, d, 0o777)
			write(t, filepath.Join(d, "trusted.pub"))
			return filepath.Join(d, "trusted.pub")
		}, "writable by every user without the sticky bit"},
		{"a link to a file in a directory every user can write", false, func(t *testing.T, base string) string {
			d := filepath.Join(base, "shared")
			mkdir(t, d, 0o777)
			write(t, filepath.Join(d, "keys"))
			link := filepath.Join(base, "trusted.pub")
			if err := os.Symlink(filepath.Join(d, "keys"), link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "writable by every user without the sticky bit"},
		{"owned by another user", true, func(t *testing.T, base string) string {
			f := filepath.Join(base, "trusted.pub")
			write(t, f)
			if err := os.Chown(f, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return f
		}, "is owned by uid 65534"},
		{"in a directory owned by another user", true, func(t *testing.T, base string) string {
			d := filepath.Join(base, "theirs")
			mkdir(t, d, 0o755)
			write(t, filepath.Join(d, "trusted.pub"))
			if err := os.Chown(d, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(d, "trusted.pub")
		}, "is owned by uid 65534"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				testenv.MustHave(t, testenv.Root, testenv.Nobody)
			}
			path := c.setup(t, t.TempDir())
			keys, err := LoadTrustedKeys(path)
			if !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("loaded %d key(s), error %v; want %v saying %q", len(keys), err, ErrKey, c.reason)
			}
		})
	}
	t.Run("in a sticky directory every user can write", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "tmp")
		mkdir(t, d, os.ModeSticky|0o777)
		write(t, filepath.Join(d, "trusted.pub"))
		if _, err := LoadTrustedKeys(filepath.Join(d, "trusted.pub")); err != nil {
			t.Fatal(err)
		}
	})
}
