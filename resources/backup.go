package resources

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// backupStamp is the layout of the UTC timestamp a backup's name ends with.
const backupStamp = "20060102150405.000000000"

var backupSuffix = regexp.MustCompile(`^[0-9]{14}\.[0-9]{9}$`)

// BackupDir is where Converge keeps copies of replaced and deleted files.
func BackupDir(stateDir string) string { return filepath.Join(stateDir, "backup") }

// backupKey is the name backups of path start with: the path without its
// leading "/" and with every "/" turned into "_" (/etc/motd → etc_motd).
func backupKey(path string) string {
	return strings.ReplaceAll(strings.TrimPrefix(filepath.Clean(path), "/"), "/", "_")
}

// backupFrom copies the regular file path, open as src (read from offset
// 0, whatever src's offset), to StateDir/backup/KEY.YYYYMMDDhhmmss.nnnnnnnnn
// (UTC) with mode, then removes all but the newest keep copies of path.
// keep <= 0 and an empty StateDir disable backups. It returns the backup's
// path ("" when none).
func backupFrom(env *Env, path string, src *os.File, mode uint32, keep int, now time.Time) (string, error) {
	if env == nil || env.StateDir == "" || keep <= 0 {
		return "", nil
	}
	dir := BackupDir(env.StateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backing up %s: creating %s: %w", path, dir, err)
	}
	key := backupKey(path)
	dst := filepath.Join(dir, key+"."+now.UTC().Format(backupStamp))
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("backing up %s: %w", path, err)
	}
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
		os.Remove(dst)
		return "", fmt.Errorf("backing up %s to %s: %w", path, dst, err)
	}
	logger(env).Debug("backed up file", "path", path, "backup", dst)
	if err := pruneBackups(dir, key, keep); err != nil {
		return dst, fmt.Errorf("backing up %s: %w", path, err)
	}
	return dst, nil
}

// listBackups returns the backups of key in dir, newest first.
func listBackups(dir, key string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing backups in %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), key+".")
		if ok && e.Type().IsRegular() && backupSuffix.MatchString(rest) {
			names = append(names, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	return names, nil
}

// pruneBackups keeps the newest keep backups of key.
func pruneBackups(dir, key string, keep int) error {
	names, err := listBackups(dir, key)
	if err != nil {
		return err
	}
	for i := keep; i < len(names); i++ {
		if err := os.Remove(filepath.Join(dir, names[i])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing old backup: %w", err)
		}
	}
	return nil
}

func logger(env *Env) hclog.Logger {
	if env == nil || env.Logger == nil {
		return hclog.NewNullLogger()
	}
	return env.Logger
}
