package badger

import "github.com/dgraph-io/badger/v4/options"

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
