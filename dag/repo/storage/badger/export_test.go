package badger

import (
	"fmt"
	"time"

	"github.com/agentstate/agentstate/objects"
	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// CompactL0At is compactL0At, for the tests.
const CompactL0At = compactL0At

// OpenRaw opens dir as the store does but writes no format record: a
// store whose creation was cut short after Badger made its files.
func OpenRaw(dir string) (*Store, error) { return open(dir, Options{}) }

// NewPrefix is newPrefix, for the tests.
const NewPrefix = newPrefix

// ShedMapped is shedMapped on the store's directory, for the tests.
func (s *Store) ShedMapped() { shedMapped(s.mapped) }

// Mapped is the store's directory as the kernel names it.
func (s *Store) Mapped() string { return s.mapped }

// HeadHooks are the HEAD cache's interleaving points (refstore.go): Missed
// runs in HeadRecord after a lookup that missed and before the Badger read,
// Read after the Badger read and before the cache may keep it, Swapped in
// SwapHead after the transaction and before the cache hears of its end.
type HeadHooks struct{ Missed, Read, Swapped func(agent string) }

// SetHeadHooks sets the hooks; set them before the store is shared.
func (s *Store) SetHeadHooks(h HeadHooks) {
	s.heads.hookMissed, s.heads.hookRead, s.heads.hookSwapped = h.Missed, h.Read, h.Swapped
}

// Opens is how many Badger databases this process has opened.
func Opens() int64 { return opens.Load() }

// Writes is how many Badger writes the store's write paths have made.
func (s *Store) Writes() int64 { return s.writes.Load() }

// MaxHeld is maxHeld, for the tests.
const MaxHeld = maxHeld

// TapeScans counts the seeks of a tape's end in Badger since the process
// started.
func TapeScans() int64 { return tapeScans.Load() }

// FreeLookups counts the free-space lookups of the stores' write checks
// since the process started.
func FreeLookups() int64 { return freeLookups.Load() }

// SetTableCompression sets how the stores opened next compress their
// tables, returning what restores the setting.
func SetTableCompression(c options.CompressionType) (restore func()) {
	prev := tableCompression
	tableCompression = c
	return func() { tableCompression = prev }
}

// SetPointerPrefix sets how many bytes of a pack's id the short pointers
// written from now on carry, and returns what restores it. The tests run
// it before any store is shared.
func SetPointerPrefix(n int) (restore func()) {
	old := pointerPrefix
	pointerPrefix = n
	return func() { pointerPrefix = old }
}

// LengthenPointer rewrites packed block c's pointer in the long layout
// (its pack's whole id first, user-meta 01), as builds before short
// pointers wrote it.
func (s *Store) LengthenPointer(c objects.CID) error {
	return s.db.Update(func(txn *badger.Txn) error {
		it, err := txn.Get(blockKey(c))
		if err != nil {
			return err
		}
		v, err := it.ValueCopy(nil)
		if err != nil {
			return err
		}
		ref, off, size, ok := decodePointer(it.UserMeta(), v)
		if !ok {
			return fmt.Errorf("%s is not packed", c)
		}
		_, id, err := s.packFor(txn, c, ref, off, size)
		if err != nil {
			return err
		}
		return txn.SetEntry(badger.NewEntry(blockKey(c), encodeLongPointer(id, off, size)).WithMeta(metaPacked))
	})
}

// InTree is inTree on block c's item: whether Badger holds its value in
// the LSM tree.
func (s *Store) InTree(c objects.CID) (bool, error) {
	var in bool
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(blockKey(c))
		if err != nil {
			return err
		}
		return it.Value(func(b []byte) error { in = inTree(it, b); return nil })
	})
	return in, err
}

// SetShedHook sets a function shed runs before it drops the store's
// mapped pages. Set it before the store is shared.
func (s *Store) SetShedHook(f func()) { s.shedHook = f }

// FlattenForTest compacts the store's tables into one level (Badger's
// Flatten): the tables it merges are deleted once nothing holds them.
func (s *Store) FlattenForTest() error { return s.db.Flatten(1) }

// ShedIdle is how long the shedder outlives the last write.
const ShedIdle = shedIdle

// ShedTick is the shedder's period.
func ShedTick() time.Duration { return time.Duration(shedTick.Load()) }

// HoldShedder sets the shedder's period to d (for a test that counts
// resident pages between sheds) and returns what restores it.
func HoldShedder(d time.Duration) (restore func()) {
	old := shedTick.Swap(int64(d))
	return func() { shedTick.Store(old) }
}

// Shedding reports whether the store's shedder runs.
func (s *Store) Shedding() bool { return s.shedding.Load() }

// SetShedGrowth sets how much the mapped pages must grow for the shedder
// to shed, and returns what restores it.
func SetShedGrowth(n int64) (restore func()) {
	old := shedGrowth.Swap(n)
	return func() { shedGrowth.Store(old) }
}
