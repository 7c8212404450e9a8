package inspect

import (
	"context"
	"sync"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
)

// A working directory compared with a commit (git's diff against the work
// tree): the directory is read as a commit of it would read it
// (export.ImportDir: the same keys, chunks and skips, files the stat cache
// trusts not read again), into memory beside the store, so nothing is
// written to the store and no stat cache is changed.

// DirDiff is what a directory changes against a commit: Changes go from
// the commit to the directory, as Diff's go from one revision to another.
type DirDiff struct {
	Commit  objects.CID      `json:"commit"`
	Dir     string           `json:"dir"`
	Files   int              `json:"files"` // regular files in the directory
	Read    int              `json:"read"`  // files read and hashed; the others came from the stat cache
	Skipped []export.Skipped `json:"skipped"`
	Changes []Change         `json:"changes"`
}

// DiffDir compares dir with rev ("" is HEAD) of agent. It returns, beside
// the diff, a view that also reads the directory's values (for DiffRows
// and DiffSQL of its changes); the store itself is not written.
func (v *View) DiffDir(ctx context.Context, agent, rev, dir string, patch bool) (DirDiff, *View, error) {
	id, cm, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return DirDiff{}, nil, err
	}
	ov := &overlayStore{base: v.R.Blocks, mem: map[objects.CID][]byte{}}
	res, err := export.ImportDir(ctx, ov, dir, export.ImportOptions{Cache: readOnlyMeta{v.R.StatCache()}})
	if err != nil {
		return DirDiff{}, nil, err
	}
	r := *v.R
	r.Blocks = ov
	dv := &View{R: &r}
	changes, err := dv.diffTrees(ctx, cm.Tree, res.Tree, patch)
	if err != nil {
		return DirDiff{}, nil, err
	}
	skipped := res.Skipped
	if skipped == nil {
		skipped = []export.Skipped{}
	}
	return DirDiff{Commit: id, Dir: dir, Files: res.Files, Read: res.Read, Skipped: skipped, Changes: changes}, dv, nil
}

// overlayStore reads base and what was put into it; it writes only to
// memory (and not what base holds already).
type overlayStore struct {
	base objects.BlockStore
	mu   sync.Mutex
	mem  map[objects.CID][]byte
}

func (o *overlayStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	o.mu.Lock()
	b, ok := o.mem[c]
	o.mu.Unlock()
	if ok {
		return b, nil
	}
	return o.base.Get(ctx, c)
}

func (o *overlayStore) Has(ctx context.Context, c objects.CID) (bool, error) {
	o.mu.Lock()
	_, ok := o.mem[c]
	o.mu.Unlock()
	if ok {
		return true, nil
	}
	return o.base.Has(ctx, c)
}

func (o *overlayStore) Put(ctx context.Context, blocks ...objects.Block) error {
	for _, b := range blocks {
		if ok, err := o.base.Has(ctx, b.CID); err != nil {
			return err
		} else if ok {
			continue
		}
		o.mu.Lock()
		o.mem[b.CID] = append([]byte(nil), b.Data...)
		o.mu.Unlock()
	}
	return nil
}

// readOnlyMeta reads a stat cache and records nothing: a comparison
// leaves the cache as the last commit or checkout of the directory left it.
type readOnlyMeta struct{ m export.MetaStore }

func (r readOnlyMeta) GetMeta(name string) ([]byte, bool, error) { return r.m.GetMeta(name) }
func (readOnlyMeta) SetMeta(string, []byte) error                { return nil }
