//go:build !linux

package vcs

func renameNoReplace(from, to string) error { return renameChecked(from, to) }
