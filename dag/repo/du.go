package repo

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// Usage is what a store's bytes hold: the store as a whole, and one agent's
// history commit by commit and key by key.
type Usage struct {
	Store   StoreUsage    `json:"store"`
	Agent   string        `json:"agent,omitempty"`
	Commits []CommitUsage `json:"commits"`
	Keys    []KeyUsage    `json:"keys"`
}

// StoreUsage counts every block: those something kept reaches (live) and
// those gc would delete (reclaimable). Bytes are block bytes, before the
// store's own compression and overhead.
type StoreUsage struct {
	Blocks           int   `json:"blocks"`
	Bytes            int64 `json:"bytes"`
	LiveBlocks       int   `json:"liveBlocks"`
	LiveBytes        int64 `json:"liveBytes"`
	ReclaimableBytes int64 `json:"reclaimableBytes"`
	Reclaimable      int   `json:"reclaimable"`
}

// CommitUsage is one commit: Size is every byte its tree holds (nodes and
// values), Added the bytes of blocks no older commit of the history had,
// Shared the rest (Size - Added).
type CommitUsage struct {
	CID     objects.CID `json:"cid"`
	Time    int64       `json:"time"`
	Message string      `json:"message"`
	Size    int64       `json:"size"`
	Added   int64       `json:"added"`
	Shared  int64       `json:"shared"`
}

// KeyUsage is one key over the history: how many distinct values it had and
// their bytes (its growth), and the size of its value at HEAD (0: deleted).
type KeyUsage struct {
	Key      string `json:"key"`
	Versions int    `json:"versions"`
	Bytes    int64  `json:"bytes"`
	Current  int64  `json:"current"`
}

