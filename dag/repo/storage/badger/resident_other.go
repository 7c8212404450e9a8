//go:build !linux

package badger

// shedMapped is a no-op where the process's mappings cannot be listed.
func shedMapped(dir string) {}
