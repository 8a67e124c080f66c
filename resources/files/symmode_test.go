package files

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// TestSymbolicModeApply: each symbolic mode gives, from each starting
// mode, what chmod gives (GNU coreutils' mode_adjust), for files and
// directories.
func TestSymbolicModeApply(t *testing.T) {
	cases := []struct {
		mode      string
		from      uint32
		file, dir uint32
	}{
		{"go-w", 0o775, 0o755, 0o755},
		{"go-w", 0o644, 0o644, 0o644},
		{"u=rwx,g=rx,o=", 0o666, 0o750, 0o750},
		{"u=rwx,g=rx,o=", 0o1777, 0o750, 0o750}, // o= clears the sticky bit
		{"a+X", 0o644, 0o644, 0o755},
		{"a+X", 0o744, 0o755, 0o755},
		{"a+x", 0o644, 0o755, 0o755},
		{"og-rwx", 0o755, 0o700, 0o700},
		{"a=r", 0o777, 0o444, 0o444},
		{"u+s", 0o755, 0o4755, 0o4755},
		{"g+s", 0o755, 0o2755, 0o2755},
		{"o+t", 0o777, 0o1777, 0o1777},
		{"a+t", 0o777, 0o1777, 0o1777},
		{"u+t", 0o777, 0o777, 0o777},    // t is for o and a only
		{"o+s", 0o777, 0o777, 0o777},    // s is for u and g only
		{"g=rx", 0o2775, 0o755, 0o2755}, // = keeps a directory's setgid unless it names it
		{"g=rxs", 0o775, 0o2755, 0o2755},
		{"g=u", 0o740, 0o770, 0o770},
		{"o=g", 0o754, 0o755, 0o755},
		{"u+r-w", 0o200, 0o400, 0o400},
		{"ug+rw,o-rwx", 0o007, 0o660, 0o660},
		{"a-rwx,u+rw", 0o777, 0o600, 0o600},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s from %04o", c.mode, c.from), func(t *testing.T) {
			m, err := parseSymbolicMode(c.mode)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.apply(c.from, false); got != c.file {
				t.Errorf("file: %04o, want %04o", got, c.file)
			}
			if got := m.apply(c.from, true); got != c.dir {
				t.Errorf("directory: %04o, want %04o", got, c.dir)
			}
		})
	}
}

