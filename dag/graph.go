package dag

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"
	"strings"

	"github.com/agentstate/agentstate/objects"
)

// The commit graph (docs/format.md, "Commit graph"): a store's commits
// again, one metadata record each, numbered in the order the writer added
// them, so that a walk of history reads neighbouring records instead of
// commits scattered over the store by CID. A record holds the commit's
// block itself (so its CID is computed from it, never taken on trust), its
// generation number and, per parent, the parent's record number. It is a
// cache: every record can be rebuilt from the commits, a reader checks
// each record it uses and falls back to the commit object for anything the
// graph lacks or holds damaged, and verify checks every record.

const (
	// GraphRecordPrefix names the records: GraphRecordPrefix + the record
	// number's bitwise complement as 16 lower-case hexadecimal digits
	// (newest first in name order).
	GraphRecordPrefix = "cgraph/r/"
	// GraphIndexPrefix names the index: GraphIndexPrefix + a commit's CID
	// (its string form), holding its record number (uvarint).
	GraphIndexPrefix = "cgraph/i/"
	// GraphPrefix is the prefix of every commit-graph record.
	GraphPrefix = "cgraph/"

	graphVersion = 1
	// graphVersionBundle is a record that also holds the bundle hash of
	// its commit's tree.
	graphVersionBundle = 2
	// maxGraphParents bounds the parents a record may list (a commit has
	// few; a damaged count must not allocate much).
	maxGraphParents = 1 << 16
)

// ErrBadGraphRecord: a commit-graph record that does not decode or whose
// checksum does not match.
var ErrBadGraphRecord = errors.New("bad commit-graph record")

// GraphStore is where a commit graph lives: a store's metadata records.
type GraphStore interface {
	GetMeta(ctx context.Context, name string) ([]byte, bool, error)
}

// GraphRecord is one commit's record in the graph.
type GraphRecord struct {
	// Gen is the generation number: 1 for a commit with no parent in the
	// graph, else one more than the greatest of its parents'.
	Gen uint64
	// ParentSeqs holds, per parent of the commit in order, the parent's
	// record number plus one, or 0 when the parent has no record.
	ParentSeqs []uint64
	// Commit is the commit's block (DAG-CBOR).
	Commit []byte
	// Bundle is the bundle hash of the commit's tree (objects.HashLeaves),
	// when the writer knew it (nil: not recorded). A record with one is
	// version 2.
	Bundle *objects.BundleHash
}

// GraphRecordName is the name of record number seq.
func GraphRecordName(seq uint64) string {
	return fmt.Sprintf("%s%016x", GraphRecordPrefix, ^seq)
}

// GraphRecordSeq is the record number a record name holds.
func GraphRecordSeq(name string) (uint64, bool) {
	h, ok := strings.CutPrefix(name, GraphRecordPrefix)
	if !ok || len(h) != 16 {
		return 0, false
	}
	// Sixteen lower-case hexadecimal digits and nothing else: the one
	// spelling of each number (a walk reads a name per commit, so no fmt).
	var x uint64
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= '0' && c <= '9':
			x = x<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			x = x<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return ^x, true
}

// GraphIndexName is the name of the index entry of commit c.
func GraphIndexName(c objects.CID) string { return GraphIndexPrefix + c.String() }

// EncodeGraphIndex encodes an index entry's value.
func EncodeGraphIndex(seq uint64) []byte { return binary.AppendUvarint(nil, seq) }

