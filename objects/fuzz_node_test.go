package objects_test

import (
	"context"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

func FuzzDecodeNode(f *testing.F) {
	bs := memstore.New()
	m := map[string]string{}
	for i := range 100 {
		m[keyN(i)] = keyN(i)
	}
	build(f, bs, m, keysOf(m))
	for c := range bs.AllCIDs(context.Background()) {
		if c.Codec() == objects.CodecDagCBOR {
			data, _ := bs.Get(context.Background(), c)
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = objects.DecodeNodeForTest(data) // must not panic; canonical check inside
	})
}
