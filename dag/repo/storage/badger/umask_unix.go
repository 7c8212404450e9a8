//go:build unix

package badger

import (
	"sync"
	"syscall"
)

// Badger creates its files (value logs, memtables, tables, LOCK) with mode
// 0666 less the umask, while it runs, and has no option for their mode. So
// that no file of a store is group- or world-readable at any instant, the
// process's file-creation mask is 077 while any writable store is open: the
// first open saves the mask and sets 077, the last close restores it.
// Code that makes files for the user while a store is open gives them their
// mode explicitly (export writes 0644 files and 0755 directories whatever
// the mask).
var umaskState struct {
	mu    sync.Mutex
	holds int
	saved int
}

// holdUmask sets the process umask to 077 until the returned function is
// called (counted: nested holds restore the first one's mask at the last
// release).
func holdUmask() func() {
	umaskState.mu.Lock()
	if umaskState.holds == 0 {
		umaskState.saved = syscall.Umask(0o077)
	}
	umaskState.holds++
	umaskState.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			umaskState.mu.Lock()
			umaskState.holds--
			if umaskState.holds == 0 {
				syscall.Umask(umaskState.saved)
			}
			umaskState.mu.Unlock()
		})
	}
}
