package objects

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Key limits, in bytes. A key becomes a path under the brain directory on
// checkout, so it must fit every common file system: NAME_MAX is 255 bytes
// per name on ext4, XFS, Btrfs, APFS, NTFS (in UTF-16 units, which 255 UTF-8
// bytes never exceed) and the rest, and PATH_MAX is 4096 bytes with its
// terminating NUL on Linux.
const (
	MaxKeyLen     = 4095 // PATH_MAX - 1
	MaxSegmentLen = 255  // NAME_MAX
)

// StoreDirName is the store directory 'agentstate init' creates inside a
// brain directory. A key's first segment may not be it: such a key would be
// written into the store on checkout.
const StoreDirName = ".agentstate"

// ValidateKey checks that key is a brain path. It is the one definition of a
// valid key in agentstate; every path that takes a key from outside (put,
// rm, directory and tar imports, restore, the runtime) goes through it. A
// key is:
//
//   - '/'-separated, with no leading or trailing '/' and no empty, "." or
//     ".." segment, so it stays inside the brain directory;
//   - valid UTF-8 without control characters (C0 U+0000–U+001F, DEL U+007F,
//     C1 U+0080–U+009F), line or paragraph separators (U+2028, U+2029) or
//     bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E,
//     U+2066–U+2069), so it prints as itself and cannot forge terminal
//     output, lines, or the order of what a listing shows;
//   - at most MaxKeyLen bytes, each segment at most MaxSegmentLen;
//   - not under StoreDirName (".agentstate", in any letter case), which is
//     where the store lives when it sits inside the brain directory;
//   - not under a derived file name (bundle.lock.json/..., receipts.ndjson/...):
//     snapshots carry those top-level names as files, so a directory of that
//     name could never be exported. The names themselves are valid keys;
//     trees refuse to store them (Tree.Put) because they are derived.
//
// The error is a *KeyError (matching ErrBadKey) that says which rule failed;
// it prints the key quoted, so it is safe on a terminal.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return &KeyError{key, "empty key"}
	case len(key) > MaxKeyLen:
		return &KeyError{key[:64] + "...", fmt.Sprintf("%d bytes, longer than %d bytes (PATH_MAX-1)", len(key), MaxKeyLen)}
	case !utf8.ValidString(key):
		return &KeyError{key, fmt.Sprintf("not valid UTF-8 (byte %d)", invalidUTF8At(key))}
	}
	for i, r := range key {
		if isControl(r) {
			what := fmt.Sprintf("0x%02x", r)
			if r >= 0x80 {
				what = fmt.Sprintf("U+%04X", r)
			}
			return &KeyError{key, fmt.Sprintf("control character %s at byte %d; keys may not hold control characters", what, i)}
		}
		if isBidiOrSeparator(r) {
			return &KeyError{key, fmt.Sprintf("U+%04X at byte %d: keys may not hold line separators or bidirectional controls, which change how a listing reads", r, i)}
		}
	}
	switch {
	case key[0] == '/':
		return &KeyError{key, "absolute path (leading '/'); keys are relative brain paths such as skills/a.md"}
	case key[len(key)-1] == '/':
		return &KeyError{key, "trailing '/'; a key names a file, not a directory"}
	}
	first := true
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return &KeyError{key, "empty path segment ('//')"}
		case seg == "." || seg == "..":
			return &KeyError{key, "'" + seg + "' path segment"}
		case len(seg) > MaxSegmentLen:
			return &KeyError{key, fmt.Sprintf("path segment of %d bytes; at most %d (NAME_MAX)", len(seg), MaxSegmentLen)}
		}
		if first {
			if strings.EqualFold(seg, StoreDirName) {
				return &KeyError{key, "'" + StoreDirName + "' is reserved for the agentstate store, which may live inside the brain directory"}
			}
			if IsDerived(seg) && seg != key {
				return &KeyError{key, seg + " is a derived file (generated on export), so it cannot be a directory"}
			}
		}
		first = false
	}
	return nil
}

// isControl reports a C0 control, DEL or a C1 control.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// isBidiOrSeparator reports the characters that reorder or break displayed
// text: line and paragraph separators and the bidirectional controls.
func isBidiOrSeparator(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// invalidUTF8At returns the offset of the first byte that is not part of a
// valid UTF-8 sequence.
func invalidUTF8At(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return len(s)
}
