// Package objectstest builds blocks for tests: tree nodes and chunk nodes
// encoded as given, canonical bytes whether or not they make a canonical
// tree or value, so that tests can hand a store, a sync or an import the
// trees a hostile sender would.
package objectstest

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/agentstate/agentstate/objects"
)

// Entry is one entry of a tree node: its key, its value and the subtree to
// its right (zero: none).
type Entry struct {
	Key   string
	Value objects.CID
	Right objects.CID
}

// TreeNode encodes the tree node {e: entries, l: left} in the store's
// encoding (keys prefix-compressed against the one before).
func TreeNode(left objects.CID, entries ...Entry) objects.Block {
	b := head(nil, 5, 2)
	b = text(b, "e")
	b = head(b, 4, uint64(len(entries)))
	prev := ""
	for _, e := range entries {
		p := 0
		for p < len(prev) && p < len(e.Key) && prev[p] == e.Key[p] {
			p++
		}
		b = head(b, 5, 4)
		b = text(b, "k")
		b = head(b, 2, uint64(len(e.Key)-p))
		b = append(b, e.Key[p:]...)
		b = text(b, "p")
		b = head(b, 0, uint64(p))
		b = text(b, "t")
		b = link(b, e.Right)
		b = text(b, "v")
		b = link(b, e.Value)
		prev = e.Key
	}
	b = text(b, "l")
	b = link(b, left)
	return objects.Block{CID: objects.Sum(objects.CodecDagCBOR, b), Data: b}
}

// ChunkNode encodes a chunk node {size, chunks[, sha256]} as given: a file
// node when sum is not nil, else a list node.
func ChunkNode(chunks []objects.CID, size uint64, sum []byte) objects.Block {
	n := uint64(2)
	if sum != nil {
		n = 3
	}
	b := head(nil, 5, n)
	b = text(b, "size")
	b = head(b, 0, size)
	b = text(b, "chunks")
	b = head(b, 4, uint64(len(chunks)))
	for _, c := range chunks {
		b = link(b, c)
	}
	if sum != nil {
		b = text(b, "sha256")
		b = head(b, 2, uint64(len(sum)))
		b = append(b, sum...)
	}
	return objects.Block{CID: objects.Sum(objects.CodecDagCBOR, b), Data: b}
}

// Commit returns the block of a commit of tree with no parents.
func Commit(tree objects.CID, message string) objects.Block {
	b, err := (&objects.Commit{Tree: tree, Time: 1_700_000_000, Message: message}).Block()
	if err != nil {
		panic(err)
	}
	return b
}

// KeyAt returns the first key prefix+"<n>" (n counting from 0) at layer l.
func KeyAt(prefix string, l int) string {
	for n := 0; ; n++ {
		k := fmt.Sprintf("%s%d", prefix, n)
		if objects.KeyLayer(k) == l {
			return k
		}
	}
}

// A Hostile is the blocks of one history a hostile sender offers: Head, a
// commit, and every block it reaches.
type Hostile struct {
	Head   objects.CID
	Blocks []objects.Block // children before parents, the commit last
}

func withCommit(name string, blocks []objects.Block, tree objects.CID) Hostile {
	c := Commit(tree, name)
	return Hostile{Head: c.CID, Blocks: append(blocks, c)}
}

// DeepChain is a tree of depth nodes: a root holding one key of layer 1
// whose left subtree is a chain of nodes with no keys, each the left link of
// the one above, ending in a node of one key. The reader refuses it at its
// second node (layer 0 holds no subtrees); a walk that recursed down it
// would need a stack as deep as the chain.
func DeepChain(depth int) Hostile {
	v := objects.NewValue([]byte("deep"))
	blocks := []objects.Block{v}
	cur := TreeNode(objects.CID{}, Entry{Key: KeyAt("a", 0), Value: v.CID})
	blocks = append(blocks, cur)
	for range depth - 2 {
		cur = TreeNode(cur.CID)
		blocks = append(blocks, cur)
	}
	root := TreeNode(cur.CID, Entry{Key: KeyAt("z", 1), Value: v.CID})
	return withCommit("deep chain", append(blocks, root), root.CID)
}

// EmptyRootWithSubtree is a tree whose root holds no key but a subtree.
func EmptyRootWithSubtree() Hostile {
	v := objects.NewValue([]byte("x"))
	leaf := TreeNode(objects.CID{}, Entry{Key: KeyAt("k", 0), Value: v.CID})
	root := TreeNode(leaf.CID)
	return withCommit("empty root with a subtree", []objects.Block{v, leaf, root}, root.CID)
}

// MisplacedLayer is a tree whose root, of a key at layer 2, links as its
// left subtree (layer 1) a node of layer-0 keys.
func MisplacedLayer() Hostile {
	v := objects.NewValue([]byte("x"))
	leaf := TreeNode(objects.CID{}, Entry{Key: KeyAt("a", 0), Value: v.CID})
	root := TreeNode(leaf.CID, Entry{Key: KeyAt("z", 2), Value: v.CID})
	return withCommit("key at the wrong layer", []objects.Block{v, leaf, root}, root.CID)
}

// MisplacedRange is a tree of the right layers whose root's left subtree
// holds a key that sorts after the root's key: the reader, looking for it
// to the root key's right, never finds it.
func MisplacedRange() Hostile {
	v := objects.NewValue([]byte("x"))
	leaf := TreeNode(objects.CID{}, Entry{Key: KeyAt("z", 0), Value: v.CID})
	root := TreeNode(leaf.CID, Entry{Key: KeyAt("a", 1), Value: v.CID})
	return withCommit("key outside its range", []objects.Block{v, leaf, root}, root.CID)
}

// NestedChunks is a tree of one key whose value is a chunked file node over
// depth chunk list nodes nested in one another, over one raw chunk.
func NestedChunks(depth int) Hostile {
	content := []byte("nested")
	chunk := objects.NewValue(content)
	blocks := []objects.Block{chunk}
	cur := chunk.CID
	for range depth {
		l := ChunkNode([]objects.CID{cur}, uint64(len(content)), nil)
		blocks = append(blocks, l)
		cur = l.CID
	}
	sum := sha256.Sum256(content)
	file := ChunkNode([]objects.CID{cur}, uint64(len(content)), sum[:])
	root := TreeNode(objects.CID{}, Entry{Key: "f", Value: file.CID})
	return withCommit("nested chunk lists", append(blocks, file, root), root.CID)
}

func head(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, m|27), n)
	}
}

func text(b []byte, s string) []byte { return append(head(b, 3, uint64(len(s))), s...) }

func link(b []byte, c objects.CID) []byte {
	if c.IsZero() {
		return append(b, 0xf6)
	}
	raw := c.Bytes()
	b = head(b, 6, 42)
	b = head(b, 2, uint64(len(raw)+1))
	return append(append(b, 0), raw...)
}
