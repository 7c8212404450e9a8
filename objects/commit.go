package objects

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"
)

// CommitVersion is the value of a commit's "v" field.
const CommitVersion = 1

// Commit is one state of an agent's brain: a tree, its parents (none for a
// root, one normally, two for a merge; the first is the mainline), a time in
// seconds since the Unix epoch, a message and optional string metadata (task
// id, attempt id, model, adapter, agent id, ...).
type Commit struct {
	Tree     CID
	Parents  []CID
	Time     int64
	Message  string
	Metadata map[string]string
}

// cborKeyCompare orders map keys the DAG-CBOR way: shorter first, then bytewise.
func cborKeyCompare(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return bytesCompare(a, b)
}

func bytesCompare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (c *Commit) validate() error {
	if c.Tree.IsZero() || c.Tree.Codec() != CodecDagCBOR {
		return fmt.Errorf("%w: commit tree %q is not a dag-cbor CID", ErrBadObject, c.Tree)
	}
	// A commit has one or two parents: comparing each with those before it
	// costs less than a set (every commit a log walks is checked). A set
	// past a few, so that a block listing many costs time in proportion.
	var seen map[CID]bool
	if len(c.Parents) > 8 {
		seen = make(map[CID]bool, len(c.Parents))
	}
	for i, p := range c.Parents {
		if p.IsZero() || p.Codec() != CodecDagCBOR {
			return fmt.Errorf("%w: commit parent %q is not a dag-cbor CID", ErrBadObject, p)
		}
		if seen != nil && seen[p] || seen == nil && slices.Contains(c.Parents[:i], p) {
			return fmt.Errorf("%w: commit lists parent %s twice", ErrBadObject, p)
		}
		if seen != nil {
			seen[p] = true
		}
	}
	if c.Time < 0 {
		return fmt.Errorf("%w: commit time %d is negative", ErrBadObject, c.Time)
	}
	if !utf8.ValidString(c.Message) {
		return fmt.Errorf("%w: commit message is not valid UTF-8", ErrBadObject)
	}
	for k, v := range c.Metadata {
		if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("%w: commit metadata key %q or its value is empty or not valid UTF-8", ErrBadObject, k)
		}
	}
	return nil
}

// Encode returns the canonical DAG-CBOR bytes of c:
//
//	{"v": 1, "time": int, "tree": CID, "message": text, "parents": [CID...], "metadata"?: {text: text}}
//
// with keys in that (canonical) order and "metadata" omitted when empty.
func (c *Commit) Encode() ([]byte, error) {
	return c.appendEncoded(make([]byte, 0, 128+len(c.Message)+40*len(c.Parents)))
}

// appendEncoded appends Encode's bytes to b.
func (c *Commit) appendEncoded(b []byte) ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	n := 5
	if len(c.Metadata) > 0 {
		n = 6
	}
	b = appendHead(b, majMap, uint64(n))
	b = appendText(b, "v")
	b = appendHead(b, majUint, CommitVersion)
	b = appendText(b, "time")
	b = appendHead(b, majUint, uint64(c.Time))
	b = appendText(b, "tree")
	b = appendCID(b, c.Tree)
	b = appendText(b, "message")
	b = appendText(b, c.Message)
	b = appendText(b, "parents")
	b = appendHead(b, majArray, uint64(len(c.Parents)))
	for _, p := range c.Parents {
		b = appendCID(b, p)
	}
	if n == 6 {
		b = appendText(b, "metadata")
		b = appendHead(b, majMap, uint64(len(c.Metadata)))
		// The keys in DAG-CBOR order, sorted where they are kept for a
		// commit's few (no allocation for up to eight).
		var small [8]string
		keys := small[:0]
		for k := range c.Metadata {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, cborKeyCompare)
		for _, k := range keys {
			b = appendText(b, k)
			b = appendText(b, c.Metadata[k])
		}
	}
	return b, nil
}

// Block returns the commit's block (CID and canonical bytes).
func (c *Commit) Block() (Block, error) {
	data, err := c.Encode()
	if err != nil {
		return Block{}, err
	}
	return Block{CID: Sum(CodecDagCBOR, data), Data: data}, nil
}

// DecodeCommit parses canonical commit bytes. Anything that does not
// re-encode to exactly the same bytes is refused with ErrNonCanonical or
// ErrBadObject.
func DecodeCommit(data []byte) (*Commit, error) {
	// One copy of the bytes holds every string and CID decoded from them.
	r := &reader{b: data, s: string(data)}
	n, err := r.expect(majMap)
	if err != nil {
		return nil, err
	}
	if n != 5 && n != 6 {
		return nil, r.fail("commit map has %d keys, want 5 or 6", n)
	}
	c := &Commit{}
	if err := r.key("v"); err != nil {
		return nil, err
	}
	v, err := r.uint()
	if err != nil {
		return nil, err
	}
	if v != CommitVersion {
		return nil, r.fail("commit version %d, this build reads version %d", v, CommitVersion)
	}
	if err := r.key("time"); err != nil {
		return nil, err
	}
	t, err := r.uint()
	if err != nil {
		return nil, err
	}
	if t > 1<<62 {
		return nil, r.fail("commit time %d out of range", t)
	}
	c.Time = int64(t)
	if err := r.key("tree"); err != nil {
		return nil, err
	}
	if c.Tree, err = r.cid(); err != nil {
		return nil, err
	}
	if err := r.key("message"); err != nil {
		return nil, err
	}
	if c.Message, err = r.text(); err != nil {
		return nil, err
	}
	if err := r.key("parents"); err != nil {
		return nil, err
	}
	np, err := r.expect(majArray)
	if err != nil {
		return nil, err
	}
	if np > uint64(len(data)) {
		return nil, r.fail("parent count %d exceeds input", np)
	}
	for i := uint64(0); i < np; i++ {
		p, err := r.cid()
		if err != nil {
			return nil, err
		}
		c.Parents = append(c.Parents, p)
	}
	if n == 6 {
		if err := r.key("metadata"); err != nil {
			return nil, err
		}
		nm, err := r.expect(majMap)
		if err != nil {
			return nil, err
		}
		if nm > uint64(len(data)) {
			return nil, r.fail("metadata size %d exceeds input", nm)
		}
		c.Metadata = make(map[string]string, nm)
		for i := uint64(0); i < nm; i++ {
			k, err := r.text()
			if err != nil {
				return nil, err
			}
			v, err := r.text()
			if err != nil {
				return nil, err
			}
			c.Metadata[k] = v
		}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	// Encoded again into a buffer on the stack when the commit fits (a
	// walk decodes one per commit).
	var stack [512]byte
	again, err := c.appendEncoded(stack[:0])
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, data) {
		return nil, fmt.Errorf("%w: commit bytes do not re-encode to themselves", ErrNonCanonical)
	}
	return c, nil
}
