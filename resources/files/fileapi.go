package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// WriteAtomic replaces path with content, atomically, with mode, through
// held directories that follow no link: owned by root when toque runs as
// root, else by toque's user. mkdir makes missing directories on the way
// (0755). For a type that writes a file of its own as part of its step
// (a repository's source list and keyring).
func WriteAtomic(path string, content []byte, mode uint32, mkdir bool) error {
	d, err := holdDir(filepath.Dir(path), mkdir)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer d.close()
	own := ownership{uid: -1, gid: -1}
	if os.Geteuid() == 0 {
		own = ownership{uid: 0, gid: 0}
	}
	nf, err := replaceAtomic(d, filepath.Base(path), content, mode, own)
	if err != nil {
		return err
	}
	return nf.Close()
}

// Remove removes the file at path, through held directories that follow
// no link, and syncs its directory; a path that does not exist (or whose
// directory does not) is not an error.
func Remove(path string) error {
	d, err := holdDir(filepath.Dir(path), false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	defer d.close()
	if err := unix.Unlinkat(d.fd, filepath.Base(path), 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return d.sync()
}

// DownloadOptions is one download of Download.
type DownloadOptions struct {
	// URL is the http or https URL; SHA256 the digest its bytes must have.
	URL, SHA256 string
	// MaxSize bounds the body, in bytes; Timeout the whole download.
	MaxSize int64
	Timeout time.Duration
	// AllowInternal lets the download connect to internal addresses
	// (loopback, link-local, private…), as remote_file's allow_internal
	// does; a redirect from an external address to an internal one is
	// refused even then.
	AllowInternal bool
}

// Download returns the bytes of o.URL whose sha256 is o.SHA256: from the
// content-addressed download cache in cacheDir, or downloaded into it,
// under remote_file's rules (TLS, redirects, internal addresses), and
// checked.
func Download(ctx context.Context, log hclog.Logger, cacheDir string, o DownloadOptions) ([]byte, error) {
	f, err := openCache(cacheDir)
	if err != nil {
		return nil, err
	}
	f.logger = log
	if _, err := f.fetch(ctx, fetchOptions{urls: []string{o.URL}, timeout: o.Timeout, maxSize: o.MaxSize, want: o.SHA256, allowInternal: o.AllowInternal}); err != nil {
		return nil, err
	}
	return readBlob(f, o.SHA256)
}
