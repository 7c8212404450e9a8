package snapshot

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// carHeader encodes the CARv1 header {"roots": [root], "version": 1} as
// canonical DAG-CBOR.
func carHeader(root objects.CID) []byte {
	raw := root.Bytes()
	b := []byte{0xa2, 0x65, 'r', 'o', 'o', 't', 's', 0x81, 0xd8, 0x2a, 0x58, byte(len(raw) + 1), 0x00}
	b = append(b, raw...)
	return append(b, 0x67, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0x01)
}

// CARStats counts what WriteCAR wrote.
type CARStats struct {
	Blocks int
	Bytes  int64
}

// WriteCAR writes a CARv1 file whose root is commit and which holds every
// block reachable from it: the commit, its ancestors, their tree nodes and
// values. Each block appears once; a commit comes before its tree, a tree
// node before its children and values.
func WriteCAR(ctx context.Context, w io.Writer, bs objects.BlockStore, commit objects.CID) (CARStats, error) {
	var st CARStats
	bw := bufio.NewWriterSize(w, 1<<20)
	put := func(b []byte) error {
		var n [binary.MaxVarintLen64]byte
		k := binary.PutUvarint(n[:], uint64(len(b)))
		if _, err := bw.Write(n[:k]); err != nil {
			return err
		}
		_, err := bw.Write(b)
		st.Bytes += int64(k + len(b))
		return err
	}
	if err := put(carHeader(commit)); err != nil {
		return st, err
	}
	seen := map[objects.CID]bool{}
	block := func(c objects.CID, data []byte) error {
		st.Blocks++
		var n [binary.MaxVarintLen64]byte
		raw := c.Bytes()
		k := binary.PutUvarint(n[:], uint64(len(raw)+len(data)))
		if _, err := bw.Write(n[:k]); err != nil {
			return err
		}
		if _, err := bw.Write(raw); err != nil {
			return err
		}
		_, err := bw.Write(data)
		st.Bytes += int64(k + len(raw) + len(data))
		return err
	}
	var walkTree func(c objects.CID) error
	walkTree = func(c objects.CID) error {
		if seen[c] {
			return nil
		}
		seen[c] = true
		data, err := bs.Get(ctx, c)
		if err != nil {
			return fmt.Errorf("snapshot: CAR: tree node %s: %w", c, err)
		}
		if err := block(c, data); err != nil {
			return err
		}
		subs, vals, err := objects.NodeLinks(data)
		if err != nil {
			return err
		}
		for len(vals) > 0 {
			v := vals[0]
			vals = vals[1:]
			if seen[v] {
				continue
			}
			seen[v] = true
			vd, err := bs.Get(ctx, v)
			if err != nil {
				return fmt.Errorf("snapshot: CAR: value %s: %w", v, err)
			}
			if err := block(v, vd); err != nil {
				return err
			}
			if v.Codec() == objects.CodecDagCBOR { // a chunked value: its chunks and list nodes follow it
				links, err := objects.ChunkLinks(vd)
				if err != nil {
					return fmt.Errorf("snapshot: CAR: chunked value %s: %w", v, err)
				}
				vals = append(links, vals...)
			}
		}
		for _, s := range subs {
			if err := walkTree(s); err != nil {
				return err
			}
		}
		return nil
	}
	queue := []objects.CID{commit}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		c := queue[0]
		queue = queue[1:]
		if seen[c] {
			continue
		}
		seen[c] = true
		data, err := bs.Get(ctx, c)
		if err != nil {
			return st, fmt.Errorf("snapshot: CAR: commit %s: %w", c, err)
		}
		cm, err := objects.DecodeCommit(data)
		if err != nil {
			return st, fmt.Errorf("%w: %s: %v", dag.ErrNotCommit, c, err)
		}
		if err := block(c, data); err != nil {
			return st, err
		}
		if err := walkTree(cm.Tree); err != nil {
			return st, err
		}
		queue = append(queue, cm.Parents...)
	}
	return st, bw.Flush()
}
