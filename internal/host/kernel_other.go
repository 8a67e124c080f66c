//go:build !unix

package host

// kernelRelease is unknown off Unix.
func kernelRelease() string { return "" }
