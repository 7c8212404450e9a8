//go:build !linux

package export

import "os"

// fileStatOf compares size and mtime only where inode and ctime are not read.
func fileStatOf(fi os.FileInfo) fileStat {
	return fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
