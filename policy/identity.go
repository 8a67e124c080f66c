package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// CookbookFile is one entry of a cookbook: a regular file, or a symbolic
// link when Link is set. Path is slash-separated below the cookbook's
// root. Checksum is the hex sha256 of a file's bytes, or of a link's
// target text.
type CookbookFile struct {
	Path     string `json:"path"`
	Checksum string `json:"checksum"`
	Link     string `json:"link,omitempty"`
}

// CookbookFiles lists a cookbook's entries sorted by path, with checksums.
//
// When dir itself is a symbolic link (cookbooks/web -> ../../shared/web),
// the directory it points to is read: a cookbook is its content, wherever
// it lives. Entries whose name starts with '.' (.git, editor files) are
// skipped. A symbolic link inside the cookbook is an entry of its own,
// hashed by its target text and never followed while hashing; its target
// must be relative and lead, once every link on the way is resolved, to an
// existing entry inside the cookbook that is not skipped, so everything a
// recipe reads through it is hashed under its own path. Any other link,
// and every special file, is an error.
func CookbookFiles(dir string) ([]CookbookFile, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("reading cookbook %s: %w", dir, err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("reading cookbook %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("reading cookbook %s: not a directory", dir)
	}
	var out []CookbookFile
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
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
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := checkLink(root, rel, target); err != nil {
				return err
			}
			out = append(out, CookbookFile{Path: rel, Checksum: textSHA256(target), Link: target})
		case d.Type().IsRegular():
			sum, err := fileSHA256(p)
			if err != nil {
				return err
			}
			out = append(out, CookbookFile{Path: rel, Checksum: sum})
		default:
			return fmt.Errorf("%s: a cookbook holds regular files, directories and links inside itself only", rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading cookbook %s: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// checkLink checks the link at rel (below root, which has no links in its
// own path) with target: relative, and leading to an existing entry inside
// root that the identifier covers.
func checkLink(root, rel, target string) error {
	if err := linkTargetInside(rel, target); err != nil {
		return err
	}
	resolved, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("%s: the link to %q leads nowhere inside the cookbook: %w", rel, target, err)
	}
	in, err := filepath.Rel(root, resolved)
	if err != nil || in == ".." || strings.HasPrefix(in, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s: the link to %q leads outside the cookbook (to %s)", rel, target, resolved)
	}
	if in == "." {
		return nil
	}
	for _, part := range strings.Split(filepath.ToSlash(in), "/") {
		if strings.HasPrefix(part, ".") {
			return fmt.Errorf("%s: the link to %q leads to %s, which the cookbook's identifier does not cover (names starting with '.' are left out)", rel, target, filepath.ToSlash(in))
		}
	}
	return nil
}

// linkTargetInside is the check a link can get before the tree around it
// exists: its target is relative, slash-separated, and does not climb
// above the cookbook's root when read from the link's directory.
func linkTargetInside(rel, target string) error {
	switch {
	case target == "":
		return fmt.Errorf("%s: a link with an empty target", rel)
	case path.IsAbs(target) || filepath.IsAbs(target) || strings.Contains(target, "\\"):
		return fmt.Errorf("%s: the link to %q is absolute; a link in a cookbook points inside it, with a relative target", rel, target)
	}
	c := path.Clean(path.Join(path.Dir(rel), target))
	if c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("%s: the link to %q leads outside the cookbook", rel, target)
	}
	return nil
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

func textSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// FilesIdentifier is the content identifier of a cookbook with these
// entries: the hex sha256 over, for each entry sorted by path,
// "PATH\x00CHECKSUM\n" for a file and "PATH\x00link:CHECKSUM\n" for a link
// (CHECKSUM being the sha256 of its target text).
func FilesIdentifier(files []CookbookFile) string {
	sorted := append([]CookbookFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	h := sha256.New()
	for _, f := range sorted {
		io.WriteString(h, f.Path)
		h.Write([]byte{0})
		if f.Link != "" {
			io.WriteString(h, "link:")
		}
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
