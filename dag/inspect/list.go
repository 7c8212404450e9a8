package inspect

import "context"

// ListOptions select a listing.
type ListOptions struct {
	Rev    string // the revision; "" is HEAD
	Prefix string // only keys starting with this
	Limit  int    // at most this many keys; <= 0 is all
	// NoSizes leaves every Entry's Size 0: a listing of names alone reads
	// the tree's nodes and no value (a small value's size is its block).
	NoSizes bool
}

// ListWith returns the keys o selects, in key order; more says there were
// more than o.Limit.
func (v *View) ListWith(ctx context.Context, agent string, o ListOptions) (entries []Entry, more bool, err error) {
	return v.list(ctx, agent, o)
}
