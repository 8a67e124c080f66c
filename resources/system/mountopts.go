package system

import (
	"slices"
	"strings"
)

// What a mount's options mean to the kernel, so that the options a recipe
// gives are compared with those /proc/self/mountinfo shows. Measured on
// Linux 6.x with util-linux 2.38:
//
//   - The per-mount flags (nosuid, nodev, noexec, ro, the atime mode,
//     nodiratime, nosymfollow) show in the per-mount field, always in the
//     kernel's order; the file system's flags (sync, dirsync, mand,
//     lazytime) and its own options (size=, mode=, errors=) in the super
//     options.
//   - A remount sets every per-mount flag to what it is given: `mount -o
//     remount,noexec` clears nosuid and nodev. So toque's remount passes
//     the whole set, the mount's as it is with the recipe's over it.
//   - Options only mount(8), fsck or systemd read (defaults, auto, nofail,
//     _netdev, x-*, user, loop…) never show, and are not compared.
//   - Anything else is the file system's own, and is compared as written,
//     but for the few the kernel is known to print in other words
//     (spellings: hidepid=2 is hidepid=invisible); it may print others
//     otherwise (tmpfs's size=1m is size=1024k), which apply's read-back
//     turns into an error naming what it shows.

// mountFlag is an option that sets one of the kernel's flags of a mount
// or of its file system: the option the kernel shows when the flag is on,
// and whether the option turns it on.
type mountFlag struct {
	aspect string
	on     bool
}

var mountFlags = map[string]mountFlag{
	"ro": {"ro", true}, "rw": {"ro", false},
	"nosuid": {"nosuid", true}, "suid": {"nosuid", false},
	"nodev": {"nodev", true}, "dev": {"nodev", false},
	"noexec": {"noexec", true}, "exec": {"noexec", false},
	"nodiratime": {"nodiratime", true}, "diratime": {"nodiratime", false},
	"nosymfollow": {"nosymfollow", true}, "symfollow": {"nosymfollow", false},
	"sync": {"sync", true}, "async": {"sync", false},
	"dirsync": {"dirsync", true},
	"mand":    {"mand", true}, "nomand": {"mand", false},
	"lazytime": {"lazytime", true}, "nolazytime": {"lazytime", false},
}

// superOrder is the kernel's order of the file system's flags it shows
// (fs/proc_namespace.c); remountOf writes the per-mount ones in theirs.
var superOrder = []string{"sync", "dirsync", "mand", "lazytime"}

// atimeModes are the options that choose how access times are kept;
// "atime" only says "not noatime".
var atimeModes = []string{"noatime", "relatime", "strictatime", "atime"}

// userspaceOption reports whether o is read by mount(8), fsck, systemd
// or the loop set-up, and never shown by the kernel.
func userspaceOption(o string) bool {
	switch o {
	case "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group", "nofail", "_netdev",
		"bind", "rbind", "loop", "silent", "loud", "iversion", "noiversion",
		"shared", "rshared", "private", "rprivate", "slave", "rslave", "unbindable", "runbindable":
		return true
	}
	for _, p := range []string{"x-", "X-", "comment=", "loop=", "offset=", "sizelimit=", "encryption=", "helper=", "uhelper=",
		"context=", "fscontext=", "defcontext=", "rootcontext="} {
		if strings.HasPrefix(o, p) {
			return true
		}
	}
	return false
}

// wantedOpts is what a list of options asks of the kernel, the last word
// on each flag winning, as mount(8) reads them.
type wantedOpts struct {
	flags   map[string]bool // aspect → on, for the flags the list decides
	atime   string          // noatime, relatime, strictatime, atime, or "" when undecided
	literal []string        // the file system's own options, as written
	bind    bool
}

func wantedOf(opts []string) wantedOpts {
	w := wantedOpts{flags: map[string]bool{}}
	for _, o := range opts {
		switch {
		case o == "defaults":
			for _, a := range []string{"ro", "nosuid", "nodev", "noexec", "sync"} {
				w.flags[a] = false
			}
		case o == "bind" || o == "rbind":
			w.bind = true
		case slices.Contains(atimeModes, o):
			w.atime = o
		case mountFlags[o].aspect != "":
			w.flags[mountFlags[o].aspect] = mountFlags[o].on
		case userspaceOption(o):
		default:
			w.literal = slices.DeleteFunc(w.literal, func(l string) bool { return optKey(l) == optKey(o) })
			w.literal = append(w.literal, o)
		}
	}
	return w
}

// spellings are file system options the kernel shows in other words than
// the ones a recipe may write: procfs's hidepid, which Linux 5.8 and later
// print by name (hidepid=2 is hidepid=invisible), where fstab and the
// roles that write it use the number.
var spellings = map[string]string{
	"hidepid=0": "hidepid=off", "hidepid=1": "hidepid=noaccess",
	"hidepid=2": "hidepid=invisible", "hidepid=4": "hidepid=ptraceable",
}

