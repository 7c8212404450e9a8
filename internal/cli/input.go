package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/agentstate/agentstate/export/envelope"
)

// Every file a command line names to read (a value, a tar or CAR to
// import, a key, an identity, a public key, a recipients file, a receipts
// file, token, certificate and CA files) is opened by openInput, under one
// rule. A command running in the user's own process reads what the user
// could: a regular file, or a stream (a pipe or FIFO, as with
// --key <(pass show k) or import <(curl …); a character device, as
// /dev/stdin), named directly or through a symlink. A directory, a socket
// or a block device is refused. A server running a client's command opens
// only a regular file that is not a symlink: there /dev/fd/N or /dev/stdin
// would name the server's own descriptors, not the client's.

// openInput opens src (relative to the command's directory) for reading;
// served, when the rule refuses it, is added to the message for a served
// store (how to give it another way).
func (e *env) openInput(src, served string) (*os.File, error) {
	path := e.path(src)
	ok := func(m os.FileMode) bool {
		if e.served != nil {
			return m.IsRegular()
		}
		return m.IsRegular() || m&os.ModeNamedPipe != 0 || m&os.ModeCharDevice != 0
	}
	stat := os.Stat
	if e.served != nil {
		stat = os.Lstat
	}
	refused := func() error {
		if e.served != nil {
			msg := fmt.Sprintf("%s is not a regular file: a served store's server reads only a regular file a client names", src)
			if served != "" {
				msg += " (" + served + ")"
			}
			return fmt.Errorf("%s", msg)
		}
		return fmt.Errorf("%s is not a regular file or a stream", src)
	}
	if e.served != nil && (strings.HasPrefix(path, "/dev/") || strings.HasPrefix(path, "/proc/")) {
		return nil, refused() // the server's own descriptors and devices
	}
	fi, err := stat(path)
	if err != nil {
		return nil, err
	}
	if !ok(fi.Mode()) {
		return nil, refused()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !ok(fi.Mode()) {
		f.Close()
		return nil, refused()
	}
	return f, nil
}

// readInput reads src whole (openInput's rule), at most limit bytes, and
// gives its mode too (a key file's permissions are checked on it).
func (e *env) readInput(src string, limit int64) ([]byte, os.FileMode, error) {
	f, err := e.openInput(src, "")
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", src, err)
	}
	if int64(len(b)) > limit {
		return nil, 0, fmt.Errorf("%s is larger than %d bytes", src, limit)
	}
	return b, fi.Mode(), nil
}

// keyFilePerm is the warning for a secret read from a file others may read
// or write (a regular file's or FIFO's mode; a pipe's is its creator's).
func keyFilePerm(src string, mode os.FileMode) error {
	if runtime.GOOS != "windows" && mode.Perm()&0o077 != 0 && mode&os.ModeCharDevice == 0 {
		return &envelope.KeyFilePermissionError{Path: src, Mode: mode}
	}
	return nil
}

// maxSecretFile bounds a key, identity or token file read from the command
// line (the libraries' own bounds are smaller; this only stops a stream
// that never ends).
const maxSecretFile = 1 << 20
