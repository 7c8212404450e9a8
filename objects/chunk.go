package objects

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Chunked values. Content longer than ChunkThreshold is not one raw block
// but a chunked file node (dag-cbor) over raw chunks:
//
//	file node:   {"size": uint, "chunks": [CID...], "sha256": bytes(32)}
//	list node:   {"size": uint, "chunks": [CID...]}
//
// "size" is the number of content bytes the node covers, "chunks" its parts
// in order (1 to MaxChunkLinks links, each a raw chunk or a list node), and
// "sha256" (file node only) the sha256 of the whole content, so the bundle
// hash never reads the chunks. Map keys are in canonical DAG-CBOR order
// (shorter first). SQLite databases are cut at their page boundaries (the
// page size is in the header); other content at content-defined boundaries
// of a gear rolling hash. Long link lists are grouped into list nodes at
// content-defined boundaries (a link whose digest's last byte is a multiple
// of 16 ends a group of two or more), so a change rewrites only the nodes above it.
// Every parameter below is part of the frozen format: changing one moves
// the CID of every chunked value.

// Chunking parameters (frozen).
const (
	ChunkThreshold = 1 << 20  // content longer than this is chunked
	MaxChunkLinks  = 64       // links per node, at most
	cdcMin         = 16 << 10 // content-defined chunks: at least 16 KiB,
	cdcMax         = 256 << 10
	cdcMask        = 1<<16 - 1 // a boundary every 64 KiB on average
	groupMask      = 15        // a link whose digest[31]&15 == 0 ends a group
)

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// SQLitePageSize returns the page size of an SQLite database file, or 0 when
// content is not one (or its length is not a whole number of pages).
func SQLitePageSize(content []byte) int {
	if ps := headerPageSize(content); ps > 0 && len(content)%ps == 0 {
		return ps
	}
	return 0
}

