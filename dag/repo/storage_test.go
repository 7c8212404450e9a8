package repo_test

import (
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
)

// Both implementations provide every interface and every optional ability.
var (
	_ repo.Storage      = (*badger.Store)(nil)
	_ repo.Storage      = (*memory.Storage)(nil)
	_ repo.PrefixFinder = (*badger.Store)(nil)
	_ repo.PrefixFinder = (*memory.Storage)(nil)
	_ repo.Reclaimer    = (*badger.Store)(nil)
)
