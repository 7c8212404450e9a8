package objects

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

// TestGearTable derives the rolling hash's table from its definition: a
// changed entry would cut every value at other places, and give it other CIDs.
func TestGearTable(t *testing.T) {
	for i := range gear {
		h := sha256.Sum256(append([]byte("agentstate gear"), byte(i)))
		if want := binary.BigEndian.Uint64(h[:8]); gear[i] != want {
			t.Fatalf("gear[%d] = %#x, want %#x", i, gear[i], want)
		}
	}
}
