//go:build linux

package export

import (
	"os"
	"syscall"
)

func fileStatOf(fi os.FileInfo) fileStat {
	s := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ctime = st.Ctim.Nano()
		s.ino, s.dev = st.Ino, uint64(st.Dev)
	}
	return s
}
