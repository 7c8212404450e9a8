package memstore_test

import (
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/blockstoretest"
	"github.com/agentstate/agentstate/objects/memstore"
)

func TestConformance(t *testing.T) {
	blockstoretest.Run(t, func(t *testing.T) (objects.BlockStore, func(objects.CID, []byte)) {
		s := memstore.New()
		return s, s.Corrupt
	})
}
