// Package storetest is the conformance suite every walrus.Store
// implementation runs (like restic's backend tests): round trips of empty,
// small and large blobs through seekable, streaming and unknown-size
// readers; idempotent puts that report AlreadyCertified; distinct ids for
// distinct content; concurrent puts; ErrNotFound for unknown ids;
// ErrBadBlobID for malformed ones; ErrSizeMismatch; ErrInvalidOptions;
// monotonic progress; and context cancellation before and during a read.
//
// A store's tests call Run with a Suite whose New returns a fresh store and
// whose LargeSize exceeds the store's part size, if it has one.
package storetest
