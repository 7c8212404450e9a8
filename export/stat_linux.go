//go:build linux

package export

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func fileStatOf(fi os.FileInfo) fileStat {
	s := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ctime = st.Ctim.Nano()
		s.ino, s.dev = st.Ino, uint64(st.Dev)
	}
	return s
}

// lstatIn is lstat of name in the open directory d (p is the file's whole
// path, for errors): relative to d, so the directory's path is not
// resolved again for each of its files, and no os.FileInfo is made. A
// 10k-file scan's CPU fell by about a quarter (docs/performance.md,
// "commit DIR, again"). regular reports whether it is a regular file.
func lstatIn(d *os.File, p, name string) (s fileStat, regular bool, err error) {
	var st unix.Stat_t
	for {
		err = unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fileStat{}, false, &os.PathError{Op: "lstat", Path: p, Err: err}
	}
	s = fileStat{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino, dev: uint64(st.Dev)}
	return s, st.Mode&unix.S_IFMT == unix.S_IFREG, nil
}

// dirEnt is one entry of a directory: its name and its type bits.
type dirEnt struct {
	name string
	typ  fs.FileMode
}

// readDirSorted lists the open directory d (p is its path, for errors) in
// name order, without "." and "..": getdents64 read into one buffer and the
// names kept as substrings of one string, so a directory of n files costs a
// few allocations, not two per file as os.File.ReadDir's entries do. An
// entry whose type the file system does not give is lstat'd for it.
func readDirSorted(d *os.File, p string) ([]dirEnt, error) {
	fd := int(d.Fd())
	buf := make([]byte, 32<<10)
	var (
		arena []byte
		offs  = []int{0} // name i is arena[offs[i]:offs[i+1]]
		types []fs.FileMode
	)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "readdirent", Path: p, Err: err}
		}
		if n <= 0 {
			break
		}
		err = parseDirents(fd, p, buf[:n], func(name []byte, typ fs.FileMode) {
			arena = append(arena, name...)
			offs = append(offs, len(arena))
			types = append(types, typ)
		})
		if err != nil {
			return nil, err
		}
	}
	all := string(arena)
	ents := make([]dirEnt, len(types))
	for i := range ents {
		ents[i] = dirEnt{name: all[offs[i]:offs[i+1]], typ: types[i]}
	}
	slices.SortFunc(ents, func(a, b dirEnt) int { return strings.Compare(a.name, b.name) })
	return ents, nil
}

// modeType is the fs.FileMode type bits of a stat mode.
func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFREG:
		return 0
	}
	return fs.ModeIrregular
}

// parseDirents calls add with each entry of a getdents64 buffer but "."
// and "..", and its type; an entry of unknown type is lstat'd in the
// directory fd for it, and skipped if it is gone.
func parseDirents(fd int, p string, b []byte, add func(name []byte, typ fs.FileMode)) error {
	for len(b) > 0 {
		if len(b) < 19 {
			return &os.PathError{Op: "readdirent", Path: p, Err: unix.EIO}
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return &os.PathError{Op: "readdirent", Path: p, Err: unix.EIO}
		}
		rec := b[:reclen]
		b = b[reclen:]
		ino, dt := binary.NativeEndian.Uint64(rec[0:8]), rec[18]
		name := rec[19:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if ino == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		var typ fs.FileMode
		switch dt {
		case unix.DT_REG:
		case unix.DT_DIR:
			typ = fs.ModeDir
		case unix.DT_LNK:
			typ = fs.ModeSymlink
		case unix.DT_FIFO:
			typ = fs.ModeNamedPipe
		case unix.DT_SOCK:
			typ = fs.ModeSocket
		case unix.DT_CHR:
			typ = fs.ModeDevice | fs.ModeCharDevice
		case unix.DT_BLK:
			typ = fs.ModeDevice
		default: // DT_UNKNOWN: ask
			var st unix.Stat_t
			if err := unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if err == unix.ENOENT {
					continue // removed since it was listed
				}
				return &os.PathError{Op: "lstat", Path: p + string(os.PathSeparator) + string(name), Err: err}
			}
			typ = modeType(st.Mode)
		}
		add(name, typ)
	}
	return nil
}
