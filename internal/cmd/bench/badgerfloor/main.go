// Command badgerfloor is the floor of an unserved get and put (bench
// workload 21, row 21d, and workload 10, row 10h): a program that links
// Badger and nothing of agentstate and opens a store with the options the
// store opens it with (dag/repo/storage/badger). With two arguments it opens
// the store read-only, reads one key and prints its value; with a third it
// opens it writable, sets the key to that file's content in one transaction
// and closes it (the memtable's flush to a level-0 table included, as every
// close does, and level 0 merged on the store's rule). An unserved get or put does this and more: the engine's
// start, the store's own checks, HEAD, the commit and the tree's nodes.
//
// With @KEYS-FILE in place of the key it is the floor of an unserved 'log
// --oneline' (workload 4, row 4h): it reads the keys the file lists in hex,
// one a line, each in its own read-only transaction (as the store reads a
// record), then, for a line "scan PREFIX N", iterates the keys under PREFIX
// from the first, copying N values out with one iterator (as the log's walk
// reads the commit graph's records), and prints one line per value read by
// the scan. It decodes, checks and hashes nothing, unless the file has a
// line "hash": then it is the floor of an unserved 'sql' query (workload
// 16, row 16f): each value read by key is a block, re-hashed (sha256) as
// the store re-hashes every block it reads, an absent one is an error, and
// it prints the count of blocks read. A line "check" (in a build with the
// tag checked, which links dag and objects too: row 4j) makes the scan
// check each record as a log must (checkRecord) and print its commit's
// message's first line.
//
// When BADGERFLOOR_ARGS is set, its lines are the arguments and the
// command line is ignored: installed as the engine beside a copy of the
// front end, it is what the front end starts in place of the engine (row
// 4i), whatever command line the front end was given.
//
//	badgerfloor STORE-DIR HEX-KEY [VALUE-FILE]
//	badgerfloor STORE-DIR @KEYS-FILE
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentstate/agentstate/internal/cmd/bench/floorstore"

	badger "github.com/dgraph-io/badger/v4"
)

func main() {
	if a := os.Getenv("BADGERFLOOR_ARGS"); a != "" {
		os.Args = append(os.Args[:1], strings.Split(a, "\n")...)
	}
	if len(os.Args) != 3 && len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: badgerfloor STORE-DIR HEX-KEY [VALUE-FILE]")
		os.Exit(2)
	}
	var err error
	if file, ok := strings.CutPrefix(os.Args[2], "@"); ok && len(os.Args) == 3 {
		err = readList(os.Args[1], file)
	} else {
		var key []byte
		key, err = hex.DecodeString(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "badgerfloor:", err)
			os.Exit(2)
		}
		if len(os.Args) == 4 {
			err = put(os.Args[1], key, os.Args[3])
		} else {
			err = get(os.Args[1], key)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "badgerfloor:", err)
		os.Exit(1)
	}
}

func put(dir string, key []byte, valueFile string) error {
	v, err := os.ReadFile(valueFile)
	if err != nil {
		return err
	}
	db, err := badger.Open(floorstore.Options(dir, false).WithCompactL0OnClose(floorstore.LevelZero(dir) >= 7))
	if err != nil {
		return err
	}
	err = db.Update(func(txn *badger.Txn) error { return txn.Set(key, v) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

func get(dir string, key []byte) error {
	db, err := badger.Open(floorstore.Options(dir, true))
	if err != nil {
		return err
	}
	var v []byte
	err = db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(v)
	return err
}

// readList reads what the keys file lists (see the package comment).
func readList(dir, file string) error {
	list, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var keys [][]byte
	var prefix []byte
	n := 0
	hash, check := false, false
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && f[0] == "hash":
			hash = true
		case len(f) == 1 && f[0] == "check":
			check = true
		case len(f) == 3 && f[0] == "scan":
			if prefix, err = hex.DecodeString(f[1]); err != nil {
				return err
			}
			if n, err = strconv.Atoi(f[2]); err != nil {
				return err
			}
		case len(f) == 1:
			k, err := hex.DecodeString(f[0])
			if err != nil {
				return err
			}
			keys = append(keys, k)
		default:
			return fmt.Errorf("%s: bad line %q", file, line)
		}
	}
	db, err := badger.Open(floorstore.Options(dir, true))
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	if hash {
		err = readHashed(db, keys, out)
	} else {
		for _, k := range keys {
			if err = db.View(func(txn *badger.Txn) error {
				item, err := txn.Get(k)
				if errors.Is(err, badger.ErrKeyNotFound) {
					return nil // absent records (a checkpoint) are looked up all the same
				}
				if err != nil {
					return fmt.Errorf("%x: %w", k, err)
				}
				_, err = item.ValueCopy(nil)
				return err
			}); err != nil {
				break
			}
		}
	}
	read := 0
	if err == nil && n > 0 {
		err = db.View(func(txn *badger.Txn) error {
			o := badger.DefaultIteratorOptions
			o.PrefetchValues = false
			o.Prefix = prefix
			it := txn.NewIterator(o)
			defer it.Close()
			var line []byte
			for it.Rewind(); it.Valid() && read < n; it.Next() {
				v, err := it.Item().ValueCopy(nil)
				if err != nil {
					return err
				}
				line = hex.AppendEncode(line[:0], it.Item().Key()[len(prefix):])
				line = append(line, ' ')
				if check {
					msg, err := checkRecord(v)
					if err != nil {
						return fmt.Errorf("%x: %w", it.Item().Key(), err)
					}
					line = append(line, msg...)
				} else {
					line = strconv.AppendInt(line, int64(len(v)), 10)
				}
				out.Write(append(line, '\n'))
				read++
			}
			return nil
		})
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil && read < n {
		err = fmt.Errorf("scan of %x read %d values, want %d", prefix, read, n)
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// readHashed reads blocks by key and re-hashes them, the keys split among
// as many goroutines as the machine has cores (each key in its own
// read-only transaction), and prints how many it read.
func readHashed(db *badger.DB, keys [][]byte, out io.Writer) error {
	workers := runtime.GOMAXPROCS(0)
	var read atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			errs[w] = func() error {
				for i := w; i < len(keys); i += workers {
					if err := db.View(func(txn *badger.Txn) error {
						item, err := txn.Get(keys[i])
						if err != nil {
							return fmt.Errorf("%x: %w", keys[i], err)
						}
						return item.Value(func(v []byte) error {
							sha256.Sum256(v)
							return nil
						})
					}); err != nil {
						return err
					}
					read.Add(1)
				}
				return nil
			}()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	_, err := fmt.Fprintln(out, read.Load())
	return err
}
