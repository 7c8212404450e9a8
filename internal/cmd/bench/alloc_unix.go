//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// allocated is the disk space a file takes: its blocks, where the system says.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
