// Package tarball projects a brain (a list of files) into a deterministic tar
// archive and imports a tar archive back into a list of files.
//
// The nouns:
//
//   - Key (or path): a brain path as objects.ValidateKey defines it:
//     '/'-separated, valid UTF-8, no leading or trailing '/', no empty, "." or
//     ".." segments, no control characters, at most 4095 bytes with segments
//     of at most 255, not under .agentstate/ or a derived file name. A
//     backslash is an ordinary character, as it is on Linux.
//   - File: one brain file handed to Write: its key, its size and a way to open
//     its content. Files come in strictly increasing bytewise key order.
//   - Entry: one member of a tar archive: a regular file, a directory, or
//     something else (symlink, hard link, device, FIFO, ...). PAX extended
//     headers and GNU long-name records are not entries; they belong to the
//     entry that follows them.
//   - Projection: the exact tar Write produces. Its bytes depend only on the
//     list of (key, content) pairs: entries in bytewise name order, every parent
//     directory emitted once before its contents, mode 0644/0755, mtime 0,
//     uid/gid 0, no user or group names, USTAR headers where the name fits and a
//     PAX "path" record where it does not. docs/tar.md is the normative
//     description, with a golden vector.
//
// Write produces the projection; Read is the tolerant-but-safe inverse: it
// accepts any well-formed tar (GNU, PAX, USTAR, V7), passes regular files on,
// ignores directories, and refuses (or, if asked, skips and reports) every
// entry that is not a regular file or whose name would land outside the brain.
package tarball
