package fleet

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Recipes is a recipe or policy directory as one tar archive, shipped to
// the hosts under its sha256. The archive is the same bytes for the same
// files wherever it is made: entries in lexical order, no owners, one
// fixed time, modes 0755 for directories and executables and 0644 for the
// rest. Hidden files and directories (.git) are left out; a symbolic link
// is followed to the file it names, and one to a directory is an error.
type Recipes struct {
	// Dir is the directory (absolute).
	Dir  string
	Data []byte
	// Digest is the hex sha256 of Data.
	Digest string
	Files  int
}

// MaxRecipes bounds a recipe directory's archive.
const MaxRecipes = 256 << 20

// bundleTime is every entry's time: a fixed one, so that the archive
// depends on content alone.
var bundleTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// PackRecipes archives dir.
func PackRecipes(dir string) (*Recipes, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		name := filepath.ToSlash(rel)
		st, err := os.Stat(p) // follows links
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 && st.IsDir() {
			return fmt.Errorf("%s is a symbolic link to a directory: toque fleet ships the files of the recipe directory, so copy it in", p)
		}
		hdr := &tar.Header{Name: name, ModTime: bundleTime, Format: tar.FormatPAX}
		switch {
		case st.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, name+"/", 0o755
			return tw.WriteHeader(hdr)
		case st.Mode().IsRegular():
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, st.Size()
			if st.Mode()&0o111 != 0 {
				hdr.Mode = 0o755
			}
		default:
			return fmt.Errorf("%s is not a regular file or a directory", p)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(tw, io.LimitReader(f, hdr.Size)); err != nil {
			return err
		}
		n++
		if buf.Len() > MaxRecipes {
			return fmt.Errorf("%s holds more than %d MiB: too much to ship to every host", dir, MaxRecipes>>20)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return &Recipes{Dir: dir, Data: buf.Bytes(), Digest: hex.EncodeToString(sum[:]), Files: n}, nil
}

// UnpackRecipes extracts a recipe archive into dir (which must exist and
// be empty), checking its digest first. Only directories and regular
// files are extracted, each strictly inside dir.
func UnpackRecipes(data []byte, digest, dir string) error {
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != digest {
		return fmt.Errorf("the recipe bundle does not match its digest %s: it was damaged in the cache", digest)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(hdr.Name)
		if name == "." || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("the recipe bundle holds %q, outside its directory", hdr.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fs.FileMode(hdr.Mode)&0o755)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, hdr.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("the recipe bundle holds %q, which is neither a file nor a directory", hdr.Name)
		}
	}
}
