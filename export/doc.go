// Package export projects commits out of the store and brings brains in:
// scanning a brain directory into values and a tree, checking a tree out into
// a directory, and (in sub-packages) the deterministic tar, the CAR file and
// the snapshot envelope.
//
// The nouns:
//
//   - Brain directory: a directory of regular files whose relative paths are
//     keys (objects.ValidateKey). Symlinks, devices, sockets and FIFOs are not
//     brain state: they are skipped and reported, never followed.
//   - Skipped: a path left out of a scan, with the reason.
//   - Checkout: making a directory hold exactly a tree's files.
package export
