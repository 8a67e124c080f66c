// Package props holds what the built-in type families share to describe,
// check and convert property values: validators, normalisers, user and
// group lookups for owner properties, URL redaction. It knows nothing of
// any one type.
package props
