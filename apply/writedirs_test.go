package apply

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckWriteDirs holds the lock phase's folder check alone: the
// folders apply writes in are created private when missing, and one that
// another user could write in is refused before anything changes.
func TestCheckWriteDirs(t *testing.T) {
	cases := []struct {
		name    string
		plant   func(t *testing.T, state string)
		refused string // the folder refused, "" when none is
	}{
		{"missing folders are created", func(*testing.T, string) {}, ""},
		{"existing private folders are kept", func(t *testing.T, state string) {
			mkdirMode(t, filepath.Join(state, "backup"), 0o700)
			mkdirMode(t, filepath.Join(state, "reports"), 0o700)
		}, ""},
		{"a world-writable backup folder", func(t *testing.T, state string) {
			mkdirMode(t, filepath.Join(state, "backup"), 0o777)
		}, "backup"},
		{"a reports folder that is a link", func(t *testing.T, state string) {
			symlink(t, t.TempDir(), filepath.Join(state, "reports"))
		}, "reports"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state")
			mkdirMode(t, path, 0o700)
			c.plant(t, path)
			state, err := OpenStateDir(path)
			if err != nil {
				t.Fatal(err)
			}
			defer state.Close()
			r := &run{state: state}

			err = r.checkWriteDirs()
			if c.refused != "" {
				mustUntrusted(t, err, filepath.Join(path, c.refused), "")
				return
			}
			if err != nil {
				t.Fatalf("checkWriteDirs: %v", err)
			}
			for _, name := range []string{"backup", "reports"} {
				fi, err := os.Lstat(filepath.Join(path, name))
				if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: %v, %v; want a 0700 directory", name, fi, err)
				}
			}
		})
	}
}
