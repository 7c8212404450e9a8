// Package walrus defines the blob transport that agentstate ships encrypted
// snapshots through, and the types shared by its implementations.
//
// The nouns:
//
//   - A blob is an opaque byte string stored once and read back whole. The
//     transport never looks inside it; agentstate only ever stores its own
//     encrypted snapshot envelopes.
//   - A BlobID names a stored blob. For Walrus it is the 32-byte blob id the
//     publisher returns, printed as 43 characters of URL-safe base64 without
//     padding. Walrus blob ids depend on the erasure encoding and cannot be
//     computed locally; other implementations (the local directory store) use
//     the same shape for ids of their own.
//   - A Store is anything that can Put a blob and Get it back by id:
//     walrus/httpstore talks to a Walrus publisher and aggregator over HTTP,
//     walrus/localstore keeps blobs in a content-addressed directory so that
//     everything works offline.
//   - An epoch is Walrus's unit of storage time (two weeks on Mainnet, one day
//     on Testnet). A blob is stored for a number of epochs ahead of the current
//     one (at most MaxEpochsAhead) and expires at its end epoch (exclusive);
//     after that reads answer ErrNotFound and the blob must be uploaded again.
//     Stored.EndEpoch records it so callers can warn before it passes.
//
// Errors: every implementation reports a missing or expired blob as
// ErrNotFound, a malformed id as ErrBadBlobID, a blob over the service's size
// limit as ErrTooLarge, a service that stayed unavailable through all retries
// as ErrUnavailable, and bytes that fail verification as ErrCorrupt, so callers
// test with errors.Is without knowing the backend. *APIError carries the
// details of an error answered by a Walrus service.
package walrus
