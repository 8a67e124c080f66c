//go:build unix

package files

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources/internal/props"
)

// liveEntry is what destination holds at one name of the archive.
type liveEntry struct {
	kind     string // "" when nothing is there; entryDir, entryFile, entrySymlink, or another kind ("fifo")
	mode     uint32
	uid, gid uint32
	size     int64
	sha      string // a file's sha256, when read
	link     string
	mtime    time.Time
	id       fileID
	// blocked says what on the way to it is not a directory (a symbolic
	// link, a file): nothing is extracted through it.
	blocked string
}

func (le *liveEntry) exists() bool { return le != nil && le.kind != "" }

// readLive reads what dest holds at each name of l, reaching every name
// from dest through held directories that follow no link at all below
// dest. With content, a file of the same size as the archive's is hashed
// (overwrite compares contents).
func readLive(dest string, l *archiveListing, content bool) (map[string]*liveEntry, error) {
	root, err := holdDir(dest, false)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dest, err)
	}
	w := &belowWalk{root: root, dirs: map[string]*belowDir{"": {d: root}}}
	defer func() {
		w.close()
		root.close()
	}()
	live := make(map[string]*liveEntry, len(l.entries))
	for _, e := range l.entries {
		w.trim()
		le := &liveEntry{}
		live[e.name] = le
		dir, name := path.Split(e.name)
		bd, err := w.dir(strings.TrimSuffix(dir, "/"))
		if err != nil {
			return nil, err
		}
		if bd.blocked != "" {
			le.blocked = bd.blocked
			continue
		}
		if bd.d == nil {
			continue // a directory on the way is missing
		}
		st, exists, err := statAt(bd.d, name)
		if err != nil || !exists {
			if err != nil {
				return nil, err
			}
			continue
		}
		le.kind = kindOf(uint32(st.Mode))
		le.mode, le.uid, le.gid = uint32(st.Mode)&MaxMode, st.Uid, st.Gid
		le.size, le.id = st.Size, idOf(&st)
		le.mtime = time.Unix(st.Mtim.Unix())
		switch le.kind {
		case "symlink":
			le.kind = entrySymlink
			if le.link, err = readlinkAt(bd.d, name); err != nil {
				return nil, err
			}
		case entryFile:
			if st.Nlink > 1 && bd.replaceable() {
				// A name another user may have given a file they may not
				// read (/etc/shadow): not read, so it differs.
				continue
			}
			if content && e.kind != entryDir && st.Size == e.size {
				if le.sha, err = hashAt(bd.d, name, le.id); err != nil {
					return nil, err
				}
			}
		}
	}
	return live, nil
}

