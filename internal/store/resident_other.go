//go:build !linux

package store

// shedMapped is a no-op where the process's mappings cannot be listed.
func shedMapped(dir string) {}