// TestSymbolicModeMatchesChmod compares with the real chmod on real files
// and directories, when there is one.
func TestSymbolicModeMatchesChmod(t *testing.T) {
	chmod, err := exec.LookPath("chmod")
	if err != nil {
		t.Skip("no chmod to compare with")
	}
	dir := t.TempDir()
	modes := []string{"go-w", "u=rwx,g=rx,o=", "a+X", "g=rx", "g=u", "o=g", "u+s,g+s", "a-x", "ug=rw,o=r", "a+X,o-r"}
	for _, from := range []uint32{0o644, 0o755, 0o2775, 0o700, 0o1777, 0o640} {
		for _, isDir := range []bool{false, true} {
			for _, mode := range modes {
				p := filepath.Join(dir, "x")
				os.RemoveAll(p)
				if isDir {
					if err := os.Mkdir(p, 0o700); err != nil {
						t.Fatal(err)
					}
				} else if err := os.WriteFile(p, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := exec.Command(chmod, fmt.Sprintf("%o", from), p).CombinedOutput(); err != nil {
					t.Fatalf("chmod: %v %s", err, out)
				}
				if out, err := exec.Command(chmod, mode, p).CombinedOutput(); err != nil {
					t.Fatalf("chmod %s: %v %s", mode, err, out)
				}
				want := resourcetest.PermOf(t, p)
				m, err := parseSymbolicMode(mode)
				if err != nil {
					t.Fatal(err)
				}
				if got := m.apply(from, isDir); got != want {
					t.Errorf("%s on %04o (directory %v): %04o, chmod gives %04o", mode, from, isDir, got, want)
				}
			}
		}
	}
}

// TestSymbolicModeBadInput: what chmod would not take, or would take
// with the umask, is an error that says why.
func TestSymbolicModeBadInput(t *testing.T) {
	cases := map[string]string{
		"+x":        "does not say whom it is for",
		"=r":        "does not say whom it is for",
		"u":         "has no operator",
		"u+z":       "not a permission",
		"u+r,,g+r":  "empty clause",
		"u+r,":      "empty clause",
		"rw-r--r--": "does not say whom it is for",
		"0648":      "not an octal number",
		"ux":        "is not an operator",
		"u=g+":      "",
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			_, err := NormalizeMode(cty.StringVal(in))
			if want == "" {
				if err != nil {
					t.Fatalf("NormalizeMode(%q): %v", in, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("NormalizeMode(%q) = %v, want an error containing %q", in, err, want)
			}
		})
	}
	v, err := NormalizeMode(cty.StringVal(" go-w "))
	if err != nil || v.AsString() != "go-w" {
		t.Fatalf("a symbolic mode is kept as written, trimmed: %#v %v", v, err)
	}
}

// TestSymbolicModePlanned: a symbolic mode is planned as the absolute
// mode it makes of the live one (or of the default on create), the
// change says where it came from, and apply sets that mode; once there,
// the resource is a no-op.
func TestSymbolicModePlanned(t *testing.T) {
	env := resourcetest.TestEnv(t)
	dir := t.TempDir()
	ft, dt := FileType(), DirectoryType()

	f := filepath.Join(dir, "f")
	resourcetest.WriteFile(t, f, "x\n", 0o775)
	r := resourcetest.NewRes(t, ft, "", map[string]any{"path": f, "mode": "go-w"})
	_, step := resourcetest.Plan(t, ft, r)
	c := step.Change("mode")
	if step.Kind != resources.Update || c == nil || c.Before.AsString() != "0775" || c.After.AsString() != "0755" || c.Note != "go-w, applied to 0775" {
		t.Fatalf("step %+v, change %+v", step, c)
	}
	if !r.Schema().Property("mode").Equals(r.Values["mode"], cty.StringVal("go-w")) || r.Schema().Property("mode").Equals(r.Values["mode"], c.After) {
		t.Fatal("the symbolic value must differ from the absolute one it plans (so the plan records the planned mode)")
	}
	resourcetest.Apply(t, ft, env, r, resources.Update)
	if got := resourcetest.PermOf(t, f); got != 0o755 {
		t.Fatalf("mode %04o", got)
	}

	// Content and a symbolic mode: the new inode gets the resolved mode.
	resourcetest.WriteFile(t, f, "x\n", 0o666)
	r = resourcetest.NewRes(t, ft, "", map[string]any{"path": f, "mode": "u=rw,go=r", "content": "y\n"})
	resourcetest.Apply(t, ft, env, r, resources.Update)
	if got := resourcetest.PermOf(t, f); got != 0o644 || resourcetest.ReadFile(t, f) != "y\n" {
		t.Fatalf("mode %04o", got)
	}
	// Satisfied already: no change of mode, whatever the content does.
	r = resourcetest.NewRes(t, ft, "", map[string]any{"path": f, "mode": "go-w", "content": "z\n"})
	_, step = resourcetest.Plan(t, ft, r)
	if step.Change("mode") != nil {
		t.Fatalf("go-w on 0644 changes nothing: %+v", step.Changes)
	}
	resourcetest.Apply(t, ft, env, r, resources.Update)
	if got := resourcetest.PermOf(t, f); got != 0o644 {
		t.Fatalf("mode %04o", got)
	}

	// Created: relative to the default.
	n := filepath.Join(dir, "new")
	r = resourcetest.NewRes(t, ft, "", map[string]any{"path": n, "mode": "u=rwx,g=rx,o="})
	_, step = resourcetest.Plan(t, ft, r)
	if c := step.Change("mode"); c == nil || c.After.AsString() != "0750" || c.Default || c.Note != "u=rwx,g=rx,o=, applied to the default 0644" {
		t.Fatalf("create: %+v", step.Changes)
	}
	resourcetest.Apply(t, ft, env, r, resources.Create)
	if got := resourcetest.PermOf(t, n); got != 0o750 {
		t.Fatalf("created with %04o", got)
	}

	// Directories: X is an execute bit, a default of 0755.
	d := filepath.Join(dir, "d")
	r = resourcetest.NewRes(t, dt, "", map[string]any{"path": d, "mode": "a=rX"})
	resourcetest.Apply(t, dt, env, r, resources.Create)
	if got := resourcetest.PermOf(t, d); got != 0o555 {
		t.Fatalf("directory created with %04o", got)
	}
	if err := syscall.Chmod(d, 0o2777); err != nil { // os.Chmod drops 02000
		t.Fatal(err)
	}
	r = resourcetest.NewRes(t, dt, "", map[string]any{"path": d, "mode": "o-w,g=rwx"})
	resourcetest.Apply(t, dt, env, r, resources.Update)
	if got := resourcetest.PermOf(t, d); got != 0o2775 {
		t.Fatalf("directory updated to %04o, want 02775 (setgid kept, as chmod keeps it)", got)
	}
}

// TestSymbolicModeRemoteFile: remote_file resolves a symbolic mode as
// file does, against the default on create and the live mode after.
func TestSymbolicModeRemoteFile(t *testing.T) {
	srv := newRFServer(t, "hello\n")
	e := newRFEnv(t, srv.URL)
	r := e.res("f", "", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/file"), "mode": cty.StringVal("u=rw,g=r,o=")})
	_, step := e.mustPlan(r, resources.Create)
	if c := step.Change("mode"); c == nil || c.After.AsString() != "0640" {
		t.Fatalf("create: %+v", step.Changes)
	}
	if err := e.apply(r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dir, "f")
	if got := resourcetest.PermOf(t, path); got != 0o640 {
		t.Fatalf("created with %04o", got)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	r = e.res("f", "", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/file"), "mode": cty.StringVal("go-w")})
	_, step = e.mustPlan(r, resources.Update)
	if c := step.Change("mode"); c == nil || c.After.AsString() != "0644" || len(step.Changes) != 1 {
		t.Fatalf("update: %+v", step.Changes)
	}
	if err := e.apply(r); err != nil {
		t.Fatal(err)
	}
	if got := resourcetest.PermOf(t, path); got != 0o644 {
		t.Fatalf("updated to %04o", got)
	}
}
