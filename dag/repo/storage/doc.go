// Package storage is the home of a repository's storage implementations
// (repo.Storage: blocks, HEAD records and operation logs, receipt tapes,
// metadata records), side by side:
//
//   - badger: the on-disk store repo.Open and repo.Init use, and the only
//     code that knows the key layout (docs/format.md §7);
//   - memory: the same records in maps, for tests and embedders;
//   - the served store's client lives beside its server in dag/repo/remote,
//     whose wire code the two share.
//
// storagetest holds the conformance suites (RefStore, Tape, Meta; a block
// store's is objects/blockstoretest), and this package's test,
// conformance_test.go, is the one place that runs every implementation
// through every suite. The package itself holds no code.
package storage
