package httpstore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/agentstate/agentstate/walrus"
)

// ManifestMagic opens every manifest blob: 0x89 "AGSMAN" 0x0A. The high-bit
// first byte and the trailing newline catch 7-bit and line-ending mangling,
// as in PNG.
var ManifestMagic = [8]byte{0x89, 'A', 'G', 'S', 'M', 'A', 'N', 0x0A}

// ManifestVersion is the only manifest version this package writes and reads.
const ManifestVersion = 1

const (
	manifestHeaderLen = 8 + 1 + 8 + 32 + 4 // magic, version, total size, sha256, part count
	manifestEntryLen  = 32 + 8             // blob id, part size
)

// MaxParts bounds the number of parts a manifest may list (so a manifest is
// at most about 10 MiB, the size of a public publisher's request limit).
const MaxParts = 1 << 18

// MaxManifestSize is the size of a manifest listing MaxParts parts.
const MaxManifestSize = manifestHeaderLen + MaxParts*manifestEntryLen

// Part is one part of a blob split under a manifest.
type Part struct {
	ID   walrus.BlobID
	Size int64
}

// Manifest lists the parts a large blob was split into, in order.
//
// Encoding (version 1), all integers big-endian:
//
//	offset  size  field
//	0       8     ManifestMagic: 89 41 47 53 4D 41 4E 0A
//	8       1     version: 01
//	9       8     total size of the content, uint64
//	17      32    sha256 of the whole content
//	49      4     part count N, uint32, 1..MaxParts
//	53      40*N  per part: the 32 raw bytes of its blob id, then its size, uint64 (>= 1)
//
// Nothing follows the last part. The part sizes sum to the total size. Every
// field is fixed, so a Manifest has exactly one encoding and a decoded
// manifest re-encodes to the bytes it came from.
type Manifest struct {
	Size   int64
	SHA256 [32]byte
	Parts  []Part
}

// MarshalBinary encodes m, refusing manifests that DecodeManifest would refuse.
func (m *Manifest) MarshalBinary() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	out := make([]byte, 0, manifestHeaderLen+len(m.Parts)*manifestEntryLen)
	out = append(out, ManifestMagic[:]...)
	out = append(out, ManifestVersion)
	out = binary.BigEndian.AppendUint64(out, uint64(m.Size))
	out = append(out, m.SHA256[:]...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(m.Parts)))
	for _, p := range m.Parts {
		raw, _ := p.ID.Bytes() // checked by validate
		out = append(out, raw[:]...)
		out = binary.BigEndian.AppendUint64(out, uint64(p.Size))
	}
	return out, nil
}

func (m *Manifest) validate() error {
	if len(m.Parts) == 0 || len(m.Parts) > MaxParts {
		return fmt.Errorf("%w: %d parts, want 1..%d", ErrBadManifest, len(m.Parts), MaxParts)
	}
	if m.Size < 0 {
		return fmt.Errorf("%w: negative total size %d", ErrBadManifest, m.Size)
	}
	var sum int64
	for i, p := range m.Parts {
		if _, err := walrus.ParseBlobID(string(p.ID)); err != nil {
			return fmt.Errorf("%w: part %d: %w", ErrBadManifest, i, err)
		}
		if p.Size < 1 || p.Size > m.Size-sum {
			return fmt.Errorf("%w: part %d has size %d, which does not fit in the total %d", ErrBadManifest, i, p.Size, m.Size)
		}
		sum += p.Size
	}
	if sum != m.Size {
		return fmt.Errorf("%w: parts sum to %d bytes, total says %d", ErrBadManifest, sum, m.Size)
	}
	return nil
}

// IsManifest reports whether b begins with ManifestMagic.
func IsManifest(b []byte) bool { return bytes.HasPrefix(b, ManifestMagic[:]) }

// DecodeManifest decodes a manifest, checking every field.
func DecodeManifest(b []byte) (*Manifest, error) {
	if !IsManifest(b) {
		return nil, fmt.Errorf("%w: missing magic", ErrBadManifest)
	}
	if len(b) < manifestHeaderLen {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the %d-byte header", ErrBadManifest, len(b), manifestHeaderLen)
	}
	if v := b[8]; v != ManifestVersion {
		return nil, fmt.Errorf("%w: unsupported version %d", ErrBadManifest, v)
	}
	total := binary.BigEndian.Uint64(b[9:17])
	if total > 1<<62 {
		return nil, fmt.Errorf("%w: total size %d is implausible", ErrBadManifest, total)
	}
	m := &Manifest{Size: int64(total)}
	copy(m.SHA256[:], b[17:49])
	n := binary.BigEndian.Uint32(b[49:53])
	if n == 0 || n > MaxParts {
		return nil, fmt.Errorf("%w: %d parts, want 1..%d", ErrBadManifest, n, MaxParts)
	}
	if want := manifestHeaderLen + int(n)*manifestEntryLen; len(b) != want {
		return nil, fmt.Errorf("%w: %d parts need %d bytes, have %d", ErrBadManifest, n, want, len(b))
	}
	m.Parts = make([]Part, n)
	for i := range m.Parts {
		e := b[manifestHeaderLen+i*manifestEntryLen:]
		var raw [32]byte
		copy(raw[:], e[:32])
		size := binary.BigEndian.Uint64(e[32:40])
		if size > 1<<62 {
			return nil, fmt.Errorf("%w: part %d size %d is implausible", ErrBadManifest, i, size)
		}
		m.Parts[i] = Part{ID: walrus.BlobIDFromBytes(raw), Size: int64(size)}
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}
