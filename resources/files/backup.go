package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"
	"time"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// Backups mirror the paths they are of, as Chef's do, one directory per
// file: the backups of /etc/motd are STATE/backup/etc/motd/STAMP, where
// STAMP is the UTC time of the backup, YYYYMMDDhhmmss.nnnnnnnnn. So two
// paths never share backups (/d/a_b and /d/a/b are backup/d/a_b/ and
// backup/d/a/b/), and pruning one file's backups lists only that file's
// directory: the cost of a write does not grow with the backups of other
// files. A backup is written to a temporary name and renamed to its stamp,
// so a name that is a stamp always holds a whole copy.

// backupStamp is the layout of a backup's name: the UTC time it was made.
const backupStamp = "20060102150405.000000000"

var backupName = regexp.MustCompile(`^[0-9]{14}\.[0-9]{9}$`)

// backupTemp is the temporary name a backup is written to before it is
// renamed to its stamp. A run killed in between leaves it; the next backup
// of the same file removes it.
const backupTemp = ".toque-tmp"

// BackupsOf is the directory holding the backups of the canonical path
// (see CanonicalPath) under stateDir: STATE/backup/PATH.
func BackupsOf(stateDir, path string) (string, error) {
	clean, err := props.CanonicalPath(path)
	if err != nil {
		return "", fmt.Errorf("no backup directory for %q: %w", path, err)
	}
	return filepath.Join(resources.BackupDir(stateDir), clean), nil
}

// backupFrom copies the regular file path, open as src (read from offset
// 0, whatever src's offset), to BackupsOf(path)/STAMP with mode, then
// prunes path's backups to the newest keep. keep <= 0 and an empty
// StateDir disable backups, and an empty file is not backed up (there is
// nothing to restore; a zero-byte backup is what a killed run leaves, and
// is removed). It returns the backup's path ("" when none).
func backupFrom(env *resources.Env, path string, src *os.File, mode uint32, keep int, now time.Time) (string, error) {
	if env == nil || env.StateDir == "" || keep <= 0 {
		return "", nil
	}
	fi, err := src.Stat()
	if err != nil {
		return "", fmt.Errorf("backing up %s: %w", path, err)
	}
	if fi.Size() == 0 {
		return "", nil
	}
	dir, err := BackupsOf(env.StateDir, path)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backing up %s: creating %s: %w", path, dir, err)
	}
	dst, err := writeBackup(dir, src, mode, now)
	if err != nil {
		return "", fmt.Errorf("backing up %s (nothing was changed): %w", path, err)
	}
	env.Log().Debug("backed up file", "path", path, "backup", dst)
	if err := pruneBackups(dir, keep); err != nil {
		return dst, fmt.Errorf("backing up %s: %w", path, err)
	}
	return dst, nil
}

// writeBackup copies src to dir/backupTemp, syncs it, and renames it to
// the first free stamp from now. It returns the backup's path.
func writeBackup(dir string, src *os.File, mode uint32, now time.Time) (_ string, err error) {
	tmp := filepath.Join(dir, backupTemp)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("removing %s, left by an earlier run: %w", tmp, err)
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = io.Copy(out, io.NewSectionReader(src, 0, 1<<62))
	if err == nil {
		err = syscall.Fchmod(int(out.Fd()), mode)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", tmp, err)
	}
	for t := now.UTC(); ; t = t.Add(time.Nanosecond) {
		dst := filepath.Join(dir, t.Format(backupStamp))
		// link(2) never replaces: two backups in one nanosecond get
		// successive stamps.
		err = os.Link(tmp, dst)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("naming the backup %s: %w", dst, err)
		}
		os.Remove(tmp)
		return dst, syncDir(dir)
	}
}

// listBackups returns the backups in dir (the directory of one file's
// backups), newest first, and what a killed run left there: zero-byte
// stamps and the temporary file. Anything else (the directories of paths
// below this one) is not looked at.
func listBackups(dir string) (backups, leftovers []string, err error) {
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("listing backups in %s: %w", dir, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, nil, fmt.Errorf("listing backups in %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == backupTemp && e.Type().IsRegular():
			leftovers = append(leftovers, name)
		case e.Type().IsRegular() && backupName.MatchString(name):
			if fi, err := e.Info(); err == nil && fi.Size() == 0 {
				leftovers = append(leftovers, name)
				continue
			}
			backups = append(backups, name)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(backups)))
	return backups, leftovers, nil
}

// pruneBackups keeps the newest keep backups in dir and removes the rest,
// with what a killed run left there.
func pruneBackups(dir string, keep int) error {
	backups, leftovers, err := listBackups(dir)
	if err != nil {
		return err
	}
	if len(backups) > keep {
		leftovers = append(leftovers, backups[keep:]...)
	}
	var errs []error
	for _, name := range leftovers {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing old backups: %w", errors.Join(errs...))
	}
	return nil
}

// syncDir fsyncs a directory so a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening directory %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