// DiskUsage measures the store and, when agent is not "", its history
// (walking no link a forget cut), newest commit first.
func (r *Repo) DiskUsage(ctx context.Context, agent string) (Usage, error) {
	var u Usage
	reach, _, err := r.walkAll(ctx, dag.WalkOptions{}, nil)
	if err != nil {
		return u, err
	}
	sizes := map[objects.CID]int64{}
	if lister, ok := r.Storage.(objects.BlockLister); ok {
		for c, err := range lister.AllCIDs(ctx) {
			if err != nil {
				return u, err
			}
			data, err := r.Blocks.Get(ctx, c)
			if err != nil {
				return u, err
			}
			n := int64(len(data))
			sizes[c] = n
			u.Store.Blocks++
			u.Store.Bytes += n
			if _, live := reach[c]; live {
				u.Store.LiveBlocks++
				u.Store.LiveBytes += n
			} else {
				u.Store.Reclaimable++
				u.Store.ReclaimableBytes += n
			}
		}
	}
	if agent == "" {
		return u, nil
	}
	u.Agent = agent
	h, err := r.Refs.Head(ctx, agent)
	if err != nil {
		return u, err
	}
	lo, _, err := r.LogOptions(ctx, agent)
	if err != nil {
		return u, err
	}
	var history []dag.LogEntry
	for le, err := range dag.LogWith(ctx, r.Blocks, h.Commit, lo) {
		if err != nil {
			return u, err
		}
		history = append(history, le)
	}
	size := func(c objects.CID) (int64, error) {
		if n, ok := sizes[c]; ok {
			return n, nil
		}
		data, err := r.Blocks.Get(ctx, c)
		if err != nil {
			return 0, err
		}
		sizes[c] = int64(len(data))
		return sizes[c], nil
	}
	// valueSize is every byte of a value: its block, or its chunk node and
	// chunks.
	valueSizes := map[objects.CID]int64{}
	// The recursions below follow the store's own blocks, checked where they
	// came in; depth bounds them all the same (a store may hold what an
	// older version took in unchecked).
	tooDeep := func(c objects.CID) error {
		return &objects.TreeError{Node: c, Reason: fmt.Sprintf("is below a path deeper than %d nodes", objects.MaxTreeDepth)}
	}
	var valueSize func(v objects.CID, depth int) (int64, []objects.CID, error)
	valueSize = func(v objects.CID, depth int) (int64, []objects.CID, error) {
		if depth > objects.MaxChunkDepth {
			return 0, nil, &objects.ChunkError{Node: v, Reason: fmt.Sprintf("chunk list nodes nested deeper than %d", objects.MaxChunkDepth)}
		}
		n, err := size(v)
		if err != nil {
			return 0, nil, err
		}
		blocks := []objects.CID{v}
		if v.Codec() == objects.CodecDagCBOR {
			data, err := r.Blocks.Get(ctx, v)
			if err != nil {
				return 0, nil, err
			}
			links, err := objects.ChunkLinks(data)
			if err != nil {
				return 0, nil, err
			}
			for _, l := range links {
				m, bs, err := valueSize(l, depth+1)
				if err != nil {
					return 0, nil, err
				}
				n += m
				blocks = append(blocks, bs...)
			}
		}
		valueSizes[v] = n
		return n, blocks, nil
	}
	// subtree sizes, memoised per node (content addressed: a node's size
	// never changes).
	treeSizes := map[objects.CID]int64{}
	var treeSize func(t objects.CID, depth int) (int64, error)
	treeSize = func(t objects.CID, depth int) (int64, error) {
		if n, ok := treeSizes[t]; ok {
			return n, nil
		}
		if depth >= objects.MaxTreeDepth {
			return 0, tooDeep(t)
		}
		data, err := r.Blocks.Get(ctx, t)
		if err != nil {
			return 0, err
		}
		n := int64(len(data))
		subs, vals, err := objects.NodeLinks(data)
		if err != nil {
			return 0, err
		}
		for _, s := range subs {
			m, err := treeSize(s, depth+1)
			if err != nil {
				return 0, err
			}
			n += m
		}
		for _, v := range vals {
			m, ok := valueSizes[v]
			if !ok {
				if m, _, err = valueSize(v, 0); err != nil {
					return 0, err
				}
			}
			n += m
		}
		treeSizes[t] = n
		return n, nil
	}
	// Oldest first: what each commit added that no older one had.
	seen := map[objects.CID]bool{}
	var added func(t objects.CID, depth int) (int64, error)
	added = func(t objects.CID, depth int) (int64, error) {
		if seen[t] {
			return 0, nil // a node seen is a whole subtree seen
		}
		if depth >= objects.MaxTreeDepth {
			return 0, tooDeep(t)
		}
		seen[t] = true
		data, err := r.Blocks.Get(ctx, t)
		if err != nil {
			return 0, err
		}
		n := int64(len(data))
		subs, vals, err := objects.NodeLinks(data)
		if err != nil {
			return 0, err
		}
		for _, s := range subs {
			m, err := added(s, depth+1)
			if err != nil {
				return 0, err
			}
			n += m
		}
		for _, v := range vals {
			if seen[v] {
				continue
			}
			_, blocks, err := valueSize(v, 0)
			if err != nil {
				return 0, err
			}
			for _, b := range blocks {
				if !seen[b] {
					seen[b] = true
					n += sizes[b]
				}
			}
		}
		return n, nil
	}
	keys := map[string]*KeyUsage{}
	keyVals := map[string]map[objects.CID]bool{}
	for i := len(history) - 1; i >= 0; i-- {
		le := history[i]
		cs, err := size(le.CID)
		if err != nil {
			return u, err
		}
		a, err := added(le.Commit.Tree, 0)
		if err != nil {
			return u, err
		}
		if !seen[le.CID] {
			seen[le.CID] = true
			a += cs
		}
		total, err := treeSize(le.Commit.Tree, 0)
		if err != nil {
			return u, err
		}
		total += cs
		u.Commits = append(u.Commits, CommitUsage{CID: le.CID, Time: le.Commit.Time, Message: le.Commit.Message, Size: total, Added: a, Shared: total - a})
		from := objects.EmptyTreeCID
		if len(le.Commit.Parents) > 0 && len(le.Cut) == 0 {
			pc, err := r.Commit(ctx, le.Commit.Parents[0])
			if err != nil {
				return u, err
			}
			from = pc.Tree
		}
		for ch, err := range objects.DiffTrees(ctx, r.Blocks, from, le.Commit.Tree) {
			if err != nil {
				return u, err
			}
			if ch.New.IsZero() {
				continue
			}
			ku := keys[ch.Path]
			if ku == nil {
				ku = &KeyUsage{Key: ch.Path}
				keys[ch.Path] = ku
				keyVals[ch.Path] = map[objects.CID]bool{}
			}
			if !keyVals[ch.Path][ch.New] {
				keyVals[ch.Path][ch.New] = true
				n, ok := valueSizes[ch.New]
				if !ok {
					if n, _, err = valueSize(ch.New, 0); err != nil {
						return u, err
					}
				}
				ku.Versions++
				ku.Bytes += n
			}
		}
	}
	slices.Reverse(u.Commits)
	headTree, err := r.Tree(ctx, h.Commit)
	if err != nil {
		return u, err
	}
	for k, ku := range keys {
		if v, ok, err := headTree.Get(ctx, k); err != nil {
			return u, err
		} else if ok {
			ku.Current = valueSizes[v]
			if _, known := valueSizes[v]; !known {
				if ku.Current, _, err = valueSize(v, 0); err != nil {
					return u, err
				}
			}
		}
		u.Keys = append(u.Keys, *ku)
	}
	slices.SortFunc(u.Keys, func(a, b KeyUsage) int {
		if a.Bytes != b.Bytes {
			if a.Bytes > b.Bytes {
				return -1
			}
			return 1
		}
		return compareStrings(a.Key, b.Key)
	})
	return u, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
