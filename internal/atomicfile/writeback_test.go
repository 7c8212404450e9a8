package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A durable replacement starts write-back as it goes, every writeBackEvery
// bytes, so its Commit's fsync does not find the whole file dirty; a NoSync
// one never does. The file is what was written either way.
func TestDurableWriteStartsWriteBackAsItGoes(t *testing.T) {
	calls := 0
	defer func(f func(*os.File)) { startWriteBack = f }(startWriteBack)
	startWriteBack = func(f *os.File) { calls++; startWriteBackFile(f) }
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for _, noSync := range []bool{false, true} {
		calls = 0
		dir := t.TempDir()
		f, err := create(dir, "tmp-*", 0o600, noSync)
		if err != nil {
			t.Fatal(err)
		}
		for range 3*writeBackEvery/len(chunk) + 1 {
			if _, err := f.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		p := filepath.Join(dir, "out")
		if err := f.Commit(p); err != nil {
			t.Fatal(err)
		}
		want := 3
		if noSync {
			want = 0
		}
		if calls != want {
			t.Errorf("noSync=%v: write-back started %d times, want %d", noSync, calls, want)
		}
		if fi, err := os.Stat(p); err != nil || fi.Size() != int64(3*writeBackEvery+len(chunk)) {
			t.Fatalf("noSync=%v: %v, %v", noSync, fi, err)
		}
	}
}
