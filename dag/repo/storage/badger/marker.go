package badger

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// A directory is an agentstate store when it holds markerFile, a regular
// file that begins with markerMagic: the manifest of the store's Badger
// database, the file Open looks for.
const markerFile = "MANIFEST"

var markerMagic = []byte("Bdgr")

// IsStoreDir reports whether dir is an agentstate store directory. It does
// not follow a symlink at the marker's place and never blocks on a FIFO
// there. Brain-directory scans and checkouts use it to leave stores alone
// whatever their name.
func IsStoreDir(dir string) bool {
	p := filepath.Join(dir, markerFile)
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, len(markerMagic))
	_, err = io.ReadFull(f, magic)
	return err == nil && bytes.Equal(magic, markerMagic)
}

// IsWhole reports whether dir holds a store that was created whole: a
// store directory (IsStoreDir) that is not HalfMade.
func IsWhole(dir string) bool { return IsStoreDir(dir) && !HalfMade(dir) }
