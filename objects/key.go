package objects

import (
	"strings"
	"unicode/utf8"
)

// MaxKeyLen bounds a key's length in bytes.
const MaxKeyLen = 4096

// ValidateKey checks that key is a brain path: '/'-separated, valid UTF-8,
// no leading or trailing '/', no empty, "." or ".." segments, no NUL, at most
// MaxKeyLen bytes. It is the one definition of a valid key in agentstate.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return &KeyError{key, "empty key"}
	case len(key) > MaxKeyLen:
		return &KeyError{key[:64] + "...", "longer than 4096 bytes"}
	case !utf8.ValidString(key):
		return &KeyError{key, "not valid UTF-8"}
	case strings.IndexByte(key, 0) >= 0:
		return &KeyError{key, "contains a NUL byte"}
	case key[0] == '/':
		return &KeyError{key, "absolute path (leading '/'); keys are relative brain paths such as skills/a.md"}
	case key[len(key)-1] == '/':
		return &KeyError{key, "trailing '/'; a key names a file, not a directory"}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return &KeyError{key, "empty path segment ('//')"}
		case ".", "..":
			return &KeyError{key, "'" + seg + "' path segment"}
		}
	}
	return nil
}
