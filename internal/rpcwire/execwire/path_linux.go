package execwire

import (
	"path"
	"syscall"
)

// maxSunPath is the longest socket path bind and connect take (sun_path
// holds 108 bytes with the terminating zero).
const maxSunPath = 107

// oPath is Linux's O_PATH (the syscall package does not name it).
const oPath = 0x200000

// SocketAddr returns a name for the socket at p that bind and connect take
// however deep p is: p itself when it fits, else p reached through an open
// handle on its directory (/proc/self/fd/N/NAME). Call release once the bind
// or connect is done.
func SocketAddr(p string) (addr string, release func(), err error) {
	if len(p) <= maxSunPath {
		return p, func() {}, nil
	}
	fd, err := syscall.Open(path.Dir(p), oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	return "/proc/self/fd/" + decimal(uint64(fd)) + "/" + path.Base(p), func() { syscall.Close(fd) }, nil
}
