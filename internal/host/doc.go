// Package host detects facts about the machine toque runs on: its identity
// (hostname, machine id), its operating system and platform, architecture,
// kernel release and CPU count. Recipes read them as host.… in expressions.
//
// It is read-only: detection never changes the host. It is not a full
// inventory tool (no network interfaces, packages or filesystems yet).
package host
