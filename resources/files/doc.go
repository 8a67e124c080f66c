// Package files holds the built-in types that manage files: file,
// template, directory, link and remote_file, and the editors of files
// toque does not own, file_line, file_block and ini_setting (edit.go:
// several editors of one file are read once and planned in declaration
// order, each on what the ones before it leave).
//
// They share the held-directory file system code (safefs.go): every path
// is reached one component at a time through directory descriptors,
// following no link another user could plant (openat2 with
// RESOLVE_NO_SYMLINKS), and a step changes the very object Load read,
// checked by its device and inode. Writes are atomic (temporary file,
// fsync, rename, fsync of the directory), replaced and deleted content is
// backed up under the state directory (backup.go), and creates can be
// staged so that apply makes many durable at once (stagefile.go). Modes
// are octal or chmod's symbolic modes, which a Plan resolves against the
// live mode (symmode.go).
// remote_file downloads into a content-addressed cache (fetch.go),
// connecting only to the addresses netpolicy.go allows (no internal ones
// unless the resource opts in).
//
// Other families build on it: the file type is the engine of cron_d,
// sysctl's persisted settings and systemd_unit, and WriteAtomic, Remove
// and Download serve apt_repository.
package files
