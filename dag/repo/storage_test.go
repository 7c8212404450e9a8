package repo_test

import (
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/memory"
	"github.com/agentstate/agentstate/internal/store"
)

// Both implementations provide every interface and every optional ability.
var (
	_ repo.Storage      = (*store.Store)(nil)
	_ repo.Storage      = (*memory.Storage)(nil)
	_ repo.PrefixFinder = (*store.Store)(nil)
	_ repo.PrefixFinder = (*memory.Storage)(nil)
	_ repo.Reclaimer    = (*store.Store)(nil)
)
