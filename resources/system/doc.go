// Package system holds the built-in types that set what the kernel and the
// host's daemons read from small files of their own: cron_d (a file in
// /etc/cron.d, built and validated as cron reads it), sysctl (a kernel
// parameter, set live and persisted in /etc/sysctl.d) and mount (a mounted
// file system, remounted when its options differ, and its entry in
// /etc/fstab). Each writes its files through the file type of
// resources/files; a type that owns one part of a shared file (an fstab
// entry) reads the file again right before writing it and changes only its
// own lines (editFile).
//
// It does not hold the types of files in general (resources/files), nor
// services (resources/systemd).
package system
