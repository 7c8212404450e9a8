package objects

// Exported for tests of the node decoder.
var DecodeNodeForTest = func(data []byte) error { _, _, err := decodeNode(data); return err }

// SetLayerBitsForBenchmark changes the fanout (2^bits) and returns a function
// restoring it. Only the fanout sweep uses it: every other value breaks the
// frozen format.
func SetLayerBitsForBenchmark(bits int) func() {
	old := layerBits
	layerBits = bits
	return func() { layerBits = old }
}
