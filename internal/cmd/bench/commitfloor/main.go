// Command commitfloor is the floor of a `commit DIR` (bench workloads 2 and
// 22, rows 2x and 22f): a program that links Badger and nothing of
// agentstate and does a strict subset of what the commit does. It opens a
// copy of the store as it was before the commit, writable, with the options
// the store opens it with (dag/repo/storage/badger), writes as many blocks
// of the same sizes as the commit added, under keys of the same length, in
// one batch, and closes the store (the memtable's flush to a level-0 table,
// and level 0 merged on the store's rule, as the commit's close does). The
// blocks' bytes are taken from the changed files, which it reads and
// sha256-hashes once; with -walk it first lstats every file under a
// directory, on as many goroutines as there are cores, as the commit's scan
// (and git's index refresh) does. With -pages, a changed file larger than
// the format's chunking threshold (1 MiB, objects.ChunkThreshold) is also
// hashed in pieces (its pages when it is a SQLite database, else 64 KiB),
// on a second goroutine over the same buffer as the whole-content hash:
// the format's two hashes of such a file (its chunks' CIDs and the
// sha256 of its content the bundle hash needs), as the commit computes
// them (row 22g).
//
// When COMMITFLOOR_ARGS is set, its lines are the arguments and the
// command line is ignored: installed as the engine beside a copy of the
// front end, it is what the front end starts in place of the engine (row
// 22g), whatever command line the front end was given.
//
//	commitfloor sizes BEFORE-STORE AFTER-STORE OUT-FILE
//	commitfloor write [-walk DIR] [-pages] STORE SIZES-FILE [CHANGED-FILE...]
//
// "sizes" (untimed) writes the value size of every key AFTER-STORE holds
// and BEFORE-STORE does not, one per line.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/agentstate/agentstate/internal/cmd/bench/floorstore"

	badger "github.com/dgraph-io/badger/v4"
)

func main() {
	// The engine's collector setting at start (cmd/agentstate-engine): the
	// first collection is due at 32 MiB, not 4.
	debug.SetGCPercent(800)
	if a := os.Getenv("COMMITFLOOR_ARGS"); a != "" {
		os.Args = append(os.Args[:1], strings.Split(a, "\n")...)
	}
	var err error
	switch {
	case len(os.Args) == 5 && os.Args[1] == "sizes":
		err = sizes(os.Args[2], os.Args[3], os.Args[4])
	case len(os.Args) >= 4 && os.Args[1] == "write":
		fs := flag.NewFlagSet("write", flag.ExitOnError)
		walk := fs.String("walk", "", "lstat every file under this directory first")
		pages := fs.Bool("pages", false, "hash a file over 1 MiB in pieces too, beside its whole content")
		fs.Parse(os.Args[2:])
		if fs.NArg() < 2 {
			usage()
		}
		err = write(fs.Arg(0), fs.Arg(1), *walk, *pages, fs.Args()[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "commitfloor:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: commitfloor sizes BEFORE-STORE AFTER-STORE OUT-FILE\n       commitfloor write [-walk DIR] [-pages] STORE SIZES-FILE [CHANGED-FILE...]")
	os.Exit(2)
}

// keySizes lists every key of a store with its value's size.
func keySizes(dir string) (map[string]int64, error) {
	db, err := badger.Open(floorstore.Options(dir, true))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	m := map[string]int64{}
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			m[string(it.Item().Key())] = it.Item().ValueSize()
		}
		return nil
	})
	return m, err
}

func sizes(before, after, out string) error {
	b, err := keySizes(before)
	if err != nil {
		return fmt.Errorf("%s: %w", before, err)
	}
	a, err := keySizes(after)
	if err != nil {
		return fmt.Errorf("%s: %w", after, err)
	}
	var sb strings.Builder
	for k, n := range a {
		if _, ok := b[k]; !ok {
			fmt.Fprintf(&sb, "%d %d\n", len(k), n)
		}
	}
	return os.WriteFile(out, []byte(sb.String()), 0o644)
}

