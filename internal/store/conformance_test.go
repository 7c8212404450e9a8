package store_test

import (
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storagetest"
	"github.com/agentstate/agentstate/internal/store"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
)

func create(t *testing.T) *store.Store {
	s, err := store.Create(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRefStoreConformance(t *testing.T) {
	storagetest.RefStore(t, func(t *testing.T) refs.Store { return create(t) })
}

func TestTapeStoreConformance(t *testing.T) {
	storagetest.Tape(t, func(t *testing.T) tape.Store { return create(t) })
}

func TestMetaStoreConformance(t *testing.T) {
	storagetest.Meta(t, func(t *testing.T) storagetest.MetaStore { return create(t) })
}
