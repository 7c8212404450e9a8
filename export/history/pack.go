package history

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/walrus"
)

// Pack is one pack blob: a CAR, encrypted, whose root is Head.
type Pack struct {
	Blob   walrus.BlobID `json:"blob"`
	SHA256 string        `json:"sha256"` // hex sha256 of the blob's bytes
	Size   int64         `json:"size"`   // the blob's bytes
	Head   objects.CID   `json:"head"`   // the CAR's root
	Blocks int           `json:"blocks"` // blocks in the CAR
	// Cuts are the parent links of this pack's commits that a forget cut
	// in the pushing store: the parents are in no pack, and a reader
	// records the links as cut instead of requiring the parents.
	Cuts []repo.CutLink `json:"cuts,omitempty"`
	// Receipts, when set, is a blob of the receipt lines new with this
	// pack (NDJSON, sealed as the packs are).
	Receipts *ReceiptBlob `json:"receipts,omitempty"`
}

// packBase is what the packs before a new one carry, found without walking
// the whole history's trees: the commits their heads reach (the commit
// graph only), where the new pack's walk stops, and the blocks of the
// heads' own trees, which it leaves out. (A block of an older tree that
// comes back is sent again: a reader stores it once.)
type packBase struct {
	commits map[objects.CID]bool
	blocks  dag.Reach
}

func (b *packBase) clone() *packBase {
	return &packBase{commits: maps.Clone(b.commits), blocks: maps.Clone(b.blocks)}
}

// extendBase adds the packs with these heads to b: the commits they reach,
// following the parent links the agent's history keeps (lo: not across its
// cuts, and not to a missing parent behind any checkpoint), and the blocks
// of their trees.
func (s *Shipper) extendBase(ctx context.Context, b *packBase, heads []objects.CID, lo dag.LogOptions) error {
	if len(heads) == 0 {
		return nil
	}
	stack := slices.Clone(heads)
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if b.commits[c] {
			continue
		}
		b.commits[c] = true
		cm, err := s.Repo.Commit(ctx, c)
		if err != nil {
			return err
		}
		for _, p := range cm.Parents {
			if lo.Cut != nil && lo.Cut(c, p) {
				continue
			}
			if lo.Gone != nil && lo.Gone(c, p) {
				if ok, err := s.Repo.Blocks.Has(ctx, p); err != nil {
					return err
				} else if !ok {
					continue
				}
			}
			stack = append(stack, p)
		}
	}
	all := func(objects.CID, objects.CID) bool { return true } // the heads and their trees
	trees, _, err := dag.Walk(ctx, s.Repo.Blocks, heads, dag.WalkOptions{Cut: all})
	if err != nil {
		return err
	}
	maps.Copy(b.blocks, trees)
	return nil
}

// writePack writes to w the pack ending at head that follows the packs of
// b: the CAR of what head reaches and b does not carry, with the parent
// links lo cuts named in the pack.
func (s *Shipper) writePack(ctx context.Context, w io.Writer, head objects.CID, b *packBase, lo dag.LogOptions) (Pack, snapshot.CARStats, error) {
	pack := Pack{Head: head}
	cut := func(child, parent objects.CID) bool {
		if lo.Cut != nil && lo.Cut(child, parent) {
			pack.Cuts = append(pack.Cuts, repo.CutLink{Commit: child, Parents: []objects.CID{parent}})
			return true
		}
		return b.commits[parent]
	}
	// Redacted blocks are left out; the agent's records go in every pack,
	// so a reader takes the pack's holes as intended (docs/format.md §10).
	absent, err := s.Repo.JudgeRedactions(ctx, nil)
	if err != nil {
		return pack, snapshot.CARStats{}, err
	}
	lines, err := s.Repo.RedactionLines(ctx, "")
	if err != nil {
		return pack, snapshot.CARStats{}, err
	}
	st, err := snapshot.WriteCARWith(ctx, w, s.Repo.Blocks, head, snapshot.CARWriteOptions{Cut: cut, Absent: absent, Redactions: lines,
		Skip: func(c objects.CID) bool { _, ok := b.blocks[c]; return ok }})
	pack.Blocks = st.Blocks
	return pack, st, err
}

// sizeText is n bytes in MiB, or KiB below one MiB.
func sizeText(n int64) string {
	if n < 1<<20 {
		return strconv.FormatInt((n+1023)>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n>>20, 10) + " MiB"
}

// splitPacks returns the heads of the packs that carry head's history past
// b when one pack would hold more than max bytes: commits of head's
// first-parent line, oldest first, each pack ending at the newest commit
// whose pack still fits (a pack grows along the line, so a binary search
// finds it; sizes are counted, not held). A commit that alone adds more
// than max is refused, and nothing is uploaded.
func (s *Shipper) splitPacks(ctx context.Context, head objects.CID, b *packBase, lo dag.LogOptions, max int64) ([]objects.CID, error) {
	var line []objects.CID // newest first, back to the packs before
	for c := head; ; {
		line = append(line, c)
		cm, err := s.Repo.Commit(ctx, c)
		if err != nil {
			return nil, err
		}
		if len(cm.Parents) == 0 {
			break
		}
		p := cm.Parents[0]
		if b.commits[p] || lo.Cut != nil && lo.Cut(c, p) {
			break
		}
		if lo.Gone != nil && lo.Gone(c, p) {
			if ok, err := s.Repo.Blocks.Has(ctx, p); err != nil {
				return nil, err
			} else if !ok {
				break
			}
		}
		c = p
	}
	slices.Reverse(line)
	b = b.clone()
	var plan []objects.CID
	for from := 0; from < len(line); {
		size := func(i int) (int64, error) {
			_, st, err := s.writePack(ctx, io.Discard, line[i], b, lo)
			return st.Staged(), err
		}
		best := -1
		for l, h := from, len(line)-1; l <= h; {
			mid := l + (h-l)/2
			n, err := size(mid)
			if err != nil {
				return nil, err
			}
			if n <= max {
				best, l = mid, mid+1
			} else {
				h = mid - 1
			}
		}
		if best < 0 {
			n, err := size(from)
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: commit %s alone adds %s, more than a reader takes in one pack (%s); nothing was uploaded", ErrPackTooLarge, line[from].Short(), sizeText(n), sizeText(max))
		}
		plan = append(plan, line[best])
		if err := s.extendBase(ctx, b, []objects.CID{line[best]}, lo); err != nil {
			return nil, err
		}
		from = best + 1
	}
	return plan, nil
}