// DecodeGraphIndex decodes an index entry's value.
func DecodeGraphIndex(v []byte) (uint64, bool) {
	seq, n := binary.Uvarint(v)
	return seq, n > 0 && n == len(v)
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Encode returns the record's bytes: version byte 1 (2 with a bundle
// hash), uvarint Gen, uvarint count of parents, uvarint per parent, with
// version 2 the 32 bytes of the bundle hash, uvarint length of the commit
// block, the block, then the CRC-32C (Castagnoli) of everything before it,
// 4 bytes big-endian.
func (g GraphRecord) Encode() []byte {
	b := make([]byte, 0, 48+len(g.ParentSeqs)*4+len(g.Commit))
	if g.Bundle != nil {
		b = append(b, graphVersionBundle)
	} else {
		b = append(b, graphVersion)
	}
	b = binary.AppendUvarint(b, g.Gen)
	b = binary.AppendUvarint(b, uint64(len(g.ParentSeqs)))
	for _, p := range g.ParentSeqs {
		b = binary.AppendUvarint(b, p)
	}
	if g.Bundle != nil {
		b = append(b, g.Bundle[:]...)
	}
	b = binary.AppendUvarint(b, uint64(len(g.Commit)))
	b = append(b, g.Commit...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// DecodeGraphRecord decodes a record's bytes, checking their form and
// checksum (not the commit: see GraphRecord.Check). Commit aliases v.
func DecodeGraphRecord(v []byte) (GraphRecord, error) {
	var g GraphRecord
	bad := func(what string) (GraphRecord, error) {
		return GraphRecord{}, fmt.Errorf("%w: %s", ErrBadGraphRecord, what)
	}
	if len(v) < 6 {
		return bad("too short")
	}
	body := v[:len(v)-4]
	if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(v[len(v)-4:]) {
		return bad("checksum mismatch")
	}
	if body[0] != graphVersion && body[0] != graphVersionBundle {
		return bad(fmt.Sprintf("version %d", body[0]))
	}
	p := body[1:]
	next := func() (uint64, bool) {
		x, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return x, true
	}
	var ok bool
	if g.Gen, ok = next(); !ok {
		return bad("generation")
	}
	np, ok := next()
	if !ok || np > maxGraphParents || np > uint64(len(p)) {
		return bad("parent count")
	}
	if np > 0 {
		g.ParentSeqs = make([]uint64, np)
	}
	for i := range g.ParentSeqs {
		if g.ParentSeqs[i], ok = next(); !ok {
			return bad("parent")
		}
	}
	if body[0] == graphVersionBundle {
		if len(p) < len(objects.BundleHash{}) {
			return bad("bundle hash")
		}
		h := objects.BundleHash(p[:len(objects.BundleHash{})])
		g.Bundle, p = &h, p[len(h):]
	}
	n, ok := next()
	if !ok || n != uint64(len(p)) {
		return bad("commit length")
	}
	g.Commit = p
	return g, nil
}

// Check decodes the record's commit and checks it against the record: the
// commit must be a well-formed commit object and have as many parents as
// the record lists. It returns the commit's CID (the hash of its block)
// and the commit.
func (g GraphRecord) Check() (objects.CID, *objects.Commit, error) {
	cm, err := objects.DecodeCommit(g.Commit)
	if err != nil {
		return objects.CID{}, nil, fmt.Errorf("%w: %w", ErrBadGraphRecord, err)
	}
	if len(cm.Parents) != len(g.ParentSeqs) {
		return objects.CID{}, nil, fmt.Errorf("%w: %d parent numbers for %d parents", ErrBadGraphRecord, len(g.ParentSeqs), len(cm.Parents))
	}
	return objects.Sum(objects.CodecDagCBOR, g.Commit), cm, nil
}

// GraphScanner is the optional ability of a GraphStore to read records in
// name order from a name on, in one pass (dag/repo/storage/badger has it):
// a long walk then reads each of the store's blocks of records once
// instead of looking each record up.
type GraphScanner interface {
	MetaFrom(ctx context.Context, prefix, from string, fn func(name string, v []byte) error) error
}

// graphReader reads commits from a commit graph for one walk, checking
// each record it uses; a commit it cannot read from the graph is read from
// the block store. It learns the record numbers of the parents of each
// commit it reads, so a walk needs the index only where it starts. With a
// GraphScanner it reads records in one pass from where the walk is
// (records are numbered newest first in name order, as a walk goes),
// keeping those it passes that the walk has not asked for yet, up to
// maxPending; a record far from the pass, or already passed, is looked up.
type graphReader struct {
	gs   GraphStore
	hint map[objects.CID]uint64 // a commit's record number, from a child's record

	scan    GraphScanner
	next    func() (string, []byte, bool) // the pass in progress (nil: none)
	stop    func()
	cursor  uint64 // the number of the last record the pass read
	pending map[uint64][]byte
	reads   int // records asked for: the first few are looked up
}

const (
	maxPending = 4096
	// scanReach is how far ahead of the pass a record may be for the pass
	// to go on to it rather than start again there.
	scanReach = 256
	// scanAfter is how many records a walk reads by lookup before it
	// starts a pass (a short log reads a few).
	scanAfter = 16
)

// read returns c's commit from the graph, its bytes and the bundle hash
// its record holds (nil: none), or ok false when the graph has no usable
// record of it.
func (g *graphReader) read(ctx context.Context, c objects.CID) (*objects.Commit, []byte, *objects.BundleHash, bool) {
	seq, ok := g.hint[c]
	if ok {
		delete(g.hint, c)
	} else {
		v, found, err := g.gs.GetMeta(ctx, GraphIndexName(c))
		if err != nil || !found {
			return nil, nil, nil, false
		}
		if seq, ok = DecodeGraphIndex(v); !ok {
			return nil, nil, nil, false
		}
	}
	v, ok := g.record(ctx, seq)
	if !ok {
		return nil, nil, nil, false
	}
	rec, err := DecodeGraphRecord(v)
	if err != nil {
		return nil, nil, nil, false
	}
	id, cm, err := rec.Check()
	if err != nil || id != c {
		return nil, nil, nil, false
	}
	for i, p := range rec.ParentSeqs {
		if p != 0 {
			g.hint[cm.Parents[i]] = p - 1
		}
	}
	return cm, rec.Commit, rec.Bundle, true
}

// record returns record number seq's bytes.
func (g *graphReader) record(ctx context.Context, seq uint64) ([]byte, bool) {
	if v, ok := g.pending[seq]; ok {
		delete(g.pending, seq)
		return v, true
	}
	if g.reads++; g.scan != nil && g.reads > scanAfter {
		if g.next == nil || seq >= g.cursor || g.cursor-seq > scanReach {
			g.startPass(ctx, seq)
		}
		for {
			name, v, ok := g.next()
			if !ok {
				g.close()
				break
			}
			s, ok := GraphRecordSeq(name)
			if !ok {
				continue
			}
			g.cursor = s
			if s == seq {
				return v, true
			}
			if len(g.pending) >= maxPending {
				clear(g.pending)
			}
			g.pending[s] = v
			if s < seq {
				break // passed it: not in the graph
			}
		}
	}
	v, found, err := g.gs.GetMeta(ctx, GraphRecordName(seq))
	return v, err == nil && found
}

// startPass starts a pass over the records from number seq down.
func (g *graphReader) startPass(ctx context.Context, seq uint64) {
	g.close()
	if g.pending == nil {
		g.pending = map[uint64][]byte{}
	}
	g.next, g.stop = iter.Pull2(func(yield func(string, []byte) bool) {
		_ = g.scan.MetaFrom(ctx, GraphRecordPrefix, GraphRecordName(seq), func(name string, v []byte) error {
			if !yield(name, v) {
				return errStopPass
			}
			return nil
		})
	})
	g.cursor = seq + 1
}

var errStopPass = errors.New("pass stopped")

// close ends the pass in progress.
func (g *graphReader) close() {
	if g.stop != nil {
		g.stop()
	}
	g.next, g.stop = nil, nil
}

// commitReader is how a walk reads commits: from the commit cache, then
// the commit graph, then the block store.
type commitReader struct {
	bs    objects.BlockStore
	cache *CommitCache
	graph *graphReader
}

func newCommitReader(bs objects.BlockStore) *commitReader {
	rd := &commitReader{bs: bs}
	rd.cache, _ = bs.(*CommitCache)
	if rd.cache != nil && rd.cache.graph != nil {
		rd.graph = &graphReader{gs: rd.cache.graph, hint: map[objects.CID]uint64{}}
		rd.graph.scan, _ = rd.cache.graph.(GraphScanner)
	}
	return rd
}

// close ends what the reader holds open (a pass over the graph).
func (rd *commitReader) close() {
	if rd.graph != nil {
		rd.graph.close()
	}
}

// read returns commit c and the bundle hash of its tree when its
// commit-graph record held it (nil: not known here).
func (rd *commitReader) read(ctx context.Context, c objects.CID) (*objects.Commit, *objects.BundleHash, error) {
	if rd.graph == nil || c.Codec() != objects.CodecDagCBOR {
		cm, err := ReadCommit(ctx, rd.bs, c)
		return cm, nil, err
	}
	if cm, bundle, ok := rd.cache.getBundle(c); ok {
		return cm, bundle, nil
	}
	if cm, data, bundle, ok := rd.graph.read(ctx, c); ok {
		// Kept, as ReadCommit keeps what it reads: a served store's next
		// log, and the reads that follow a walk's (log --tasks reads each
		// task's commits again), find them in the cache.
		rd.cache.keepBundle(c, cm, data, bundle)
		return cm, bundle, nil
	}
	cm, err := ReadCommit(ctx, rd.bs, c)
	return cm, nil, err
}
