package system

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// mountInfo is one line of /proc/self/mountinfo (proc(5)): a mount, its
// per-mount options and its file system's. Paths and the source are
// unescaped.
type mountInfo struct {
	id         string
	dev        string // major:minor of the file system
	root       string // the directory of the file system mounted (not "/" for a bind mount)
	mountPoint string
	mountOpts  []string // per mount: rw|ro, nosuid, nodev, noexec, noatime, nodiratime, relatime, nosymfollow
	fstype     string
	source     string
	superOpts  []string // the file system's: rw|ro, sync, dirsync, mand, lazytime, then its own (size=, mode=)
}

// readMountinfo reads the mount table of the mount namespace path belongs
// to: the process's (/proc/self/mountinfo), or a thread's
// (/proc/thread-self/mountinfo, which tests use).
func readMountinfo(path string) ([]mountInfo, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	return parseMountinfo(string(data))
}

// parseMountinfo parses the lines of a mountinfo file, in the kernel's
// order: a mount comes after the one it is mounted over.
func parseMountinfo(text string) ([]mountInfo, error) {
	var out []mountInfo
	for n, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 10 || sep < 6 || len(f) < sep+4 {
			return nil, fmt.Errorf("line %d of the mount table is not a mountinfo line: %q", n+1, line)
		}
		out = append(out, mountInfo{
			id:         f[0],
			dev:        f[2],
			root:       fstabUnescape(f[3]),
			mountPoint: fstabUnescape(f[4]),
			mountOpts:  strings.Split(f[5], ","),
			fstype:     fstabUnescape(f[sep+1]),
			source:     fstabUnescape(f[sep+2]),
			superOpts:  strings.Split(f[sep+3], ","),
		})
	}
	return out, nil
}

// topMount is the mount that is visible at mp (the last one mounted
// there), and how many are mounted there in all.
func topMount(mounts []mountInfo, mp string) (*mountInfo, int) {
	var top *mountInfo
	n := 0
	for i := range mounts {
		if mounts[i].mountPoint == mp {
			top, n = &mounts[i], n+1
		}
	}
	return top, n
}

// options is the mount's options as mount(8) prints them: the per-mount
// ones, then the file system's that they do not repeat.
func (m *mountInfo) options() []string {
	out := slices.Clone(m.mountOpts)
	for _, o := range m.superOpts {
		if o != "rw" && o != "ro" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// describe is the mount as `mount` prints it, which is how a plan shows
// it: "tmpfs on /dev/shm type tmpfs (rw,nosuid,nodev)".
func describeMount(source, mp, fstype string, opts []string) string {
	return fmt.Sprintf("%s on %s type %s (%s)", source, mp, fstype, strings.Join(opts, ","))
}
