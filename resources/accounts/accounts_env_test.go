package accounts

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources/resourcetest"
)

// Tier A of the host-resource tests: the real shadow tools, pointed at a
// throwaway root with --prefix (--root for gpasswd and chpasswd, which
// have no --prefix), so that the host's own databases are never read or
// written. They need root (the tools refuse to run otherwise, even with
// --prefix), and the tools (package passwd).

// accountsRoot is a throwaway root holding small account databases and
// the host's login.defs (so useradd picks ids and makes groups as on the
// host), for the tools' --prefix.
func accountsRoot(t *testing.T) string {
	t.Helper()
	testenv.MustHave(t, testenv.Root, testenv.Shadow) // the tools run only as root, even with --prefix
	root := t.TempDir()
	for _, d := range []string{"etc/default", "home", "var/mail"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"etc/passwd":  "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"etc/group":   "root:x:0:\ndaemon:x:1:\nusers:x:100:\nnogroup:x:65534:\n",
		"etc/shadow":  "root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n",
		"etc/gshadow": "root:*::\ndaemon:*::\nusers:*::\nnogroup:*::\n",
	}
	for name, content := range files {
		mode := os.FileMode(0o644)
		if filepath.Base(name) == "shadow" || filepath.Base(name) == "gshadow" {
			mode = 0o640
		}
		resourcetest.WriteFile(t, filepath.Join(root, name), content, mode)
	}
	defs, err := os.ReadFile("/etc/login.defs")
	if err != nil {
		defs = []byte("UID_MIN 1000\nUID_MAX 60000\nSYS_UID_MIN 100\nSYS_UID_MAX 999\nGID_MIN 1000\nGID_MAX 60000\nSYS_GID_MIN 100\nSYS_GID_MAX 999\nUSERGROUPS_ENAB yes\nENCRYPT_METHOD SHA512\n")
	}
	resourcetest.WriteFile(t, filepath.Join(root, "etc/login.defs"), string(defs), 0o644)
	return root
}

// dbDigest is a digest of the account databases under root, to prove
// that something left them exactly as they were.
func dbDigest(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	for _, f := range []string{"passwd", "group", "shadow", "gshadow"} {
		b, err := os.ReadFile(filepath.Join(root, "etc", f))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		h.Write([]byte(f + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// line is the entry of name in root's etc/file, or "".
func dbLine(t *testing.T, root, file, name string) string {
	t.Helper()
	var found string
	if err := eachLine(root, "/etc/"+file, 1, func(f []string) {
		if f[0] == name && found == "" {
			found = joinFields(f)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

func joinFields(f []string) string {
	out := f[0]
	for _, x := range f[1:] {
		out += ":" + x
	}
	return out
}
