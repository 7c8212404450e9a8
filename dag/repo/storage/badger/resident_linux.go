package badger

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// shedMapped drops from this process's resident set the pages of its
// mappings of files in dir. Badger maps its value log, tables and memtable
// logs shared, and every page written or read through them stays resident
// (and counted as the process's memory) for as long as the file is open: a
// 2 GiB value written was 2 GiB resident. MADV_DONTNEED on a shared file
// mapping only unmaps the pages: they stay in the page cache, written pages
// are written back as usual, and a later access faults them in again.
func shedMapped(dir string) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	prefix := []byte(dir + "/")
	for line := range bytes.SplitSeq(maps, []byte("\n")) {
		// start-end perms offset dev inode path
		f := bytes.Fields(line)
		if len(f) < 6 || !bytes.HasPrefix(f[5], prefix) {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_DONTNEED) //nolint:errcheck // best effort
	}
}

// sharedResident is this process's resident pages that map files (its
// program's, the store's), in bytes: /proc/self/statm's third field. 0
// when it cannot be read.
func sharedResident() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0
	}
	n, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil {
		return 0
	}
	return n * int64(os.Getpagesize())
}
