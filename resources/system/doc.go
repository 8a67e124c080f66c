// Package system holds the built-in types that set what the kernel and the
// host's daemons read from small files of their own, Chef's resources of
// the same names: cron_d (a file in /etc/cron.d, built and validated as
// cron reads it), sysctl (a kernel parameter, set live and persisted in
// /etc/sysctl.d, in a file of its own or a block of a shared one), mount (a
// mounted file system, remounted when its options differ, and its entry in
// /etc/fstab), kernel_module (modprobe, and the files of modules-load.d and
// modprobe.d), swap_file, hostname (the static and kernel hostname, and
// /etc/hosts), timezone (/etc/localtime and /etc/timezone), locale
// (/etc/default/locale, compiling what is missing with locale-gen),
// alternatives (update-alternatives; the group's file of
// /var/lib/dpkg/alternatives read directly), sudo (a file of
// /etc/sudoers.d, checked by visudo before it lands) and
// ssh_known_hosts_entry (a host's key, a line of a known_hosts file).
//
// Each writes its files through the file (or link) type of
// resources/files: atomically, backed up. A type that owns part of a file
// others share (an fstab entry, a line of /etc/hosts, a key of a sysctl.d
// file) reads the file again right before writing it and changes only its
// own lines (editFile), so that every other line is kept byte for byte.
// Reading the host is file reads and system calls: a plan of these types
// starts no process, but for two reads that only a tool can make: sudo
// runs `visudo -cf` on the file it would write, in a private temporary
// directory, and ssh_known_hosts_entry without a key asks the host for
// it with ssh-keyscan (shown in the plan). Programs run only to converge (mount, modprobe,
// mkswap, swapon, hostnamectl, locale-gen, sysctl), and what they did is
// read back.
//
// It does not hold the types of files in general (resources/files), nor
// services (resources/systemd).
package system
