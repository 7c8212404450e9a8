// Command hostilecar writes the CAR files a hostile sender would, to
// measure what importing them costs (docs/security.md, docs/snapshot.md):
//
//	go run ./internal/cmd/hostilecar -kind tiny -n 3000000 > tiny.car
//	/usr/bin/time -v bin/agentstate --store S import tiny.car
//
// Kinds: tiny, a commit of the empty tree followed by n distinct raw blocks
// of 4 bytes that nothing reaches; chain, a commit of a tree whose root's
// left subtree is a chain of n nodes (objectstest.DeepChain); wide, a
// canonical tree of n keys with tiny values (n values and about n/15 tree
// nodes, a CAR that imports).
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
	"github.com/agentstate/agentstate/objects/objectstest"
)

func main() {
	kind := flag.String("kind", "tiny", "tiny, chain or wide")
	n := flag.Int("n", 3_000_000, "blocks (tiny), nodes (chain) or keys (wide)")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	frame := func(b objects.Block) {
		raw := b.CID.Bytes()
		var l [binary.MaxVarintLen64]byte
		w.Write(l[:binary.PutUvarint(l[:], uint64(len(raw)+len(b.Data)))])
		w.Write(raw)
		w.Write(b.Data)
	}
	header := func(root objects.CID) {
		h := objects.CARHeader(root)
		var l [binary.MaxVarintLen64]byte
		w.Write(l[:binary.PutUvarint(l[:], uint64(len(h)))])
		w.Write(h)
	}
	switch *kind {
	case "tiny":
		c := objectstest.Commit(objects.EmptyTreeCID, "tiny blocks")
		header(c.CID)
		frame(c)
		frame(objects.Block{CID: objects.EmptyTreeCID, Data: []byte{0xa2, 0x61, 0x65, 0x80, 0x61, 0x6c, 0xf6}})
		for i := range *n {
			frame(objects.NewValue(binary.BigEndian.AppendUint32(nil, uint32(i))))
		}
	case "chain":
		h := objectstest.DeepChain(*n)
		header(h.Head)
		for i := len(h.Blocks) - 1; i >= 0; i-- {
			frame(h.Blocks[i])
		}
	case "wide":
		ctx := context.Background()
		bs := memstore.New()
		tr := objects.NewTree(bs)
		var vals []objects.Block
		for i := range *n {
			v := objects.NewValue(binary.BigEndian.AppendUint32(nil, uint32(i)))
			vals = append(vals, v)
			if _, err := tr.Put(ctx, fmt.Sprintf("k/%08d", i), v.CID); err != nil {
				fail(err)
			}
		}
		root, nodes := tr.Flush()
		c := objectstest.Commit(root, "wide tree")
		header(c.CID)
		frame(c)
		for i := len(nodes) - 1; i >= 0; i-- {
			frame(nodes[i])
		}
		for _, v := range vals {
			frame(v)
		}
	default:
		fail(fmt.Errorf("unknown kind %q", *kind))
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hostilecar:", err)
	os.Exit(1)
}
