//go:build unix

package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
)

// Steps: one function extracts what the step's reading decides
// (decide), for a create (destination made first) as for an update.
func (t *archiveFileType) Steps() resources.Steps { return resources.Same(t.extract) }

// extract copies the archive into the content-addressed cache (checking
// it is the planned sha256), then writes, from that copy, exactly the
// entries decide lists: files as they stream by (each a temporary file
// renamed into place, checked against the planned sha256), then
// directories, links and hard links; directories made get their modes
// last (until then 0700: no one else enters them while they fill). It
// reaches every name through held directories, never following a link
// below destination, and replaces only the inode the reading found.
func (t *archiveFileType) extract(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	path, dest := desired.String("path"), desired.String("destination")
	rd := readingOf(current)
	if v := current.Values["archive"]; rd == nil || rd.listing == nil || v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return fmt.Errorf("extracting %s: the archive was not read (a bug in archive_file)", path)
	}
	x, err := decide(rd, dest)
	if err != nil {
		return err
	}
	sha := current.Values["archive"].AsString()
	blob, size, err := t.archiveCopy(ctx, path, sha)
	if err != nil {
		return err
	}
	defer blob.Close()
	if !current.Exists {
		mode, _, err := modeBits(desired.Get("mode"))
		if err != nil {
			return err
		}
		made, err := MakeDir(dest, mode, rd.uid, rd.gid)
		if err != nil {
			return err
		}
		if !made {
			return fmt.Errorf("making %s: a directory appeared there: %w", dest, ErrChanged)
		}
	}
	root, err := holdDir(dest, false)
	if err != nil {
		return fmt.Errorf("extracting into %s: %w", dest, err)
	}
	w := &belowWalk{root: root, dirs: map[string]*belowDir{"": {d: root}}, mkdir: true}
	defer func() {
		w.close()
		root.close()
	}()
	ex := &extractor{rd: rd, w: w, dest: dest, writes: map[string]bool{}}
	for _, e := range x.writes {
		ex.writes[e.name] = true
	}
	visit := func(e *archiveEntry, body io.Reader) (string, error) {
		if err := ctx.Err(); err != nil {
			return "", &writeError{err}
		}
		planned := rd.listing.byName[e.name]
		if !ex.writes[e.name] || planned == nil {
			return planned.shaOrEmpty(), nil
		}
		return ex.writeFile(planned, e, body)
	}
	if _, err := readArchive(blob, size, rd.opts.read, visit); err != nil {
		return fmt.Errorf("extracting %s into %s: %w; what was written so far stays", path, dest, err)
	}
	if err := ex.finish(x); err != nil {
		return fmt.Errorf("extracting %s into %s: %w; what was written so far stays", path, dest, err)
	}
	env.Log().Debug("extracted", "archive", path, "destination", dest, "written", len(x.writes))
	return nil
}

func (e *archiveEntry) shaOrEmpty() string {
	if e == nil {
		return ""
	}
	return e.sha
}

// archiveCopy is the cache's copy of the archive whose sha256 is sha:
// the one there, or one made now from path, refused unless it has that
// sha256 (the archive changed since it was read).
func (t *archiveFileType) archiveCopy(ctx context.Context, path, sha string) (*os.File, int64, error) {
	c, err := openCache(t.cacheDir(ctx))
	if err != nil {
		return nil, 0, err
	}
	if _, ok := c.cached(sha); !ok {
		af, err := lookupPath(path, true)
		if err != nil {
			return nil, 0, fmt.Errorf("reading the archive %s: %w", path, err)
		}
		defer af.close()
		if !af.exists {
			return nil, 0, fmt.Errorf("the archive %s is gone: %w", path, ErrChanged)
		}
		f, _, err := openAt(af.dir, af.name, unix.O_RDONLY, unix.S_IFREG, fileID{})
		if err != nil {
			return nil, 0, fmt.Errorf("reading the archive %s: %w", path, err)
		}
		got, _, err := c.store(f, 1<<50)
		f.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("copying the archive %s into the cache: %w", path, err)
		}
		if got != sha {
			return nil, 0, fmt.Errorf("the archive %s has sha256 %s now, not the %s the plan read: %w", path, got, sha, ErrChanged)
		}
	}
	blob, err := os.Open(c.blob(sha))
	if err != nil {
		return nil, 0, err
	}
	fi, err := blob.Stat()
	if err != nil {
		blob.Close()
		return nil, 0, err
	}
	return blob, fi.Size(), nil
}

// extractor writes entries below a destination.
type extractor struct {
	rd     *archiveReading
	w      *belowWalk
	dest   string
	writes map[string]bool
}

// parent is the held directory name is in, made when missing.
func (ex *extractor) parent(name string) (*heldDir, string, error) {
	dir, base := path.Split(name)
	bd, err := ex.w.dir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return nil, "", &writeError{err}
	}
	if bd.blocked != "" {
		return nil, "", &writeError{fmt.Errorf("%s, on the way to %s: %w", bd.blocked, name, ErrChanged)}
	}
	return bd.d, base, nil
}

// ownership is what extraction gives e: the recipe's owner and group,
// else the archive's with the owner option, else toque's (-1).
func (ex *extractor) ownership(e *archiveEntry) ownership {
	o := ownership{uid: -1, gid: -1}
	if ex.rd.opts.archiveOwner {
		o = ownership{uid: e.uid, gid: e.gid}
	}
	if ex.rd.uid >= 0 {
		o.uid = ex.rd.uid
	}
	if ex.rd.gid >= 0 {
		o.gid = ex.rd.gid
	}
	return o
}

