package sqlitedb

import (
	"context"

	"github.com/agentstate/agentstate/objects"
)

// HeldOrFetching reports whether page n's chunk is held by p (or by the
// store's cache of decoded blocks) or being fetched, so that a read of it
// reaches the store no more.
func HeldOrFetching(ctx context.Context, p *Pages, n int64) bool {
	c, err := p.PageCID(ctx, n)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.cache[c]; ok {
		return true
	}
	if _, ok := p.pending[c]; ok {
		return true
	}
	if p.shared != nil {
		if v, ok := p.shared.Decoded(c); ok {
			_, ok = v.(page)
			return ok
		}
	}
	return false
}

// Queued lists the chunks of the fetches no worker has taken yet, in the
// order the workers will take them.
func Queued(p *Pages) []objects.CID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []objects.CID
	for _, f := range p.queue {
		out = append(out, f.c)
	}
	return out
}
