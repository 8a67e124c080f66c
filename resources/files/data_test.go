package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/resources"
)

// filesArgs decodes args as eval does.
func filesArgs(t *testing.T, args map[string]cty.Value) map[string]cty.Value {
	t.Helper()
	out := map[string]cty.Value{}
	for k, v := range args {
		p := filesSchema.Property(k)
		if p.Normalize != nil {
			nv, err := p.Normalize(v)
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			v = nv
		}
		if p.Validate != nil {
			if err := p.Validate(v); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
		}
		out[k] = v
	}
	return out
}

func readFiles(t *testing.T, args map[string]cty.Value) (cty.Value, error) {
	t.Helper()
	reads := resources.NewReads()
	defer reads.Close()
	ctx := resources.WithReads(context.Background(), reads)
	return FilesData().Read(ctx, &resources.DataRequest{Args: filesArgs(t, args)})
}

func TestFilesData(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"alice", "bob", "carol"} {
		if err := os.MkdirAll(filepath.Join(dir, "home", u), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTestFile(t, filepath.Join(dir, "home/alice/.netrc"), "machine x login a password hunter2\n", 0o600)
	writeTestFile(t, filepath.Join(dir, "home/bob/.netrc"), "\xff\xfe binary", 0o644)
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "home/carol/.netrc")); err != nil {
		t.Fatal(err)
	}
	glob := cty.StringVal(filepath.Join(dir, "home/*/.netrc"))
	missing := filepath.Join(dir, "home/dave/.netrc")

	v, err := readFiles(t, map[string]cty.Value{"glob": glob, "paths": cty.ListVal([]cty.Value{cty.StringVal(missing), cty.StringVal(dir + "/home/")})})
	if err != nil {
		t.Fatal(err)
	}
	if v.LengthInt() != 5 {
		t.Fatalf("%d entries: %s", v.LengthInt(), jsonString(t, v))
	}
	alice := v.Index(cty.StringVal(filepath.Join(dir, "home/alice/.netrc")))
	if alice.GetAttr("type").AsString() != "file" || alice.GetAttr("mode").AsString() != "0600" || !alice.GetAttr("exists").True() ||
		!alice.GetAttr("size").RawEquals(cty.NumberIntVal(35)) || !alice.GetAttr("content").IsNull() || !alice.GetAttr("sha256").IsNull() {
		t.Errorf("alice's .netrc, content not asked: %s", jsonString(t, alice))
	}
	carol := v.Index(cty.StringVal(filepath.Join(dir, "home/carol/.netrc")))
	if carol.GetAttr("type").AsString() != "symlink" || carol.GetAttr("target").AsString() != "/etc/shadow" {
		t.Errorf("a link is reported as the link: %s", jsonString(t, carol))
	}
	dave := v.Index(cty.StringVal(missing))
	if dave.GetAttr("exists").True() || !dave.GetAttr("type").IsNull() {
		t.Errorf("a missing path: %s", jsonString(t, dave))
	}
	if home := v.Index(cty.StringVal(dir + "/home")); home.GetAttr("type").AsString() != "directory" {
		t.Errorf("a path is cleaned, a directory is one: %s", jsonString(t, home))
	}

	v, err = readFiles(t, map[string]cty.Value{"glob": glob, "content": cty.True})
	if err != nil {
		t.Fatal(err)
	}
	alice = v.Index(cty.StringVal(filepath.Join(dir, "home/alice/.netrc")))
	if alice.GetAttr("content").AsString() != "machine x login a password hunter2\n" || len(alice.GetAttr("sha256").AsString()) != 64 {
		t.Errorf("content asked: %s", jsonString(t, alice))
	}
	bob := v.Index(cty.StringVal(filepath.Join(dir, "home/bob/.netrc")))
	if !bob.GetAttr("content").IsNull() || bob.GetAttr("sha256").IsNull() {
		t.Errorf("content that is not text: %s", jsonString(t, bob))
	}
	carol = v.Index(cty.StringVal(filepath.Join(dir, "home/carol/.netrc")))
	if !carol.GetAttr("content").IsNull() {
		t.Errorf("a link is followed for its content: %s", jsonString(t, carol))
	}

	_, err = readFiles(t, map[string]cty.Value{"glob": glob, "content": cty.True, "max_size": cty.NumberIntVal(10)})
	if err == nil || !strings.Contains(err.Error(), "more than max_size (10)") {
		t.Errorf("a file over max_size: %v", err)
	}
	if _, err := readFiles(t, map[string]cty.Value{}); err == nil || !strings.Contains(err.Error(), "give paths, glob, or both") {
		t.Errorf("nothing named: %v", err)
	}
	v, err = readFiles(t, map[string]cty.Value{"glob": cty.StringVal(filepath.Join(dir, "nowhere/*"))})
	if err != nil || !v.Type().IsMapType() || v.LengthInt() != 0 {
		t.Errorf("a pattern that matches nothing: %v %v", v, err)
	}
}

func TestFilesDataArguments(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		v    cty.Value
		want string
	}{
		{"paths", cty.ListVal([]cty.Value{cty.StringVal("etc/motd")}), "is not an absolute path"},
		{"glob", cty.StringVal("*.conf"), "is not an absolute path"},
		{"glob", cty.StringVal("/etc/[a"), "syntax error in pattern"},
		{"glob", cty.NumberIntVal(3), "glob must be a pattern, or a list of patterns"},
	} {
		_, err := filesSchema.Property(tc.arg).Normalize(tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s = %#v: %v, want %q", tc.arg, tc.v, err, tc.want)
		}
	}
	if got := FilesData().Describe(map[string]cty.Value{"glob": cty.ListVal([]cty.Value{cty.StringVal("/home/*/.netrc")}), "content": cty.True}); got != "stats what matches /home/*/.netrc, with the content of regular files" {
		t.Errorf("Describe = %q", got)
	}
}

func writeTestFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func jsonString(t *testing.T, v cty.Value) string {
	t.Helper()
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
