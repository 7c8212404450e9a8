package badger_test

import (
	"bufio"
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// mappedRSS sums the resident kilobytes of this process's mappings of files
// in dir (/proc/self/smaps). Each mapping's block starts with its header
// line (address range, permissions, offset, device, inode, and a path only
// when it maps a file): an anonymous mapping (the Go heap, placed anywhere,
// also right after a mapping of the store) ends the previous file's block.
func mappedRSS(t *testing.T, dir string) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in, kb := false, 0
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			in = len(fs) >= 6 && strings.HasPrefix(fs[5], dir+"/")
			continue
		}
		if in && len(fs) >= 2 && fs[0] == "Rss:" {
			n, _ := strconv.Atoi(fs[1])
			kb += n
		}
	}
	return kb
}

// An anonymous mapping after a mapping of the store is not counted as the
// store's (the smaps block of the file ends at the next header).
func TestMappedRSSEndsAtAnonymousMapping(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/f"
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// 2 MiB of anonymous memory, the first half then replaced by a mapping
	// of the file (MAP_FIXED): the file, and an anonymous region right
	// after it. Both are touched.
	region, err := syscall.Mmap(-1, 0, 2<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(region)
	base := uintptr(unsafe.Pointer(&region[0]))
	if got, _, errno := syscall.Syscall6(syscall.SYS_MMAP, base, 1<<20, syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_FIXED, f.Fd(), 0); errno != 0 || got != base {
		t.Fatalf("mapping the file at %#x: %v", base, errno)
	}
	sum := 0
	for i := 0; i < 1<<20; i += 4096 {
		sum += int(region[i]) // the file's pages
		region[1<<20+i] = 1   // the anonymous pages
	}
	got := mappedRSS(t, dir)
	if got < 1024-64 || got > 1024 {
		t.Fatalf("mappedRSS counted %d KiB for a 1024 KiB file mapping followed by 1024 KiB of anonymous memory (sum %d)", got, sum)
	}
}

// Large blocks go to Badger's value log, which is a shared mapping: the
// pages written stay resident, counted as the process's memory, unless the
// store sheds them. It does so every shedEvery bytes moved, and a shed
// leaves the blocks readable.
func TestWritesDoNotStayResident(t *testing.T) {
	defer badger.HoldShedder(time.Hour)() // this test sheds by itself
	ctx := context.Background()
	s, err := badger.Create(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.NewChaCha8([32]byte{1})
	var blocks []objects.Block
	written := 0
	for range 6 { // 6 batches of 4 MiB: less than one shed interval
		var batch []objects.Block
		for range 64 {
			b := make([]byte, 64<<10)
			rng.Read(b)
			batch = append(batch, objects.NewValue(b))
		}
		if err := s.Put(ctx, batch...); err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, batch...)
		written += 4 << 20
	}
	before := mappedRSS(t, s.Mapped())
	if before < written>>10/2 {
		t.Fatalf("%d KiB of the store's files resident after writing %d KiB: the blocks did not go through a mapping", before, written>>10)
	}
	// A shed drops at least half of what was written from the resident
	// set (the rest of the store's mapped pages, Badger's own tables and
	// memtable, it may keep). Badger's background work may touch pages
	// again right after a shed, so a few tries; a shed that does nothing
	// never passes.
	want := before - written>>10/2
	after := before
	for try := 0; try < 5 && after > want; try++ {
		if try > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		s.ShedMapped()
		after = mappedRSS(t, s.Mapped())
	}
	if after > want {
		t.Fatalf("%d KiB of the store's files resident after five sheds, %d before, %d KiB written", after, before, written>>10)
	}
	for _, b := range blocks {
		data, err := s.Get(ctx, b.CID)
		if err != nil || !bytes.Equal(data, b.Data) {
			t.Fatalf("block %s after a shed: %v", b.CID, err)
		}
	}
	// Writing more than shedEvery sheds on its own.
	for range 12 {
		var batch []objects.Block
		for range 64 {
			b := make([]byte, 64<<10)
			rng.Read(b)
			batch = append(batch, objects.NewValue(b))
		}
		if err := s.Put(ctx, batch...); err != nil {
			t.Fatal(err)
		}
	}
	if now := mappedRSS(t, s.Mapped()); now > (written+48<<20)>>10/2 {
		t.Fatalf("%d KiB of the store's files resident after writing %d KiB more", now, 48<<10)
	}
}

// mappedTables returns the store's table files this process maps.
func mappedTables(t *testing.T, dir string) map[string]bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.HasPrefix(f[5], dir+"/") && strings.HasSuffix(f[5], ".sst") {
			m[f[5]] = true
		}
	}
	return m
}