// place renames tmp to name in d: over the inode the reading found there,
// or, where it found nothing, only if nothing is there still.
func (ex *extractor) place(d *heldDir, tmp, name, rel string) error {
	le := ex.rd.live[rel]
	if le.exists() {
		st, exists, err := statAt(d, name)
		if err != nil {
			return err
		}
		if !exists || idOf(&st) != le.id {
			return fmt.Errorf("%s is another object than the one read: %w", d.join(name), ErrChanged)
		}
	}
	err := renameAt(d, tmp, name, !le.exists())
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s appeared since it was read: %w", d.join(name), ErrChanged)
	}
	return err
}

// writeFile writes the file planned (from the stream's entry e and its
// body), refusing bytes other than the planned ones.
func (ex *extractor) writeFile(planned, e *archiveEntry, body io.Reader) (_ string, err error) {
	ex.w.trim()
	d, name, err := ex.parent(planned.name)
	if err != nil {
		return "", err
	}
	tmp, tmpName, err := createTemp(d, name)
	if err != nil {
		return "", &writeError{err}
	}
	defer func() {
		if err != nil {
			tmp.Close()
			unix.Unlinkat(d.fd, tmpName, 0)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(body, planned.size+1))
	if err != nil {
		return "", err // a read error is the archive's; a write error names the file
	}
	sha := hex.EncodeToString(h.Sum(nil))
	if n != planned.size || sha != planned.sha {
		return "", &writeError{fmt.Errorf("%s: the archive's bytes hash to %s, not the planned %s", d.join(name), sha, planned.sha)}
	}
	if err := ex.attrs(tmp, planned, e); err != nil {
		return "", &writeError{err}
	}
	if err := tmp.Close(); err != nil {
		return "", &writeError{err}
	}
	if err := ex.setTime(d, tmpName, planned); err != nil {
		return "", &writeError{err}
	}
	if err := ex.place(d, tmpName, name, planned.name); err != nil {
		return "", &writeError{err}
	}
	return sha, nil
}

// attrs sets the owner, then the mode (chown clears setuid), of f.
func (ex *extractor) attrs(f *os.File, planned, e *archiveEntry) error {
	if err := chownFile(f, ex.ownership(e)); err != nil {
		return err
	}
	return chmodFile(f, planned.mode)
}

// setTime gives name in d the archive's modification time, with the
// time option.
func (ex *extractor) setTime(d *heldDir, name string, e *archiveEntry) error {
	if !ex.rd.opts.time || e.mtime.IsZero() {
		return nil
	}
	ts := unix.NsecToTimespec(e.mtime.UnixNano())
	if err := unix.UtimesNanoAt(d.fd, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("setting the time of %s: %w", d.join(name), err)
	}
	return nil
}

// finish makes the directories and links planned, then gives the
// directories made their modes, owners and times, deepest first.
func (ex *extractor) finish(x *extraction) error {
	for _, e := range x.writes {
		ex.w.trim()
		var err error
		switch e.kind {
		case entryDir:
			_, _, err = ex.parent(e.name + "/.")
		case entrySymlink:
			err = ex.writeLink(e, func(d *heldDir, tmp string) error { return unix.Symlinkat(e.link, d.fd, tmp) })
		case entryHardlink:
			err = ex.writeLink(e, func(d *heldDir, tmp string) error {
				td, tname, err := ex.parent(e.link)
				if err != nil {
					return err
				}
				return unix.Linkat(td.fd, tname, d.fd, tmp, 0)
			})
		}
		if err != nil {
			return err
		}
	}
	made := slices.Clone(ex.w.made)
	slices.SortFunc(made, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, rel := range made {
		ex.w.trim()
		e := ex.rd.listing.byName[rel]
		if e == nil {
			continue
		}
		d, name, err := ex.parent(rel)
		if err != nil {
			return err
		}
		f, _, err := openAt(d, name, unix.O_RDONLY, unix.S_IFDIR, fileID{})
		if err != nil {
			return err
		}
		err = ex.attrs(f, e, e)
		f.Close()
		if err == nil {
			err = ex.setTime(d, name, e)
		}
		if err != nil {
			return err
		}
	}
	if fd, err := unix.Openat(ex.w.root.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		syncFS(fd)
		unix.Close(fd)
	}
	return nil
}

// writeLink makes a link (make makes it at a temporary name in its
// directory) and names it e.name.
func (ex *extractor) writeLink(e *archiveEntry, make func(d *heldDir, tmp string) error) error {
	d, name, err := ex.parent(e.name)
	if err != nil {
		return err
	}
	tmp := tempName(name, "link")
	if err := removeLeftover(d, tmp); err != nil {
		return err
	}
	if err := make(d, tmp); err != nil {
		return fmt.Errorf("making %s: %w", d.join(name), err)
	}
	if o := ex.ownership(e); e.kind == entrySymlink && !o.none() {
		if err := unix.Fchownat(d.fd, tmp, o.uid, o.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			unix.Unlinkat(d.fd, tmp, 0)
			return fmt.Errorf("setting the owner of %s: %w", d.join(name), err)
		}
	}
	if e.kind == entrySymlink {
		if err := ex.setTime(d, tmp, e); err != nil {
			unix.Unlinkat(d.fd, tmp, 0)
			return err
		}
	}
	if err := ex.place(d, tmp, name, e.name); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return err
	}
	return nil
}
