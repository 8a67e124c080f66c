package accounts

import (
	"strings"
	"testing"
)

// FuzzAuthorizedKeysEdit: whatever the file holds, nothing panics, and
// an edit made once is made: the file is the same when edited again, it
// holds the key's line once (or, deleted, not at all), and with
// exclusive no other key.
func FuzzAuthorizedKeysEdit(f *testing.F) {
	blob := strings.Fields(keyA)[1]
	f.Add("# keys\n"+keyB+"\n\nrestrict "+keyA+"\n", true, false)
	f.Add(`command="echo ssh-ed25519 `+blob+`" `+keyB+"\n", true, true)
	f.Add("garbage\n\n\n", false, false)
	f.Fuzz(func(t *testing.T, text string, keep, exclusive bool) {
		line := "no-pty " + keyA
		once := editKeys(text, blob, line, keep, exclusive)
		if twice := editKeys(once, blob, line, keep, exclusive); twice != once {
			t.Fatalf("not idempotent:\n%q\n%q", once, twice)
		}
		mine, others := splitKeys(once, blob)
		switch {
		case keep && mine != line+"\n":
			t.Fatalf("the key's lines are %q in %q", mine, once)
		case !keep && mine != "":
			t.Fatalf("the key is still there: %q", mine)
		case keep && exclusive && others != "":
			t.Fatalf("exclusive left %q", others)
		}
	})
}
