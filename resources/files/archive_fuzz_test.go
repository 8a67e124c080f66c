package files

import (
	"archive/tar"
	"bytes"
	"os"
	"path"
	"strings"
	"testing"
)

// FuzzReadArchive: whatever the bytes, reading an archive does not
// panic, and every name it lists stays inside destination: relative, no
// ".." component, no control character, every symbolic link's target
// inside, every hard link to a listed file.
func FuzzReadArchive(f *testing.F) {
	t := &testing.T{}
	f.Add(tarBytes(t, goodTar))
	f.Add(compress(t, "gz", tarBytes(t, goodTar)))
	f.Add(compress(t, "xz", tarBytes(t, goodTar)))
	f.Add(compress(t, "zst", tarBytes(t, goodTar)))
	f.Add(zipBytes(t, []zipEntry{{name: "a/b", body: "x"}, {name: "l", body: "a/b", mode: os.ModeSymlink | 0o777}}))
	f.Add(tarBytes(t, []tarEntry{{name: "d", typ: tar.TypeSymlink, link: "."}, {name: "e", typ: tar.TypeSymlink, link: "d/../x"}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, strip := range []int{0, 1} {
			l, err := readArchive(bytes.NewReader(data), int64(len(data)), archiveReadOptions{strip: strip, maxSize: 1 << 20}, nil)
			if err != nil {
				continue
			}
			for _, e := range l.entries {
				if e.name == "" || strings.HasPrefix(e.name, "/") || strings.ContainsAny(e.name, "\x00\n\\") {
					t.Fatalf("listed %q", e.name)
				}
				for _, c := range strings.Split(e.name, "/") {
					if c == ".." || c == "." || c == "" {
						t.Fatalf("listed %q", e.name)
					}
				}
				switch e.kind {
				case entrySymlink:
					if strings.HasPrefix(e.link, "/") || strings.HasPrefix(path.Clean(path.Join(path.Dir(e.name), e.link)), "..") {
						t.Fatalf("link %q -> %q leads out", e.name, e.link)
					}
				case entryHardlink:
					if x := l.byName[e.link]; x == nil || x.kind != entryFile {
						t.Fatalf("hard link %q to %q, not a listed file", e.name, e.link)
					}
				case entryFile:
					if len(e.sha) != 64 {
						t.Fatalf("file %q without its sha256", e.name)
					}
				}
			}
		}
	})
}
