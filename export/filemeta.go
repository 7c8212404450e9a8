package export

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

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
