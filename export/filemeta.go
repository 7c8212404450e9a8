package export

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstate/agentstate/internal/atomicfile"
)

// FileMeta is a MetaStore of plain files in a directory, one per record
// (named by the sha256 of the record's name). It suits large, derivable
// records such as stat caches: rewriting a file is cheaper than rewriting a
// large value in the database. Writes are atomic (temp file and rename) but
// not synced: losing a cache costs speed only.
type FileMeta struct{ Dir string }

func (m FileMeta) path(name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(m.Dir, hex.EncodeToString(sum[:16]))
}

// GetMeta reads a record.
func (m FileMeta) GetMeta(name string) ([]byte, bool, error) {
	data, err := os.ReadFile(m.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// SetMeta writes a record, atomically but without fsync
// (atomicfile.WriteFileNoSync): a record lost or damaged in a crash is a
// cold cache.
func (m FileMeta) SetMeta(name string, v []byte) error {
	if err := os.MkdirAll(m.Dir, 0o700); err != nil { // records name the user's directories
		return err
	}
	return atomicfile.WriteFileNoSync(m.path(name), v, 0o600)
}

// Clear removes every record.
func (m FileMeta) Clear() error { return os.RemoveAll(m.Dir) }

// Prune removes every record keep does not want (keep is given its bytes),
// and every record that cannot be read. Files that are not records (a
// temporary file of a write in flight) are left alone. A missing directory
// holds no records.
func (m FileMeta) Prune(keep func(data []byte) bool) error {
	ents, err := os.ReadDir(m.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !isRecordName(e.Name()) {
			continue
		}
		p := filepath.Join(m.Dir, e.Name())
		if data, err := os.ReadFile(p); err == nil && keep(data) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// isRecordName reports whether name is what path names a record's file: 32
// lower-case hex digits.
func isRecordName(name string) bool {
	if len(name) != 32 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil && strings.ToLower(name) == name
}
