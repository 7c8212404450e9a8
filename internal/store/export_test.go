package store

// CompactL0At is compactL0At, for the tests.
const CompactL0At = compactL0At
