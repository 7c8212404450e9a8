// Command badgerfloor is the floor of an unserved get (bench workload 21,
// row 21d): a program that links Badger and nothing of agentstate, opens a
// store read-only with the options the store opens it with
// (dag/repo/storage/badger), reads one key and prints its value. An
// unserved get does this and more: the engine's start, the store's own
// checks, HEAD, the commit and the tree's nodes before the value.
//
//	badgerfloor STORE-DIR HEX-KEY
package main

import (
	"encoding/hex"
	"fmt"
	"os"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: badgerfloor STORE-DIR HEX-KEY")
		os.Exit(2)
	}
	key, err := hex.DecodeString(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "badgerfloor:", err)
		os.Exit(2)
	}
	if err := run(os.Args[1], key); err != nil {
		fmt.Fprintln(os.Stderr, "badgerfloor:", err)
		os.Exit(1)
	}
}

func run(dir string, key []byte) error {
	db, err := badger.Open(badger.DefaultOptions(dir).
		WithLogger(nil).
		WithNumVersionsToKeep(1).
		WithReadOnly(true).
		WithMemTableSize(8 << 20).
		WithValueThreshold(16 << 10).
		WithValueLogFileSize(64 << 20).
		WithCompression(options.ZSTD).
		WithBlockSize(16 << 10).
		WithBlockCacheSize(32 << 20).
		WithIndexCacheSize(16 << 20))
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
