package objects

// Exported for tests of the node decoder.
var DecodeNodeForTest = func(data []byte) error { _, _, err := decodeNode(data); return err }

// ReencodeNodeForTest decodes a tree node and encodes what it read again:
// a node the decoder accepts must give back its own bytes.
func ReencodeNodeForTest(data []byte) ([]byte, error) {
	left, entries, err := decodeNode(data)
	if err != nil {
		return nil, err
	}
	n := &node{loaded: true, left: stub(left)}
	for _, e := range entries {
		n.entries = append(n.entries, entry{key: e.key, val: e.val, right: stub(e.right)})
	}
	return encodeNode(n), nil
}

// SetLayerBitsForBenchmark changes the fanout (2^bits) and returns a function
// restoring it. Only the fanout sweep uses it: every other value breaks the
// frozen format.
func SetLayerBitsForBenchmark(bits int) func() {
	old := layerBits
	layerBits = bits
	return func() { layerBits = old }
}

// EncodeNodeForTest encodes a tree node of keys with values and no subtrees
// below the keys, and left as its left link: hostile trees for the tests.
func EncodeNodeForTest(left CID, keys []string, val CID) []byte {
	n := &node{}
	if !left.IsZero() {
		n.left = &node{cid: left}
	}
	for _, k := range keys {
		n.entries = append(n.entries, entry{key: k, val: val})
	}
	return encodeNode(n)
}
