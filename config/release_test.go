package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/hashicorp/hcl/v2"
)

// TestReleaseSyntaxKeepsWhatPlanningReads: after ReleaseSyntax a block
// still says where its attributes are, and a file still has its bytes and
// says which block an offset is in; nothing holds the trees any more.
func TestReleaseSyntaxKeepsWhatPlanningReads(t *testing.T) {
	dir := t.TempDir()
	src := "# site\nfile \"/srv/a\" {\n  content = \"a\"\n  mode    = \"0644\"\n}\n\nexecute \"x\" {\n  command = \"true\"\n  notifies \"run\" {\n    resource = \"file[/srv/a]\"\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "site.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	c, diags := LoadDir(dir, builtin.Registry())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	type where struct {
		rng hcl.Range
		ok  bool
	}
	before := map[string]where{}
	for _, b := range c.Resources {
		for _, name := range []string{"content", "mode", "command", "missing"} {
			r, ok := b.AttributeRange(name)
			before[b.Address()+name] = where{r, ok}
		}
	}
	// A block with notifies blocks says where its attributes are too.
	if w := before["execute[x]command"]; !w.ok || w.rng.Start.Line != 8 {
		t.Errorf("execute[x] command at %v %v, want line 8", w.rng, w.ok)
	}
	f := c.Parser.Files()[filepath.Join(dir, "site.hcl")]
	offset := len("# site\nfile \"/srv/a\" {\n  con")
	wantContext := f.Nav.(interface{ ContextString(int) string }).ContextString(offset)

	c.ReleaseSyntax()
	for _, b := range c.Resources {
		if b.Body != nil || b.Meta.Notifies != nil {
			t.Errorf("%s still holds its syntax", b.Address())
		}
		if attrs, _ := b.Attributes(); attrs != nil {
			t.Errorf("%s: Attributes after release: %v", b.Address(), attrs)
		}
		for _, name := range []string{"content", "mode", "command", "missing"} {
			r, ok := b.AttributeRange(name)
			if w := before[b.Address()+name]; w.rng != r || w.ok != ok {
				t.Errorf("%s %s: range %v %v after release, %v %v before", b.Address(), name, r, ok, w.rng, w.ok)
			}
		}
	}
	if string(f.Bytes) != src {
		t.Errorf("the file's bytes changed")
	}
	if got := f.Nav.(interface{ ContextString(int) string }).ContextString(offset); got != wantContext || got == "" {
		t.Errorf("context after release %q, before %q", got, wantContext)
	}
}