// headerPageSize is the page size the header of an SQLite database at the
// start of b gives, or 0: SQLitePageSize without the length check.
func headerPageSize(b []byte) int {
	if len(b) < 100 || !bytes.HasPrefix(b, sqliteMagic) {
		return 0
	}
	ps := int(binary.BigEndian.Uint16(b[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps&(ps-1) != 0 {
		return 0
	}
	return ps
}

// chunkBounds returns the end offsets of content's chunks.
func chunkBounds(content []byte) []int {
	if ps := SQLitePageSize(content); ps > 0 {
		ends := make([]int, 0, len(content)/ps)
		for off := ps; off <= len(content); off += ps {
			ends = append(ends, off)
		}
		return ends
	}
	var ends []int
	start := 0
	for start < len(content) {
		end := min(start+cdcMax, len(content))
		if end-start > cdcMin {
			var h uint64
			for i := start + cdcMin; i < end; i++ {
				h = h<<1 + gear[content[i]]
				if h&cdcMask == 0 {
					end = i + 1
					break
				}
			}
		}
		ends = append(ends, end)
		start = end
	}
	return ends
}

// NewFileValue returns the value of content and the blocks to store for it,
// the root last: one raw block when len(content) <= ChunkThreshold, else
// raw chunks, list nodes and the chunked file node. It is the one way
// content becomes a value, so equal content always gets the same CID.
// The blocks alias content.
func NewFileValue(content []byte) (CID, []Block) {
	if len(content) <= ChunkThreshold {
		b := NewValue(content)
		return b.CID, []Block{b}
	}
	ends := chunkBounds(content)
	blocks := make([]Block, 0, len(ends)+len(ends)/8+1)
	links := make([]chunkLink, 0, len(ends))
	start := 0
	for _, end := range ends {
		b := NewValue(content[start:end])
		blocks = append(blocks, b)
		links = append(links, chunkLink{b.CID, uint64(end - start)})
		start = end
	}
	for len(links) > MaxChunkLinks {
		var next []chunkLink
		group := 0
		for i, l := range links {
			d := l.cid.Digest()
			size := i - group + 1 // a group ends at a boundary link, never after one link alone
			if size == MaxChunkLinks || (size >= 2 && d[31]&groupMask == 0) || i == len(links)-1 {
				data := encodeChunkNode(links[group:i+1], nil)
				nb := Block{CID: Sum(CodecDagCBOR, data), Data: data}
				blocks = append(blocks, nb)
				next = append(next, chunkLink{nb.CID, sumSizes(links[group : i+1])})
				group = i + 1
			}
		}
		links = next
	}
	sum := sha256.Sum256(content)
	data := encodeChunkNode(links, sum[:])
	root := Block{CID: Sum(CodecDagCBOR, data), Data: data}
	return root.CID, append(blocks, root)
}

type chunkLink struct {
	cid  CID
	size uint64
}

func sumSizes(ls []chunkLink) uint64 {
	var n uint64
	for _, l := range ls {
		n += l.size
	}
	return n
}

// encodeChunkNode writes a file node (sum != nil) or a list node.
func encodeChunkNode(links []chunkLink, sum []byte) []byte {
	b := make([]byte, 0, 32+len(links)*41)
	if sum != nil {
		b = appendHead(b, majMap, 3)
	} else {
		b = appendHead(b, majMap, 2)
	}
	b = appendText(b, "size")
	b = appendHead(b, majUint, sumSizes(links))
	b = appendText(b, "chunks")
	b = appendHead(b, majArray, uint64(len(links)))
	for _, l := range links {
		b = appendCID(b, l.cid)
	}
	if sum != nil {
		b = appendText(b, "sha256")
		b = appendBytes(b, sum)
	}
	return b
}

// ChunkNode is a decoded chunked file node or list node.
type ChunkNode struct {
	Size   uint64
	Chunks []CID
	SHA256 []byte // 32 bytes in a file node, nil in a list node
}

// DecodeChunkNode parses a chunked file node or list node strictly:
// canonical bytes only, 1 to MaxChunkLinks links of codec raw or dag-cbor.
func DecodeChunkNode(data []byte) (*ChunkNode, error) {
	r := &reader{b: data}
	n, err := r.expect(majMap)
	if err != nil {
		return nil, err
	}
	if n != 2 && n != 3 {
		return nil, r.fail("chunk node map has %d keys, want 2 or 3", n)
	}
	var cn ChunkNode
	if err := r.key("size"); err != nil {
		return nil, err
	}
	if cn.Size, err = r.uint(); err != nil {
		return nil, err
	}
	if err := r.key("chunks"); err != nil {
		return nil, err
	}
	nl, err := r.expect(majArray)
	if err != nil {
		return nil, err
	}
	if nl == 0 || nl > MaxChunkLinks {
		return nil, r.fail("chunk node has %d links, want 1 to %d", nl, MaxChunkLinks)
	}
	cn.Chunks = make([]CID, 0, nl)
	for range nl {
		c, err := r.cid()
		if err != nil {
			return nil, err
		}
		cn.Chunks = append(cn.Chunks, c)
	}
	if n == 3 {
		if err := r.key("sha256"); err != nil {
			return nil, err
		}
		if cn.SHA256, err = r.bytes(); err != nil {
			return nil, err
		}
		if len(cn.SHA256) != 32 {
			return nil, r.fail("sha256 has %d bytes, want 32", len(cn.SHA256))
		}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	// Re-encode and compare (sizes are re-derived from the node's own field).
	chk := appendHead(nil, majMap, n)
	chk = appendText(chk, "size")
	chk = appendHead(chk, majUint, cn.Size)
	chk = appendText(chk, "chunks")
	chk = appendHead(chk, majArray, uint64(len(cn.Chunks)))
	for _, c := range cn.Chunks {
		chk = appendCID(chk, c)
	}
	if n == 3 {
		chk = appendText(chk, "sha256")
		chk = appendBytes(chk, cn.SHA256)
	}
	if !bytes.Equal(chk, data) {
		return nil, fmt.Errorf("%w: chunk node bytes do not re-encode to themselves", ErrNonCanonical)
	}
	return &cn, nil
}

// ChunkLinks returns the links of a chunk node (used by reachability walks).
func ChunkLinks(data []byte) ([]CID, error) {
	cn, err := DecodeChunkNode(data)
	if err != nil {
		return nil, err
	}
	return cn.Chunks, nil
}

// readFileNode reads the chunked file node v (CheckChunkNode: a file node,
// not a list node, of at most MaxValueSize bytes).
func readFileNode(ctx context.Context, bs BlockStore, v CID) (*ChunkNode, error) {
	data, err := bs.Get(ctx, v)
	if err != nil {
		return nil, fmt.Errorf("objects: reading chunked value %s: %w", v, err)
	}
	cn, _, err := CheckChunkNode(ChunkSpot{CID: v}, data)
	if err != nil {
		return nil, fmt.Errorf("chunked value %s: %w", v, err)
	}
	return cn, nil
}

// ListNodeSize returns the size a chunk list node records, and whether
// data is one: a block that DecodeChunkNode accepts and that has no sha256
// (a file node has). Bytes that do not start as a list node does are
// passed over without decoding.
func ListNodeSize(data []byte) (uint64, bool) {
	if len(data) < 7 || data[0] != 0xa2 || string(data[1:6]) != "\x64size" {
		return 0, false
	}
	cn, err := DecodeChunkNode(data)
	if err != nil || cn.SHA256 != nil {
		return 0, false
	}
	return cn.Size, true
}
