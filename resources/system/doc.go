// Package system holds the built-in types that set what the kernel and the
// host's daemons read from small files of their own: cron_d (a file in
// /etc/cron.d, built and validated as cron reads it) and sysctl (a kernel
// parameter, set live and persisted in /etc/sysctl.d). Each writes its file
// through the file type of resources/files.
package system
