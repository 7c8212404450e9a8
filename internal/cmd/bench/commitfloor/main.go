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
// (and git's index refresh) does.
//
//	commitfloor sizes BEFORE-STORE AFTER-STORE OUT-FILE
//	commitfloor write [-walk DIR] STORE SIZES-FILE [CHANGED-FILE...]
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
	var err error
	switch {
	case len(os.Args) == 5 && os.Args[1] == "sizes":
		err = sizes(os.Args[2], os.Args[3], os.Args[4])
	case len(os.Args) >= 4 && os.Args[1] == "write":
		fs := flag.NewFlagSet("write", flag.ExitOnError)
		walk := fs.String("walk", "", "lstat every file under this directory first")
		fs.Parse(os.Args[2:])
		if fs.NArg() < 2 {
			usage()
		}
		err = write(fs.Arg(0), fs.Arg(1), *walk, fs.Args()[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "commitfloor:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: commitfloor sizes BEFORE-STORE AFTER-STORE OUT-FILE\n       commitfloor write [-walk DIR] STORE SIZES-FILE [CHANGED-FILE...]")
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

func write(dir, sizesFile, walkDir string, files []string) error {
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
	buf := make([]byte, 1<<20)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		h := sha256.New()
		for {
			n, err := f.Read(buf)
			h.Write(buf[:n])
			if len(pool) < need {
				pool = append(pool, buf[:min(n, need-len(pool))]...)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return err
			}
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
