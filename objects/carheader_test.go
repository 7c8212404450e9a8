package objects_test

import (
	"bytes"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// The CARv1 header for one root, byte for byte: {"roots": [root], "version": 1}.
func TestCARHeaderBytes(t *testing.T) {
	root := objects.Sum(objects.CodecDagCBOR, []byte("commit"))
	raw := root.Bytes()
	want := []byte{0xa2, 0x65, 'r', 'o', 'o', 't', 's', 0x81, 0xd8, 0x2a, 0x58, byte(len(raw) + 1), 0x00}
	want = append(want, raw...)
	want = append(want, 0x67, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0x01)
	if got := objects.CARHeader(root); !bytes.Equal(got, want) {
		t.Fatalf("CARHeader = %x\nwant        %x", got, want)
	}
}
