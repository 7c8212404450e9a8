// Package floorstore holds what the bench's Badger-only floor programs
// (badgerfloor, commitfloor) share: the options dag/repo/storage/badger
// opens a store with, and its rule for merging level 0. It imports Badger
// only, so a floor links nothing of agentstate.
package floorstore

import (
	"os"
	"path/filepath"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Options are the options dag/repo/storage/badger opens a store with.
func Options(dir string, readOnly bool) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithNumVersionsToKeep(1).
		WithReadOnly(readOnly).
		WithMemTableSize(8 << 20).
		WithValueThreshold(16 << 10).
		WithValueLogFileSize(64 << 20).
		WithCompression(options.None).
		WithBlockSize(16 << 10).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithNumCompactors(2).
		WithNumLevelZeroTables(9).
		WithNumLevelZeroTablesStall(18).
		WithDetectConflicts(true)
}

// LevelZero counts the level-0 tables the store's MANIFEST lists: a
// writable open merges level 0 at close once it holds 7, as the store's
// does.
func LevelZero(dir string) int {
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return 0
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
	if err != nil {
		return 0
	}
	n := 0
	for _, t := range m.Tables {
		if t.Level == 0 {
			n++
		}
	}
	return n
}
