package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// cutSmall makes parseNative cut every file into pieces of about size
// bytes, for the duration of the test.
func cutSmall(t testing.TB, size int) {
	oldBytes, oldMin := chunkBytes, chunkMin
	chunkBytes, chunkMin = size, 0
	t.Cleanup(func() { chunkBytes, chunkMin = oldBytes, oldMin })
}

// sameParse checks that parseNative's result is the whole-file parse's:
// the same diagnostics, and the same body (every block, attribute,
// expression and range), or, when the whole file does not parse cleanly,
// the same diagnostics (parseNative then parses it whole).
func sameParse(t *testing.T, src []byte) {
	t.Helper()
	want, wantDiags := hclsyntax.ParseConfig(src, "x.hcl", hcl.Pos{Line: 1, Column: 1, Byte: 0})
	got, gotDiags := parseNative(src, "x.hcl")
	if len(gotDiags) != len(wantDiags) {
		t.Fatalf("diagnostics: got %v, want %v\nsource:\n%s", gotDiags, wantDiags, src)
	}
	for i := range wantDiags {
		if gotDiags[i].Error() != wantDiags[i].Error() {
			t.Fatalf("diagnostic %d: got %v, want %v\nsource:\n%s", i, gotDiags[i], wantDiags[i], src)
		}
	}
	if !reflect.DeepEqual(got.Body, want.Body) {
		t.Fatalf("the pieces' body is not the whole file's\nsource:\n%s", src)
	}
	if string(got.Bytes) != string(src) {
		t.Fatalf("the file's bytes are not the source")
	}
}

func TestChunkedParseIsTheWholeFileParse(t *testing.T) {
	cutSmall(t, 8)
	cases := map[string]string{
		"blocks":             "file \"/a\" {\n  content = \"a\"\n}\n\nfile \"/b\" {\n  content = \"${node.x.y}\\n\"\n  mode = \"0644\"\n}\n\n# comment\nexecute \"c\" {\n  command = \"true\"\n}\n",
		"no final newline":   "file \"/a\" {\n}\nfile \"/b\" {\n}",
		"nested at column 1": "file \"/a\" {\n  notifies \"x\" {\n    resource = \"execute[y]\"\n}\n}\nfile \"/b\" {\n}\n",
		"heredoc":            "file \"/a\" {\n  content = <<EOT\n}\nfile \"/z\" {\n}\nEOT\n}\nfile \"/b\" {\n}\n",
		"comment":            "file \"/a\" {\n}\n/*\n}\nfile \"/z\" {\n}\n*/\nfile \"/b\" {\n}\n",
		"top attribute":      "file \"/a\" {\n}\nx = 1\n}\nx = 2\nfile \"/b\" {\n}\n",
		"broken later":       "file \"/a\" {\n}\nfile \"/b\" {\n}\nfile {\n}\n",
		"crlf":               "file \"/a\" {\r\n}\r\nfile \"/b\" {\r\n}\r\n",
		"unicode":            "file \"/é\" {\n  content = \"naïve ☃ e\u0301\"\n}\nfile \"/b\" {\n  content = \"🏳️‍🌈\"\n}\n",
		"string":             "file \"/a\" {\n  content = \"${\n}\nfile \"/z\" {\n}\n\"\n}\nfile \"/b\" {\n}\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) { sameParse(t, []byte(src)) })
	}
	// The clean ones were cut, and their pieces parsed by fastParse.
	for _, name := range []string{"blocks", "no final newline"} {
		src := []byte(cases[name])
		cuts := cutPoints(src, chunkBytes)
		for _, c := range cuts {
			segs, _ := fastParse(src, "x.hcl", c.off, c.end, c.line)
			if len(cuts) < 2 || len(segs) != 1 || segs[0].blocks == nil {
				t.Errorf("%s: %d pieces, segments %+v; want several pieces, each all fastParse's", name, len(cuts), segs)
			}
		}
	}
}

// TestChunkedParseOfTheRepositorysRecipes compares the two parses on every
// .hcl file of the repository, cut small.
func TestChunkedParseOfTheRepositorysRecipes(t *testing.T) {
	cutSmall(t, 16)
	n := 0
	filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".hcl") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		n++
		t.Run(path, func(t *testing.T) { sameParse(t, src) })
		return nil
	})
	if n < 10 {
		t.Fatalf("found %d recipe files; is the test running in config/?", n)
	}
}

// TestChunkedParseCutsLargeFiles checks that a large file is cut at all,
// at the default sizes.
func TestChunkedParseCutsLargeFiles(t *testing.T) {
	var b strings.Builder
	for b.Len() < 2*chunkMin {
		b.WriteString("file \"/srv/f\" {\n  content = \"hello\\n\"\n  mode    = \"0644\"\n}\n\n")
	}
	if cuts := cutPoints([]byte(b.String()), chunkBytes); len(cuts) < 4 {
		t.Fatalf("a %d-byte file is cut into %d pieces", b.Len(), len(cuts))
	}
	t.Run("same", func(t *testing.T) { sameParse(t, []byte(b.String())) })
}

// FuzzChunkedParse: for any input, parsing in pieces gives the whole-file
// parse.
func FuzzChunkedParse(f *testing.F) {
	f.Add("file \"/a\" {\n}\nfile \"/b\" {\n  content = \"x\"\n}\n", 4)
	f.Add("file \"/a\" {\n  content = <<EOT\n}\nEOT\n}\nfile \"/b\" {\n}\n", 2)
	f.Add("a {\n}\n/*\n}\n*/\nb {\n}\n", 1)
	f.Add("a \"x\" {\n b = \"${\n}\n\"\n}\nc {\n}\n", 3)
	f.Fuzz(func(t *testing.T, src string, size int) {
		if size < 1 || size > 1<<16 || len(src) > 1<<16 {
			return
		}
		cutSmall(t, size)
		if CheckSource([]byte(src), "x.hcl", false) != nil {
			return // too deep for hcl's recursive parser
		}
		sameParse(t, []byte(src))
	})
}
