//go:build linux && (amd64 || arm64)

package atomicfile

import (
	"os"
	"syscall"
)

// startWriteBackFile is sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE):
// write-out of every dirty page of the file not already under write-out is
// started, and the call does not wait for it. Errors are left to the fsync
// that makes the file durable.
func startWriteBackFile(f *os.File) {
	const syncFileRangeWrite = 2
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, fd, 0, 0, syncFileRangeWrite, 0, 0)
	})
}
