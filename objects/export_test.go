package objects

// Exported for tests of the node decoder.
var DecodeNodeForTest = func(data []byte) error { _, _, err := decodeNode(data); return err }
