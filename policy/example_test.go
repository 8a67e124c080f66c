package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRFCExample reproduces RFC 097's example: myapp includes base, and the
// merged lock has the RFC's merged run list and attributes. The committed
// locks must be what install writes (byte for byte).
func TestRFCExample(t *testing.T) {
	src := filepath.Join("..", "examples", "policy-includes")
	dir := t.TempDir()
	copyTree(t, src, dir)
	cache := filepath.Join(t.TempDir(), "cache")
	install(t, ws(t, filepath.Join(dir, "base"), cache), InstallOptions{})
	l := install(t, ws(t, filepath.Join(dir, "myapp"), cache), InstallOptions{})

	want := `{
  "run_list": ["recipe[base::default]", "recipe[mycookbook::default]"],
  "default_attributes": {
    "base_config": {"config_a": "12345", "config_b": "abc123"},
    "mycookbook": {"version": "1.7.0"}
  },
  "override_attributes": {}
}`
	got, _ := json.Marshal(map[string]any{"run_list": l.RunList, "default_attributes": l.DefaultAttributes, "override_attributes": l.OverrideAttributes})
	var a, b any
	json.Unmarshal([]byte(want), &a)
	json.Unmarshal(got, &b)
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	if !bytes.Equal(ab, bb) {
		t.Errorf("merged lock:\n%s\nwant:\n%s", bb, ab)
	}
	if v := l.CookbookLocks["base"].Version; v != "0.1.0" || l.CookbookLocks["mycookbook"].Version != "1.7.0" {
		t.Errorf("cookbook versions: base %s", v)
	}

	for _, p := range []string{"base", "myapp"} {
		committed, err := os.ReadFile(filepath.Join(src, p, LockFileName))
		if err != nil {
			t.Fatal(err)
		}
		fresh, _ := os.ReadFile(filepath.Join(dir, p, LockFileName))
		if !bytes.Equal(committed, fresh) {
			t.Errorf("examples/policy-includes/%s/%s is out of date: run toque install there", p, LockFileName)
		}
	}
}