// hashAt is the sha256 of the file name in d (the inode id).
func hashAt(d *heldDir, name string, id fileID) (string, error) {
	f, _, err := openAt(d, name, unix.O_RDONLY, unix.S_IFREG, id)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// belowWalk holds the directories below a root, reached one component at
// a time with O_NOFOLLOW: a symbolic link, or anything else that is not a
// directory, blocks what is below it; mkdir makes what is missing (mode
// 0700 until the extraction sets its mode).
type belowWalk struct {
	root  *heldDir
	dirs  map[string]*belowDir
	mkdir bool
	// made lists the directories mkdir made, in order.
	made []string
}

type belowDir struct {
	d       *heldDir // nil: missing
	blocked string
	// others says whether a user other than root and toque's own may add
	// names to d, decided once.
	others *bool
}

// replaceable reports whether another user may add a name to bd (a hard
// link to a file of theirs, or of anyone's).
func (bd *belowDir) replaceable() bool {
	if bd.others == nil {
		v := true
		if ds, err := bd.d.stat(); err == nil {
			v = replaceableBy(&ds, nil) != ""
		}
		bd.others = &v
	}
	return *bd.others
}

func (w *belowWalk) close() {
	for rel, bd := range w.dirs {
		if rel != "" && bd.d != nil {
			bd.d.close()
		}
	}
}

// maxHeldBelow bounds the directories a belowWalk holds open: an archive
// of 50,000 directories must not run out of descriptors.
const maxHeldBelow = 256

// trim lets go of every directory but the root when w holds too many;
// callers call it between entries, never while they use a directory dir
// returned.
func (w *belowWalk) trim() {
	if len(w.dirs) <= maxHeldBelow {
		return
	}
	w.close()
	w.dirs = map[string]*belowDir{"": w.dirs[""]}
}

// dir is the directory rel ("" for the root) below w's root.
func (w *belowWalk) dir(rel string) (*belowDir, error) {
	if bd, ok := w.dirs[rel]; ok {
		return bd, nil
	}
	parentRel, name := path.Split(rel)
	parent, err := w.dir(strings.TrimSuffix(parentRel, "/"))
	if err != nil {
		return nil, err
	}
	bd := &belowDir{blocked: parent.blocked}
	w.dirs[rel] = bd
	if parent.d == nil || parent.blocked != "" {
		return bd, nil
	}
	fd, err := unix.Openat(parent.d.fd, name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && w.mkdir {
		if err = unix.Mkdirat(parent.d.fd, name, 0o700); err == nil {
			w.made = append(w.made, rel)
			fd, err = unix.Openat(parent.d.fd, name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	}
	switch {
	case err == nil:
		bd.d = &heldDir{fd: fd, path: parent.d.join(name)}
	case errors.Is(err, unix.ENOENT):
	case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		st, _, serr := statAt(parent.d, name)
		if serr != nil {
			return nil, serr
		}
		bd.blocked = fmt.Sprintf("%s is %s", parent.d.join(name), props.Article(kindOf(uint32(st.Mode))))
	default:
		return nil, &fs.PathError{Op: "open", Path: parent.d.join(name), Err: err}
	}
	return bd, nil
}

// line is the manifest line of what destination holds at e's name.
func (le *liveEntry) line(e *archiveEntry, rd *archiveReading) string {
	name := e.name
	switch le.kind {
	case entryDir:
		return fmt.Sprintf("%s/ (directory, %04o%s)", name, le.mode, rd.ownerShown(le.uid, le.gid))
	case entryFile:
		if e.kind == entryHardlink {
			if t := rd.live[e.link]; t != nil && t.kind == entryFile && t.id == le.id {
				return fmt.Sprintf("%s (hard link to %s)", name, e.link)
			}
		}
		digest := "sha256 not read"
		if le.sha != "" {
			digest = "sha256:" + le.sha[:16]
		}
		return fmt.Sprintf("%s (file, %04o, %s, %s%s)", name, le.mode, humanBytes(le.size), digest, rd.ownerShown(le.uid, le.gid))
	case entrySymlink:
		return fmt.Sprintf("%s -> %s (symbolic link%s)", name, le.link, rd.ownerShown(le.uid, le.gid))
	}
	return fmt.Sprintf("%s (%s)", name, le.kind)
}

// line is the manifest line of what extraction makes of e.
func (e *archiveEntry) line(rd *archiveReading) string {
	own := rd.desiredOwner(e)
	switch e.kind {
	case entryDir:
		return fmt.Sprintf("%s/ (directory, %04o%s)", e.name, e.mode, own)
	case entryFile:
		return fmt.Sprintf("%s (file, %04o, %s, sha256:%s%s)", e.name, e.mode, humanBytes(e.size), e.sha[:16], own)
	case entrySymlink:
		return fmt.Sprintf("%s -> %s (symbolic link%s)", e.name, e.link, own)
	}
	return fmt.Sprintf("%s (hard link to %s)", e.name, e.link)
}

// desiredOwner is ", owner U, group G" for what extraction makes of e,
// when the recipe decides owners (owner, group, or the owner option),
// else "". An owner named in the recipe is shown by that name, resolved
// or not (a user an earlier resource makes), so that apply's plan shows
// the same.
func (rd *archiveReading) desiredOwner(e *archiveEntry) string {
	var parts []string
	switch {
	case rd.owner != "":
		parts = append(parts, "owner "+rd.owner)
	case rd.opts.archiveOwner:
		parts = append(parts, "owner "+props.OwnerName(uint32(e.uid)))
	}
	switch {
	case rd.group != "":
		parts = append(parts, "group "+rd.group)
	case rd.opts.archiveOwner:
		parts = append(parts, "group "+props.GroupName(uint32(e.gid)))
	}
	return ownerParts(parts)
}

// ownerShown is the same for what destination holds (owner uid, gid).
func (rd *archiveReading) ownerShown(uid, gid uint32) string {
	var parts []string
	if rd.owner != "" || rd.opts.archiveOwner {
		parts = append(parts, "owner "+props.OwnerName(uid))
	}
	if rd.group != "" || rd.opts.archiveOwner {
		parts = append(parts, "group "+props.GroupName(gid))
	}
	return ownerParts(parts)
}

func ownerParts(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}
