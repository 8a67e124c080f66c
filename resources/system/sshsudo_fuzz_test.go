package system

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources/internal/sshkey"
)

// FuzzKnownHostsAndSudo: whatever a known_hosts file holds and whatever
// a recipe writes, nothing panics; an entry made once is made (the file
// is the same when edited again), and holds the entry's line once; what
// the sudo checks let through never ends a line nor starts a comment.
func FuzzKnownHostsAndSudo(f *testing.F) {
	f.Add("github.com,140.82.121.4 ssh-ed25519 AAAA\n# c\n", "github.com", false, "/bin/ls a\\,b")
	f.Add("|1|c2FsdA==|aGFzaA== ssh-ed25519 "+testHostKey+"\n\n", "[h]:2222", true, "ALL")
	f.Add("@revoked * ssh-rsa AAAA\nh ssh-ed25519 "+testHostKey+" x y\n", "h", false, "!/bin/su #")
	f.Fuzz(func(t *testing.T, text, name string, hashed bool, cmd string) {
		if !utf8.ValidString(name) || name == "" || validateKnownHost(cty.StringVal(name)) != nil {
			return // the recipe's host is refused
		}
		line := name
		if hashed {
			line = sshkey.HashHost(name, []byte("0123456789abcdefghij"))
		}
		line += " ssh-ed25519 " + testHostKey
		once := knownHostsEdit(text, name, "ssh-ed25519", testHostKey, line, hashed)
		twice := knownHostsEdit(once, name, "ssh-ed25519", testHostKey, line, hashed)
		if once != twice {
			t.Fatalf("not idempotent:\n%q\n%q", once, twice)
		}
		if got := entryLines(once, name, "ssh-ed25519"); strings.Count(got, testHostKey) < 1 {
			t.Fatalf("the entry is not there: %q in %q", got, once)
		}
		for _, check := range []func(string, string) error{checkSudoCommand, checkSudoUser, checkSudoHost, checkSudoRunas, checkSudoDefault, checkEnvKeep} {
			if check("x", cmd) == nil && (strings.ContainsAny(cmd, "\n\r") || strings.HasSuffix(cmd, `\`)) {
				t.Fatalf("%q passed a sudo check", cmd)
			}
		}
		if checkSudoCommand("x", cmd) == nil {
			if _, i := bare(cmd, "#,", false); i >= 0 {
				t.Fatalf("%q has a bare # or comma", cmd)
			}
		}
	})
}
