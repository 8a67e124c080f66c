// Package hostexec runs the host's own tools for the built-in types (the
// shadow tools, sysctl), words their failures, and says what needs root.
package hostexec