// walk lstats every entry under dir, one directory per goroutine at a time.
func walk(dir string) error {
	var wg sync.WaitGroup
	dirs := make(chan string, 1<<16)
	var mu sync.Mutex
	var first error
	var pending sync.WaitGroup
	pending.Add(1)
	dirs <- dir
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range dirs {
				ents, err := os.ReadDir(d)
				for _, e := range ents {
					fi, ierr := e.Info()
					if ierr != nil {
						err = ierr
						continue
					}
					if fi.IsDir() {
						pending.Add(1)
						dirs <- filepath.Join(d, e.Name())
					}
				}
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
				}
				pending.Done()
			}
		}()
	}
	pending.Wait()
	close(dirs)
	wg.Wait()
	return first
}

func write(dir, sizesFile, walkDir string, pages bool, files []string) error {
	raw, err := os.ReadFile(sizesFile)
	if err != nil {
		return err
	}
	type block struct{ key, val int }
	var blocks []block
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		kn, err1 := strconv.Atoi(k)
		vn, err2 := strconv.Atoi(v)
		if !ok || err1 != nil || err2 != nil || kn < 1 || vn < 0 {
			return fmt.Errorf("%s: bad line %q", sizesFile, sc.Text())
		}
		blocks = append(blocks, block{kn, vn})
	}
	if walkDir != "" {
		if err := walk(walkDir); err != nil {
			return err
		}
	}
	// The changed files, read and hashed once through one buffer; the
	// blocks' bytes are the first of what was read.
	need := 0
	for _, b := range blocks {
		need += b.val
	}
	pool := make([]byte, 0, need)
	// Read 2 MiB at a time: with -pages, each read is then hashed twice at
	// once, and fewer hand-overs between the two goroutines cost less (1
	// MiB: 2 ms more for a 32 MiB file).
	buf := make([]byte, 2<<20)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		piece := 0 // hashed in pieces of this size too (0: not)
		if fi, err := f.Stat(); err == nil && pages && fi.Size() > chunkThreshold {
			piece = pieceSize(f)
		}
		h := sha256.New()
		// With pieces, the whole-content hash runs on a goroutine of its
		// own, handed each read while this one hashes its pieces, as the
		// commit's hasher does.
		var work chan []byte
		var done chan struct{}
		if piece > 0 {
			work, done = make(chan []byte), make(chan struct{})
			go func() {
				for b := range work {
					h.Write(b)
					done <- struct{}{}
				}
			}()
		}
		for {
			n, err := io.ReadFull(f, buf)
			if piece > 0 {
				work <- buf[:n]
				for off := 0; off < n; off += piece {
					sha256.Sum256(buf[off:min(off+piece, n)])
				}
				<-done
			} else {
				h.Write(buf[:n])
			}
			if len(pool) < need {
				pool = append(pool, buf[:min(n, need-len(pool))]...)
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				if work != nil {
					close(work)
				}
				f.Close()
				return err
			}
		}
		if work != nil {
			close(work)
		}
		f.Close()
		h.Sum(nil)
	}
	if len(pool) == 0 {
		pool = []byte{0}
	}
	db, err := badger.Open(floorstore.Options(dir, false).WithCompactL0OnClose(floorstore.LevelZero(dir) >= 7))
	if err != nil {
		return err
	}
	wb := db.NewWriteBatch()
	off := 0
	for i, b := range blocks {
		key := make([]byte, b.key)
		sum := sha256.Sum256([]byte(strconv.Itoa(i) + "/" + sizesFile))
		for j := range key {
			key[j] = sum[j%len(sum)]
		}
		key[0] = 'b'
		val := make([]byte, b.val)
		for n := 0; n < len(val); {
			if off >= len(pool) {
				off = 0
			}
			m := copy(val[n:], pool[off:])
			n, off = n+m, off+m
		}
		if err = wb.Set(key, val); err != nil {
			break
		}
	}
	if err == nil {
		err = wb.Flush()
	} else {
		wb.Cancel()
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// chunkThreshold is objects.ChunkThreshold: content longer than this is
// stored in chunks, each its own block (this program links nothing of
// agentstate).
const chunkThreshold = 1 << 20

// pieceSize is the size of the pieces a file over chunkThreshold is
// hashed in: its page size when it starts as a SQLite database does (the
// format cuts a database at its pages), else 64 KiB.
func pieceSize(f *os.File) int {
	var h [100]byte
	if _, err := f.ReadAt(h[:], 0); err == nil && string(h[:16]) == "SQLite format 3\x00" {
		if ps := int(h[16])<<8 | int(h[17]); ps == 1 {
			return 65536
		} else if ps >= 512 && ps&(ps-1) == 0 {
			return ps
		}
	}
	return 64 << 10
}
