// Package builtin assembles toque's built-in resource types, from their
// family packages, into the registry the commands use (Registry). It is
// the only package outside the families that imports them.
package builtin
