//go:build unix

package badger

import "syscall"

// freeBytes returns the bytes an unprivileged process may still write on the
// file system holding dir.
func freeBytes(dir string) (int64, bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false, err
	}
	return int64(st.Bavail) * int64(st.Bsize), true, nil //nolint:unconvert // field types differ between systems
}

// allocatedBytes returns the bytes a file really occupies (its blocks), which
// for Badger's sparse, pre-sized log files is far less than their length.
func allocatedBytes(fi interface{ Sys() any }, size int64) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512 //nolint:unconvert // field types differ between systems
	}
	return size
}
