//go:build !toque_pprof

package main

// startProfiling does nothing in a release build; see main_pprof.go.
func startProfiling() (stop func()) { return func() {} }
