//go:build !linux

package export

import "os"

// fileStatOf compares size and mtime only where inode and ctime are not read.
func fileStatOf(fi os.FileInfo) fileStat {
	return fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// lstatIn is os.Lstat of p (name in the open directory d).
func lstatIn(d *os.File, p, name string) (s fileStat, regular bool, err error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileStat{}, false, err
	}
	return fileStatOf(fi), fi.Mode().IsRegular(), nil
}