// While the store drops its mapped pages (shed), every table it maps stays
// mapped: a compaction meanwhile deletes the tables it merged only after
// the shed, so no address the shed has listed is unmapped, and taken by
// other memory, before it is dropped.
func TestShedHoldsTheTables(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir() + "/s"
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A level-0 table a close; once there are CompactL0At, a close merges
	// them into level 1, so the last rounds leave tables at two levels.
	for round := range badger.CompactL0At + 3 {
		var bs []objects.Block
		for i := range 200 {
			bs = append(bs, objects.NewValue([]byte(strconv.Itoa(round)+" block "+strconv.Itoa(i))))
		}
		if err := s.Put(ctx, bs...); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = badger.Open(dir, badger.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	defer s.Close()
	real := s.Mapped()
	var during, held map[string]bool
	s.SetShedHook(func() {
		during = mappedTables(t, real)
		if err := s.FlattenForTest(); err != nil {
			t.Errorf("Flatten: %v", err)
		}
		held = mappedTables(t, real)
	})
	s.ShedResident()
	if len(during) < 2 {
		t.Fatalf("%d tables mapped: the test shows nothing", len(during))
	}
	for tb := range during {
		if !held[tb] {
			t.Errorf("%s was unmapped during the shed", tb)
		}
	}
	gone := 0
	for tb := range during {
		if !mappedTables(t, real)[tb] {
			gone++
		}
	}
	if gone == 0 {
		t.Errorf("the compaction deleted none of the %d tables: the test shows nothing", len(during))
	}
}

// A store that writes blocks sheds its mapped pages every ShedTick (here
// whatever they grew by) until ShedIdle after its last write, starts again
// with the next write, and stops at Close; with the growth it waits for
// out of reach, it sheds nothing.
func TestShedderRunsWhileWriting(t *testing.T) {
	defer badger.SetShedGrowth(0)()
	ctx := context.Background()
	s, err := badger.Create(t.TempDir()+"/s", badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sheds atomic.Int64
	s.SetShedHook(func() { sheds.Add(1) })
	put := func(v string) {
		t.Helper()
		if err := s.Put(ctx, objects.NewValue([]byte(v))); err != nil {
			t.Fatal(err)
		}
	}
	if s.Shedding() {
		t.Fatal("shedding before any write")
	}
	put("one")
	time.Sleep(4 * badger.ShedTick())
	if n := sheds.Load(); n < 2 || !s.Shedding() {
		t.Fatalf("%d sheds in %s of writing (shedding %v), want at least 2", n, 4*badger.ShedTick(), s.Shedding())
	}
	deadline := time.Now().Add(badger.ShedIdle + 20*badger.ShedTick())
	for s.Shedding() && time.Now().Before(deadline) {
		time.Sleep(badger.ShedTick())
	}
	if s.Shedding() {
		t.Fatalf("still shedding %s after the last write", badger.ShedIdle+20*badger.ShedTick())
	}
	idle := sheds.Load()
	time.Sleep(3 * badger.ShedTick())
	if n := sheds.Load(); n != idle {
		t.Fatalf("%d sheds while idle", n-idle)
	}
	put("two")
	if !s.Shedding() {
		t.Fatal("a write after the shedder stopped did not start it again")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Shedding() {
		t.Fatal("shedding after Close")
	}
	closed := sheds.Load()
	time.Sleep(3 * badger.ShedTick())
	if n := sheds.Load(); n != closed {
		t.Fatalf("%d sheds after Close", n-closed)
	}

	badger.SetShedGrowth(1 << 40)
	if s, err = badger.Open(s.Mapped(), badger.Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sheds.Store(0)
	s.SetShedHook(func() { sheds.Add(1) })
	put("three")
	time.Sleep(4 * badger.ShedTick())
	if n := sheds.Load(); n != 0 || !s.Shedding() {
		t.Fatalf("%d sheds (shedding %v) with mapped pages that did not grow enough, want none", n, s.Shedding())
	}
}
