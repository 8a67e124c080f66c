package packages

import (
	"os"
	"strings"
	"testing"
)

// The fixture keys were made with gpg --quick-gen-key (RSA and Ed25519)
// and imported into a throwaway rpm database: rpm -q gpg-pubkey said
// these names. The dnf tests check the same against rpm itself.
func TestRPMKeyName(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/repo-key-rsa.asc":     "gpg-pubkey-8ea660d5-6b0a0d78",
		"testdata/repo-key-ed25519.asc": "gpg-pubkey-c2015ba8-6b0a0d79",
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rpmKeyName(b)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", file, got, err, want)
		}
		bin, err := dearmor(string(b))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := rpmKeyName(bin); err != nil || got != want {
			t.Errorf("%s, binary: %q, %v", file, got, err)
		}
	}
	for _, bad := range []string{"", "hello", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!\n-----END PGP PUBLIC KEY BLOCK-----\n", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n"} {
		if _, err := rpmKeyName([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := rpmKeyName([]byte{0x99, 0x00, 0x05, 4, 1}); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a cut key: %v", err)
	}
}
