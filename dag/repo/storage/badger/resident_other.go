//go:build !linux

package badger

// shedMapped is a no-op where the process's mappings cannot be listed.
func shedMapped(dir string) {}

// sharedResident is not known here: the shedder never sheds by it.
func sharedResident() int64 { return 0 }
