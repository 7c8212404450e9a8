//go:build !linux

package execwire

import "errors"

// maxSunPath is the longest socket path bind and connect take on the
// smallest sun_path of the other systems (104 bytes with the zero, BSDs and
// macOS).
const maxSunPath = 103

// errDeepSocket: the socket's path is too long for sun_path, and only Linux
// reaches a socket through a handle on its directory.
var errDeepSocket = errors.New("execwire: the store's socket path is too long for this system (move the store to a shorter path)")

// SocketAddr returns p when bind and connect take it (see path_linux.go).
func SocketAddr(p string) (addr string, release func(), err error) {
	if len(p) > maxSunPath {
		return "", nil, errDeepSocket
	}
	return p, func() {}, nil
}
