package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/runtime/cliexec"
)

// readRecorder is a repository's block store that notes every block read
// through it, passing on the abilities the readers look for (batched reads,
// the shared decoded-block cache).
type readRecorder struct {
	objects.BlockStore
	mu    sync.Mutex
	read  map[objects.CID]bool
	order []objects.CID // read, each once, in the order of its first read
}

func (r *readRecorder) note(c objects.CID) {
	r.mu.Lock()
	if !r.read[c] {
		r.read[c] = true
		r.order = append(r.order, c)
	}
	r.mu.Unlock()
}

func (r *readRecorder) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	r.note(c)
	return r.BlockStore.Get(ctx, c)
}

func (r *readRecorder) GetBatch(ctx context.Context, cids []objects.CID, fn func(int, []byte, error)) error {
	for _, c := range cids {
		r.note(c)
	}
	if br, ok := r.BlockStore.(objects.BlockBatchReader); ok {
		return br.GetBatch(ctx, cids, fn)
	}
	for i, c := range cids {
		data, err := r.BlockStore.Get(ctx, c)
		fn(i, data, err)
	}
	return nil
}

// ListSizes passes the store's list size records on: they are not blocks,
// and the diff that reads them does not read the nodes they describe.
func (r *readRecorder) ListSizes(ctx context.Context, cids []objects.CID, fn func(int, uint64)) error {
	if l, ok := r.BlockStore.(objects.ListSizeReader); ok {
		return l.ListSizes(ctx, cids, fn)
	}
	return nil
}

func (r *readRecorder) Decoded(c objects.CID) (any, bool) {
	if d, ok := r.BlockStore.(interface{ Decoded(objects.CID) (any, bool) }); ok {
		return d.Decoded(c)
	}
	return nil, false
}

func (r *readRecorder) KeepDecoded(c objects.CID, v any, size int64) {
	if d, ok := r.BlockStore.(interface{ KeepDecoded(objects.CID, any, int64) }); ok {
		d.KeepDecoded(c, v, size)
	}
}

// blocksRead runs one command line in this process on a fresh read-only
// open of store, as a server runs it, and returns the blocks it read (each
// once, in the order of its first read).
func blocksRead(ctx context.Context, store, dir string, args ...string) ([]objects.CID, error) {
	rp, err := repo.Open(store, repo.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	rec := &readRecorder{BlockStore: rp.Blocks, read: map[objects.CID]bool{}}
	rp.Blocks = rec
	var errb bytes.Buffer
	code := cliexec.Exec(ctx, rp, remote.ExecRequest{Args: append([]string{"agentstate"}, args...), Dir: dir}, bytes.NewReader(nil), io.Discard, &errb)
	rp.Close()
	if code != 0 {
		return nil, fmt.Errorf("in-process %s: exit %d: %s", strings.Join(args, " "), code, tail(errb.String()))
	}
	return rec.order, nil
}

// diffStatFloor measures the floor of an unserved 'diff --stat' (17bf): a
// store opened read-only in this process, the blocks the command reads
// (recorded while it runs in-process on a fresh open) read again on a
// fresh open, on every core, with nothing decoded; plus the engine's start
// (the version command of the engine the front end starts: it builds one
// command, as a command line naming one does), measured alternately in the
// same run. It returns the floor, its parts and the number of blocks.
func diffStatFloor(ctx context.Context, cfg *config, base, store string, reps int) (floor, start, open, reads time.Duration, blocks int, err error) {
	cids, err := blocksRead(ctx, store, base, "diff", "--stat", "HEAD~1", "HEAD")
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	readAll := func(int) (time.Duration, error) {
		t0 := time.Now()
		rp, err := repo.Open(store, repo.Options{ReadOnly: true})
		if err != nil {
			return 0, err
		}
		defer rp.Close()
		tOpen := time.Since(t0)
		workers := runtime.GOMAXPROCS(0)
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(cids); i += workers {
					if _, err := rp.Blocks.Get(ctx, cids[i]); err != nil {
						errs[w] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return 0, err
			}
		}
		open = tOpen
		return time.Since(t0), nil
	}
	r, err := newRunner(cfg)
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	engine := engineBin(cfg)
	version := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, base, nil, engine, "version")
		return d, err
	}
	all, st, err := pairN(reps, readAll, version)
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	return all + st, st, open, all - open, len(cids), nil
}
