package objects_test

import (
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// Short is always the first objects.ShortLen characters of String.
func TestShortIsPrefixOfString(t *testing.T) {
	for i := range 2000 {
		data := []byte(fmt.Sprint("short ", i))
		for _, codec := range []uint64{objects.CodecRaw, objects.CodecDagCBOR} {
			c := objects.Sum(codec, data)
			if got, want := c.Short(), c.String()[:objects.ShortLen]; got != want {
				t.Fatalf("Short %q, String starts %q", got, want)
			}
		}
	}
	if (objects.CID{}).Short() != "" {
		t.Fatal("the zero CID's short form is not empty")
	}
}
