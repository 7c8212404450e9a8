package objects

// EncodeChunkNodeForTest encodes a chunk node with the given fields as they
// are, so tests can forge nodes whose size or sha256 lies.
func EncodeChunkNodeForTest(chunks []CID, size uint64, sum []byte) []byte {
	n := uint64(2)
	if sum != nil {
		n = 3
	}
	b := appendHead(nil, majMap, n)
	b = appendText(b, "size")
	b = appendHead(b, majUint, size)
	b = appendText(b, "chunks")
	b = appendHead(b, majArray, uint64(len(chunks)))
	for _, c := range chunks {
		b = appendCID(b, c)
	}
	if sum != nil {
		b = appendText(b, "sha256")
		b = appendBytes(b, sum)
	}
	return b
}
