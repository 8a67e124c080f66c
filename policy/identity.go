package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// CookbookFile is one file of a cookbook: its slash-separated path below
// the cookbook's root and the hex sha256 of its bytes.
type CookbookFile struct {
	Path     string `json:"path"`
	Checksum string `json:"checksum"`
}

// CookbookFiles lists a cookbook's files sorted by path, with checksums.
// Entries whose name starts with '.' (.git, editor files) are skipped.
// Symbolic links and other non-regular files are errors: a cookbook holds
// regular files and directories only, so it cannot point outside itself.
func CookbookFiles(dir string) ([]CookbookFile, error) {
	var out []CookbookFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: a cookbook holds regular files and directories only", filepath.ToSlash(rel))
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		out = append(out, CookbookFile{Path: filepath.ToSlash(rel), Checksum: sum})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading cookbook %s: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FilesIdentifier is the content identifier of a cookbook with these files:
// the hex sha256 over "PATH\x00CHECKSUM\n" for each file, sorted by path.
func FilesIdentifier(files []CookbookFile) string {
	sorted := append([]CookbookFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	h := sha256.New()
	for _, f := range sorted {
		io.WriteString(h, f.Path)
		h.Write([]byte{0})
		io.WriteString(h, f.Checksum)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CookbookIdentifier is the content identifier of the cookbook in dir.
func CookbookIdentifier(dir string) (string, error) {
	files, err := CookbookFiles(dir)
	if err != nil {
		return "", err
	}
	return FilesIdentifier(files), nil
}
