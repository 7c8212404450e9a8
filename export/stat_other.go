//go:build !linux

package export

import (
	"io/fs"
	"os"
	"slices"
	"strings"
)

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

// dirEnt is one entry of a directory: its name and its type bits.
type dirEnt struct {
	name string
	typ  fs.FileMode
}

// readDirSorted lists the open directory d in name order.
func readDirSorted(d *os.File, p string) ([]dirEnt, error) {
	des, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	ents := make([]dirEnt, len(des))
	for i, e := range des {
		ents[i] = dirEnt{name: e.Name(), typ: e.Type()}
	}
	slices.SortFunc(ents, func(a, b dirEnt) int { return strings.Compare(a.name, b.name) })
	return ents, nil
}
