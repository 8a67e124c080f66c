package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestLoadDirCollectsInOrder(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"b.hcl": `
file "/b1" {}
default "x" { y = 1 }
account "bob" { uid = 1 }
file "/b2" {
  action  = "delete"
  only_if = true
  not_if  = "test -e /x"
  notifies "touch" {
    resource = "file[/a]"
    timing   = "immediately"
  }
  subscribes "create" {
    resource = "file[/c]"
  }
}
`,
		"a.hcl": `file "/a" {}`,
		"c.hcl.json": `{
  "file": {"/c1": {"content": "x"}},
  "account": {"carol": {"uid": 2}},
  "default": {"z": {"k": "v"}},
  "file ": null
}`,
		".hidden.hcl":   `this is not even hcl {{{`,
		"notes.txt":     `file "/ignored" {}`,
		"sub/d.hcl":     `file "/d" {}`,
		"dir.hcl/x.hcl": `file "/e" {}`,
	})
	// c.hcl.json has a stray key: drop it to keep this case error-free.
	if err := os.WriteFile(filepath.Join(dir, "c.hcl.json"), []byte(`{
  "file": {"/c1": {"content": "x"}},
  "account": {"carol": {"uid": 2}},
  "default": {"z": {"k": "v"}}
}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := LoadDir(dir, testRegistry())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, r := range cfg.Resources {
		got = append(got, r.Address())
	}
	want := "file[/a] file[/b1] account[bob] file[/b2] file[/c1] account[carol]"
	if strings.Join(got, " ") != want {
		t.Errorf("collection = %s\nwant %s", strings.Join(got, " "), want)
	}
	var files []string
	for _, f := range cfg.Files {
		files = append(files, filepath.Base(f))
	}
	if strings.Join(files, " ") != "a.hcl b.hcl c.hcl.json" {
		t.Errorf("files = %v", files)
	}

	b2 := cfg.Resources[3]
	if b2.Meta.Action == nil || !b2.Meta.HasGuards() || b2.Meta.OnlyIf == nil || b2.Meta.NotIf == nil {
		t.Errorf("meta not split off: %+v", b2.Meta)
	}
	if b2.Meta.GuardInterpreter != nil || b2.Meta.Sensitive != nil {
		t.Errorf("absent meta arguments must be nil")
	}
	if len(b2.Meta.Notifies) != 1 || b2.Meta.Notifies[0].Action != "touch" || b2.Meta.Notifies[0].Timing == nil {
		t.Errorf("notifies = %+v", b2.Meta.Notifies)
	}
	if len(b2.Meta.Subscribes) != 1 || b2.Meta.Subscribes[0].Timing != nil {
		t.Errorf("subscribes = %+v", b2.Meta.Subscribes)
	}
	if cfg.Resources[0].Meta.HasGuards() {
		t.Error("file[/a] has no guards")
	}
	if b2.Dir != dir || b2.DeclRange.Start.Line != 5 || filepath.Base(b2.TypeRange.Filename) != "b.hcl" || b2.LabelRange.Start.Column != 6 {
		t.Errorf("ranges: dir %s decl %v type %v label %v", b2.Dir, b2.DeclRange, b2.TypeRange, b2.LabelRange)
	}
	// The remaining body holds no meta arguments.
	attrs, d := b2.Attributes()
	if d.HasErrors() || len(attrs) != 0 {
		t.Errorf("remaining body = %v %v", attrs, d)
	}
	// Attribute blocks are collected, not evaluated (package eval does).
	if len(cfg.AttributeBlocks) != 2 || cfg.AttributeBlocks[0].Name != "x" || cfg.AttributeBlocks[1].Name != "z" {
		t.Errorf("attribute blocks %+v", cfg.AttributeBlocks)
	}
}

func TestLoadDirErrors(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		want    []string // error summaries
		at      string   // file:line of the first error's subject
		detail  string   // a substring of the first error's detail
		nofiles bool
	}{
		{
			name:    "empty directory",
			files:   map[string]string{"README.md": "# no recipes"},
			want:    []string{"No recipe files"},
			nofiles: true,
		},
		{
			name: "duplicate resource across files",
			files: map[string]string{
				"a.hcl": "\n\nfile \"/x\" {}\n",
				"b.hcl": "file \"/y\" {}\nfile \"/x\" {\n  content = \"2\"\n}\n",
			},
			want:   []string{"Duplicate resource"},
			at:     "b.hcl:2",
			detail: "a.hcl:3",
		},
		{
			name:   "unknown type with suggestion",
			files:  map[string]string{"a.hcl": "fiel \"/x\" {}\n"},
			want:   []string{"Unknown resource type"},
			at:     "a.hcl:1",
			detail: `Did you mean "file"?`,
		},
		{
			name:   "unknown type in JSON",
			files:  map[string]string{"a.hcl.json": `{"acount": {"bob": {"uid": 1}}}`},
			want:   []string{"Unknown resource type"},
			at:     "a.hcl.json:1",
			detail: `Did you mean "account"?`,
		},
		{
			name:  "unknown type far from any",
			files: map[string]string{"a.hcl": "zzzzzz \"/x\" {}\n"},
			want:  []string{"Unknown resource type"},
		},
		{
			name:  "top-level attribute",
			files: map[string]string{"a.hcl": "port = 80\n"},
			want:  []string{"Unexpected attribute"},
			at:    "a.hcl:1",
		},
		{
			name:  "two labels",
			files: map[string]string{"a.hcl": "file \"/x\" \"/y\" {}\n"},
			want:  []string{"Wrong number of block labels"},
		},
		{
			name:  "no label",
			files: map[string]string{"a.hcl": "default {\n a = 1\n}\n"},
			want:  []string{"Wrong number of block labels"},
		},
		{
			name:  "syntax error",
			files: map[string]string{"a.hcl": "file \"/x\" {\n"},
			want:  []string{"Unclosed configuration block"},
		},
		{
			name:  "notifies without resource",
			files: map[string]string{"a.hcl": "file \"/x\" {\n  notifies \"touch\" {}\n}\n"},
			want:  []string{"Missing required argument"},
		},
		{
			name:   "notifies as an attribute, Chef style",
			files:  map[string]string{"a.hcl": "file \"/x\" {\n  notifies = [\"run\", \"execute[reload]\", \"delayed\"]\n}\n"},
			want:   []string{"Unsupported argument; notifies is a block"},
			at:     "a.hcl:2",
			detail: "notifies \"run\" {\n    resource = \"execute[reload]\"\n    timing   = \"delayed\"\n  }",
		},
		{
			name:   "notifies as a map attribute",
			files:  map[string]string{"a.hcl": "file \"/x\" {\n  notifies = { run = \"execute[nope]\" }\n}\n"},
			want:   []string{"Unsupported argument; notifies is a block"},
			at:     "a.hcl:2",
			detail: "notifies \"run\" {\n    resource = \"execute[nope]\"\n  }",
		},
		{
			name:   "subscribes as a string attribute",
			files:  map[string]string{"a.hcl": "file \"r\" {\n  content = \"x\"\n  subscribes = \"foo\"\n}\n"},
			want:   []string{"Unsupported argument; subscribes is a block"},
			at:     "a.hcl:3",
			detail: "subscribes \"ACTION\" {\n    resource = \"foo\"",
		},
		{
			name:   "notifies from an expression",
			files:  map[string]string{"a.hcl": "file \"/x\" {\n  notifies = node.n\n}\n"},
			want:   []string{"Unsupported argument; notifies is a block"},
			at:     "a.hcl:2",
			detail: "notifies \"ACTION\" {\n    resource = \"TYPE[NAME]\"",
		},
		{
			name: "every error at once",
			files: map[string]string{
				"a.hcl": "fiel \"/x\" {}\nport = 1\n",
				"b.hcl": "acount \"x\" {}\n",
			},
			want: []string{"Unexpected attribute", "Unknown resource type", "Unknown resource type"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDir(t, tc.files)
			cfg, diags := LoadDir(dir, testRegistry())
			got := summaries(diags)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("errors = %q, want %q\n%s", got, tc.want, diags)
			}
			if cfg == nil || cfg.Parser == nil {
				t.Fatal("LoadDir must return the config and its parser even on error")
			}
			if tc.at != "" {
				if at := rangeAt(t, diags[0]); at != tc.at {
					t.Errorf("at %s, want %s", at, tc.at)
				}
			}
			if tc.detail != "" && !strings.Contains(diags[0].Detail, tc.detail) {
				t.Errorf("detail %q does not mention %q", diags[0].Detail, tc.detail)
			}
		})
	}
}

func TestLoadDirMissing(t *testing.T) {
	_, diags := LoadDir(filepath.Join(t.TempDir(), "nope"), testRegistry())
	if got := summaries(diags); len(got) != 1 || got[0] != "Cannot read the recipe directory" {
		t.Errorf("errors = %q", got)
	}
}

func TestDiagnosticWriterShowsSnippets(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": "fiel \"/x\" {}\n"})
	cfg, diags := LoadDir(dir, testRegistry())
	var sb strings.Builder
	if err := cfg.DiagnosticWriter(&sb, 80, false).WriteDiagnostics(diags); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), `1: fiel "/x" {}`) {
		t.Errorf("no snippet in:\n%s", sb.String())
	}
}

func TestFormat(t *testing.T) {
	cases := []struct {
		name, src, want string
		errs            int
	}{
		{"aligns", "file \"/x\" {\ncontent = \"a\"\n  mode= \"0644\"\n}\n", "file \"/x\" {\n  content = \"a\"\n  mode    = \"0644\"\n}\n", 0},
		{"already formatted", "default \"a\" {\n  b = 1\n}\n", "default \"a\" {\n  b = 1\n}\n", 0},
		{"syntax error", "file \"/x\" {\n", "", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, diags := Format([]byte(tc.src), "x.hcl")
			if len(summaries(diags)) != tc.errs {
				t.Fatalf("diags = %s", diags)
			}
			if string(out) != tc.want {
				t.Errorf("Format = %q, want %q", out, tc.want)
			}
		})
	}
}

func TestInputsDigest(t *testing.T) {
	files := map[string]string{"a.hcl": `file "/a" {}`, "b.hcl": `file "/b" {}`}
	d1 := mustLoad(t, writeDir(t, files)).InputsDigest()
	d2 := mustLoad(t, writeDir(t, files)).InputsDigest()
	if d1 != d2 || !strings.HasPrefix(d1, "sha256:") || len(d1) != len("sha256:")+64 {
		t.Errorf("digests %s %s", d1, d2)
	}
	files["b.hcl"] = `file "/b" { content = "x" }`
	if d3 := mustLoad(t, writeDir(t, files)).InputsDigest(); d3 == d1 {
		t.Error("digest did not change with the content")
	}
	renamed := map[string]string{"a.hcl": `file "/a" {}`, "c.hcl": `file "/b" {}`}
	if d4 := mustLoad(t, writeDir(t, renamed)).InputsDigest(); d4 == d1 {
		t.Error("digest did not change with a file name")
	}
}

func mustLoad(t *testing.T, dir string) *Config {
	t.Helper()
	cfg, diags := LoadDir(dir, testRegistry())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg
}

var _ = hcl.Range{}