// kernelSpelling is o as the kernel shows it.
func kernelSpelling(o string) string {
	if k, ok := spellings[o]; ok {
		return k
	}
	return o
}

// sameOption reports whether a and b are one option, however written.
func sameOption(a, b string) bool { return a == b || kernelSpelling(a) == kernelSpelling(b) }

// optKey is the name of an option, without its value (size of size=1m).
func optKey(o string) string {
	k, _, _ := strings.Cut(o, "=")
	return k
}

// liveFlags reads the flags a mount shows, and its atime mode.
func liveFlags(m *mountInfo) (map[string]bool, string) {
	flags := map[string]bool{"ro": slices.Contains(m.mountOpts, "ro")}
	for _, a := range []string{"nosuid", "nodev", "noexec", "nodiratime", "nosymfollow"} {
		flags[a] = slices.Contains(m.mountOpts, a)
	}
	for _, a := range superOrder {
		flags[a] = slices.Contains(m.superOpts, a)
	}
	atime := "strictatime"
	switch {
	case slices.Contains(m.mountOpts, "noatime"):
		atime = "noatime"
	case slices.Contains(m.mountOpts, "relatime"):
		atime = "relatime"
	}
	return flags, atime
}

// flagWord is how an option list says that aspect is on or off.
func flagWord(aspect string, on bool) string {
	if on {
		return aspect
	}
	switch aspect {
	case "ro":
		return "rw"
	case "sync":
		return "async"
	case "dirsync":
		return "no dirsync"
	}
	return strings.TrimPrefix(aspect, "no")
}

// notInEffect lists what opts ask that the mount m does not show, in
// the options' words ("noexec", "suid", "size=2m"); none when every
// option the kernel shows is in effect.
func notInEffect(opts []string, m *mountInfo) []string {
	w := wantedOf(opts)
	flags, atime := liveFlags(m)
	var out []string
	for _, a := range append([]string{"ro", "nosuid", "nodev", "noexec", "nodiratime", "nosymfollow"}, superOrder...) {
		if on, ok := w.flags[a]; ok && on != flags[a] {
			out = append(out, flagWord(a, on))
		}
	}
	switch w.atime {
	case "":
	case "atime":
		if atime == "noatime" {
			out = append(out, "atime")
		}
	default:
		if w.atime != atime {
			out = append(out, w.atime)
		}
	}
	live := m.options()
	for _, l := range w.literal {
		if !slices.ContainsFunc(live, func(o string) bool { return sameOption(l, o) }) {
			out = append(out, l)
		}
	}
	return out
}

// remountOf is what remounting m with opts passes to mount(8) after
// "remount" (every per-mount flag, since a remount clears those it is not
// given, and the file system's options the recipe names), and the option
// lists the kernel is expected to show after it.
func remountOf(opts []string, m *mountInfo) (args, mountOpts, superOpts []string) {
	w := wantedOf(opts)
	flags, atime := liveFlags(m)
	for a, on := range w.flags {
		flags[a] = on
	}
	switch {
	case w.atime == "atime" && atime == "noatime":
		atime = "relatime"
	case w.atime != "" && w.atime != "atime":
		atime = w.atime
	}
	mountOpts = []string{flagWord("ro", flags["ro"])}
	for _, a := range []string{"nosuid", "nodev", "noexec"} {
		if flags[a] {
			mountOpts = append(mountOpts, a)
		}
	}
	if atime == "noatime" {
		mountOpts = append(mountOpts, "noatime")
	}
	if flags["nodiratime"] {
		mountOpts = append(mountOpts, "nodiratime")
	}
	if atime == "relatime" {
		mountOpts = append(mountOpts, "relatime")
	}
	if flags["nosymfollow"] {
		mountOpts = append(mountOpts, "nosymfollow")
	}
	args = slices.Clone(mountOpts)
	if atime == "strictatime" {
		args = append(args, "strictatime")
	}
	if w.bind {
		// Only the per-mount flags change on a bind mount's remount.
		return append([]string{"bind"}, args...), mountOpts, slices.Clone(m.superOpts)
	}
	// The file system's flags and options: its first word is whether the
	// file system is read-only, which follows ro on a remount.
	superOpts = []string{flagWord("ro", flags["ro"])}
	for _, a := range superOrder {
		if flags[a] {
			superOpts = append(superOpts, a)
			args = append(args, a)
		}
	}
	rest := slices.Clone(m.superOpts)
	if len(rest) > 0 {
		rest = rest[1:]
	}
	rest = slices.DeleteFunc(rest, func(o string) bool { return slices.Contains(superOrder, o) })
	for _, l := range w.literal {
		if i := slices.IndexFunc(rest, func(o string) bool { return optKey(o) == optKey(l) }); i >= 0 {
			if !sameOption(l, rest[i]) {
				rest[i] = kernelSpelling(l)
			}
		} else {
			rest = append(rest, kernelSpelling(l))
		}
		args = append(args, l)
	}
	return args, mountOpts, append(superOpts, rest...)
}
