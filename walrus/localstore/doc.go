// Package localstore is the embedded default walrus.Store: a content-addressed
// blob directory that works offline.
//
// The nouns:
//
//   - The store directory holds one file per blob, named by the blob's
//     digest, sha256 of its content, in lowercase hex, under a shard directory
//     named by the first two hex digits:
//
//     <dir>/<hex[0:2]>/<hex>      a blob, read-only once written
//     <dir>/tmp/put-*             a Put in progress (or one a crash cut short)
//
//     File names are hex rather than the printed id because base64 is
//     case-sensitive and some file systems are not.
//
//   - A blob id is the URL-safe base64 (no padding) of the same digest. It has
//     the shape of a Walrus blob id (43 characters, 32 bytes) but it is NOT a
//     Walrus blob id: Walrus ids depend on the erasure encoding and cannot be
//     computed locally. An id from this store means nothing to Walrus and the
//     other way round.
//
// Put writes to a temporary file, fsyncs it, renames it into place and fsyncs
// the directory, so a crash leaves either the whole blob or nothing under its
// name. Putting content that is already present reports AlreadyCertified and
// replaces the file all the same, repairing one damaged since it was written. Get re-hashes what it reads and reports a *walrus.CorruptError instead
// of io.EOF when the file no longer matches its name. Blobs never expire:
// Stored.EndEpoch is 0, and Epochs, Permanent and SendObjectTo are validated
// and otherwise ignored.
package localstore
