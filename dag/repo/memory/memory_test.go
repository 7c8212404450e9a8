package memory_test

import (
	"testing"

	"github.com/agentstate/agentstate/dag/repo/memory"
	"github.com/agentstate/agentstate/dag/repo/storagetest"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/blockstoretest"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
)

func TestConformance(t *testing.T) {
	t.Run("Blocks", func(t *testing.T) {
		blockstoretest.Run(t, func(t *testing.T) (objects.BlockStore, func(objects.CID, []byte)) {
			s := memory.New()
			return s, s.Corrupt
		})
	})
	t.Run("Refs", func(t *testing.T) {
		storagetest.RefStore(t, func(t *testing.T) refs.Store { return memory.New() })
	})
	t.Run("Tape", func(t *testing.T) {
		storagetest.Tape(t, func(t *testing.T) tape.Store { return memory.New() })
	})
	t.Run("Meta", func(t *testing.T) {
		storagetest.Meta(t, func(t *testing.T) storagetest.MetaStore { return memory.New() })
	})
}
